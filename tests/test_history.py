"""history, revert and retract on the five-source story (real git, real ledger, real CLI)."""

from __future__ import annotations

import json
from datetime import date

import pytest
from wikiwright.core.errors import RevertBlocked
from wikiwright.door import Door
from wikiwright.history.retract import retract_source
from wikiwright.history.revert import reverse_patch, revert_ingest
from wikiwright.history.view import operations
from wikiwright.upkeep.lint import run_lint
from wikiwright.wiki.pages import parse_claims, parse_page

from tests.conftest import Services
from tests.handmade_story import STEPS, Step, build_story
from tests.helpers import cli, git

FIFTY = "50 requests per second per client"
HUNDRED = "100 requests per second per client"
TWO_HUNDRED = "200 requests per second per client"


def _session(services: Services) -> Door:
    return services.pipeline.door


def _claims(services: Services) -> list[tuple[str, str, str, str]]:
    body = parse_page((services.vault.wiki / "billing-api.md").read_text()).body
    return [(c.key, c.value, c.source, c.status) for c in parse_claims(body)[0]]


def _current(services: Services, key: str) -> set[str]:
    return {value for k, value, _, status in _claims(services) if k == key and status == "current"}


def test_history_lists_operations_newest_first_with_filters(services: Services) -> None:
    commits = build_story(services)
    ops = operations(services.repo)
    assert [op.kind for op in ops][:5] == ["ingest"] * 5 and ops[-1].kind == "init"
    assert [op.sha for op in ops[:5]] == commits[::-1]
    assert ops[0].source == "raw/draft-faq.md" and "wiki/billing-api.md" in ops[0].pages
    only = operations(services.repo, source="inc-482")
    assert [op.sha for op in only] == [commits[2]]
    assert [op.kind for op in operations(services.repo, kind="user-edit")] == ["user-edit"]
    root = str(services.vault.root)
    out = cli("history", "src-runbook", "--json", "--vault", root)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["page"] == "wiki/sources/src-runbook.md"
    assert [op["sha"] for op in data["operations"]] == [commits[3]]
    human = cli("history", "billing-api", "--kind", "ingest", "--source", "src-design-doc", "--vault", root)
    assert human.returncode == 0 and commits[0][:10] in human.stdout and commits[1][:10] not in human.stdout
    bad = cli("history", "--kind", "bogus", "--vault", root)
    assert bad.returncode == 2 and "unknown operation kind" in bad.stderr


def test_revert_the_third_ingest_restores_the_struck_claim_and_keeps_ingests_4_and_5(services: Services) -> None:
    commits = build_story(services)
    root = services.vault.root
    result = revert_ingest(_session(services), services.ctx.terms, commits[2], today=date(2026, 5, 1))
    assert result.commit and result.warnings == []
    assert _current(services, "billing-api.rate-limit") == {HUNDRED, TWO_HUNDRED}
    assert FIFTY not in {value for _, value, _, _ in _claims(services)}  # the ingest's own claim is gone
    assert _current(services, "billing-api.timeout") == {"30 seconds"}  # ingest 4 intact
    assert _current(services, "billing-api.owner") == {"the payments team"}
    meta = parse_page((services.vault.wiki / "billing-api.md").read_text()).meta
    assert "raw/inc-482.md" not in meta["sources"] and "raw/draft-faq.md" in meta["sources"]
    assert str(meta["updated"]) == "2026-04-12"  # a later ingest's value stands
    assert not (services.vault.wiki / "sources" / "src-inc-482.md").exists()
    assert (services.vault.wiki / "sources" / "src-draft-faq.md").exists()
    message = git(root, "log", "-1", "--format=%B")
    assert "Wikiwright-Operation: revert" in message and f"Wikiwright-Reverts: {commits[2]}" in message
    # The original ingest stays in history; nothing was rewritten.
    assert git(root, "rev-list", "--count", "HEAD").strip() == str(2 + 5 + 1)
    assert git(root, "status", "--porcelain", "--", "wiki").strip() == ""
    assert "src-inc-482" not in (services.vault.wiki / "index.md").read_text()
    record = services.ledger.source(result.ingest.sha256)
    assert record is not None and record.state == "reverted"
    # A rescan (or the watcher) seeing the raw file again does not queue it.
    assert services.registrar.register(services.vault.raw / "inc-482.md") is None
    assert services.drain() == []
    # history shows the revert first, on the source too.
    assert [op.kind for op in operations(services.repo, source="raw/inc-482.md")] == ["revert", "ingest"]
    with pytest.raises(Exception, match="already reverted"):
        revert_ingest(_session(services), services.ctx.terms, "raw/inc-482.md")


def test_revert_stops_when_a_later_ingest_superseded_a_claim_it_added(services: Services) -> None:
    later = Step("raw/inc-500.md", "INC-500", date(2026, 4, 20),
                 "# INC-500\n\nThe limit is now 75 requests per second per client, replacing 50.\n",
                 (("billing-api.rate-limit", "75 requests per second per client"),), replaces=True)
    commits = build_story(services, upto=5, steps=(*STEPS[:4], later))
    head = git(services.vault.root, "rev-parse", "HEAD")
    before = (services.vault.wiki / "billing-api.md").read_text()
    with pytest.raises(RevertBlocked) as caught:
        revert_ingest(_session(services), services.ctx.terms, "raw/inc-482.md")
    message = str(caught.value)
    assert "depends on it" in message and "src-inc-500" in message and commits[4][:10] in message
    assert git(services.vault.root, "rev-parse", "HEAD") == head  # nothing committed
    assert (services.vault.wiki / "billing-api.md").read_text() == before  # nothing written
    out = cli("revert", commits[2], "--vault", str(services.vault.root))
    assert out.returncode == 1 and "revert that ingest first" in out.stderr


def test_revert_stops_when_a_person_rewrote_the_lines_it_wrote(services: Services) -> None:
    commits = build_story(services, upto=3)
    page = services.vault.wiki / "billing-api.md"
    page.write_text(page.read_text().replace(f"{FIFTY} (as of", "fifty per second (as of"))
    with pytest.raises(RevertBlocked, match="removed or rewritten"):
        revert_ingest(_session(services), services.ctx.terms, commits[2])
    assert "fifty per second" in page.read_text()


def test_revert_by_source_path_on_the_cli(services: Services) -> None:
    build_story(services, upto=4)
    services.ledger.close()
    services.catalog.close()
    root = str(services.vault.root)
    out = cli("revert", "raw/team-notes.md", "--vault", root)
    assert out.returncode == 0, out.stderr
    assert "Reverted the ingest of raw/team-notes.md" in out.stdout
    text = (services.vault.wiki / "billing-api.md").read_text()
    assert "billing-api.owner" not in text and "billing-api.timeout" in text and FIFTY in text
    again = cli("revert", "raw/team-notes.md", "--vault", root)
    assert again.returncode == 2 and "already reverted" in again.stderr


def test_reverse_patch_keeps_neighbouring_later_lines_and_refuses_changed_ones() -> None:
    before = "a\nb\nc\n"
    after = "a\nb\nX\nc\n"  # the ingest inserted X
    current = "a\nb\nX\nY\nc\n"  # a later change added Y right after it
    assert reverse_patch(before, after, current) == ("a\nb\nY\nc\n", "")
    text, why = reverse_patch(before, after, "a\nb\nX2\nc\n")
    assert text is None and "changed since" in why


def test_retracting_the_draft_faq_clears_its_conflict_and_lint_comes_back_clean(services: Services) -> None:
    build_story(services)
    findings = run_lint(services.vault, services.config.lint, services.catalog).findings
    assert [f.kind for f in findings] == ["claim-conflict"]
    result = retract_source(_session(services), "raw/draft-faq.md", reason="it was a draft",
                            today=date(2026, 5, 2))
    assert result.commit and len(result.retracted) == 1
    assert _current(services, "billing-api.rate-limit") == {FIFTY}
    assert ("billing-api.rate-limit", TWO_HUNDRED, "src-draft-faq", "retracted") in _claims(services)
    source = parse_page((services.vault.wiki / "sources" / "src-draft-faq.md").read_text())
    assert str(source.meta["retracted"]) == "2026-05-02" and "Retracted on 2026-05-02" in source.body
    assert run_lint(services.vault, services.config.lint, services.catalog).findings == []
    root = services.vault.root
    assert "Wikiwright-Operation: retract" in git(root, "log", "-1", "--format=%B")
    assert git(root, "status", "--porcelain", "--", "wiki").strip() == ""
    record = services.ledger.source(result.source.sha256)
    assert record is not None and record.state == "retracted"
    shown = cli("status", "--vault", str(root))
    assert "Reverted or retracted:\n  raw/draft-faq.md: retracted (was ingested in" in shown.stdout, shown.stdout


def test_retracting_a_source_that_replaced_a_value_makes_the_old_value_current_again(services: Services) -> None:
    build_story(services, upto=4)
    result = retract_source(_session(services), "src-inc-482")
    assert _current(services, "billing-api.rate-limit") == {HUNDRED}
    assert result.restored and not result.kept_struck
    # Prose elsewhere that cites the retracted source is flagged by lint.
    page = services.vault.wiki / "billing-api.md"
    page.write_text(page.read_text() + "\nSee the postmortem [[src-inc-482]] for the story.\n")
    kinds = [f.kind for f in run_lint(services.vault, services.config.lint, services.catalog).findings]
    assert kinds == ["retracted-citation"]
