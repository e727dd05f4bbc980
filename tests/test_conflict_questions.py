"""A claim conflict is one question per key, answered by the person; lint never picks a side."""

from __future__ import annotations

import json
import re

from wikiwright.core.config import Config
from wikiwright.core.vault import Vault
from wikiwright.upkeep.lint import run_lint
from wikiwright.wiki.catalog import Catalog
from wikiwright.wiki.pages import parse_claims, parse_page

from tests.helpers import cli, git, rebuild_index, review_queue
from tests.lint_fixture import page

KEY = "payload.max-size"
INCIDENT = f"- `{KEY}`: 8 MB (as of 2026-01-12, [[src-inc-77]])"
BLOG = f"- `{KEY}`: 25 MB (as of 2026-03-02, [[src-blog-draft]])"


def _wiki(vault: Vault, incident_pages: int = 6, blog_pages: int = 3) -> None:
    """8 MB from an incident review on six pages, 25 MB from a newer blog draft on three."""
    for stem, title in (("src-inc-77", "Incident 77 review"), ("src-blog-draft", "Blog draft")):
        (vault.sources_dir / f"{stem}.md").write_text(page(f"type: source\ntitle: {title}", f"# {title}\n"))
    names = [f"service-{n}" for n in range(incident_pages + blog_pages)]
    for n, name in enumerate(names):
        claim = INCIDENT if n < incident_pages else BLOG
        links = " ".join(f"[[{other}]]" for other in names if other != name)
        (vault.wiki / f"{name}.md").write_text(page(f"type: entity\ntitle: Service {n}",
                                                    f"# Service {n}\n\nSee {links}.\n\n## Claims\n{claim}\n"))
    (vault.wiki / "overview.md").write_text(page("type: overview\ntitle: Overview",
                                                 "# Overview\n\n" + " ".join(f"[[{n}]]" for n in names) + "\n"))
    catalog = Catalog(vault)
    try:
        catalog.refresh()
        rebuild_index(vault, catalog)
    finally:
        catalog.close()
    git(vault.root, "add", "-A")
    git(vault.root, "commit", "-q", "-m", "hand-built wiki")


def _lint_review(vault: Vault) -> dict[str, object]:
    out = cli("lint", "--json", "--review", "--vault", str(vault.root))
    assert out.returncode == 1, out.stderr
    return json.loads(out.stdout)


def _propose(vault: Vault, config: Config) -> None:
    """lint → REVIEW.md in this process (the CLI path is the first test's)."""
    queue = review_queue(config, vault)
    try:
        queue.run_lint_and_sync()
    finally:
        queue.close()


def _clean(vault: Vault, config: Config) -> bool:
    catalog = Catalog(vault)
    try:
        return not [f for f in run_lint(vault, config.lint, catalog).findings if f.kind == "claim-conflict"]
    finally:
        catalog.close()


def _tick_option(vault: Vault, option: str) -> None:
    text = vault.review_file.read_text()
    text = re.sub(rf"^(\s*- )\[ \](.*\^claim-conflict-[0-9a-f]{{10}}-{option})$", r"\1[x]\2", text, flags=re.M)
    vault.review_file.write_text(text)


def _claims(vault: Vault, name: str) -> list[tuple[str, str, str, str]]:
    claims, _ = parse_claims(parse_page((vault.wiki / f"{name}.md").read_text()).body)
    return [(c.key, c.value, c.status, c.by) for c in claims]


def test_nine_pages_two_values_make_one_question_listing_every_value(vault: Vault) -> None:
    _wiki(vault)
    data = _lint_review(vault)
    findings = [f for f in data["findings"] if f["kind"] == "claim-conflict"]  # type: ignore[union-attr,index]
    assert len(findings) == 1, [f["message"] for f in findings]  # was 18 pairwise findings
    [finding] = findings
    assert "8 MB" in finding["message"] and "25 MB" in finding["message"]
    text = vault.review_file.read_text()
    # The question, one box per value (with each page, source and date), and "both, scoped".
    assert re.search(r"^- \[ \] `payload.max-size` has 2 current values .* \^claim-conflict-[0-9a-f]{10}$", text, re.M)
    v1 = re.search(r"^    - \[ \] 8 MB — (.*) \^claim-conflict-[0-9a-f]{10}-v1$", text, re.M)
    v2 = re.search(r"^    - \[ \] 25 MB — (.*) \^claim-conflict-[0-9a-f]{10}-v2$", text, re.M)
    assert v1 and v2 and re.search(r"^    - \[ \] both stand.*-both$", text, re.M)
    assert v1.group(1).count("[[src-inc-77]], as of 2026-01-12") == 6
    assert v2.group(1).count("[[src-blog-draft]], as of 2026-03-02") == 3
    # Nothing is proposed as the answer, least of all the newer value.
    assert "disputed by" not in finding["message"] and "fix:" not in finding["message"]


def test_the_older_value_stands_when_the_person_says_so(vault: Vault, config: Config) -> None:
    _wiki(vault, incident_pages=1, blog_pages=1)
    _propose(vault, config)
    _tick_option(vault, "v1")  # 8 MB, the incident's (older) value
    queue = review_queue(config, vault)
    try:
        [outcome] = queue.process()
    finally:
        queue.close()
    assert outcome.state == "applied", outcome
    assert _claims(vault, "service-0") == [(KEY, "8 MB", "current", "")]
    assert _claims(vault, "service-1") == [(KEY, "25 MB", "disputed", "src-inc-77")]
    body = git(vault.root, "log", "-1", "--format=%B")
    assert "Wikiwright-Operation: lint-fix" in body and "wiki/service-1.md" in body
    assert "`payload.max-size` = 8 MB stands" in vault.review_file.read_text()
    assert _clean(vault, config)


def test_both_values_stand_scoped_to_their_sources(vault: Vault, config: Config) -> None:
    _wiki(vault, incident_pages=1, blog_pages=1)
    _propose(vault, config)
    _tick_option(vault, "both")
    queue = review_queue(config, vault)
    try:
        [outcome] = queue.process()
    finally:
        queue.close()
    assert outcome.state == "applied", outcome
    assert _claims(vault, "service-0") == [(f"{KEY}@src-inc-77", "8 MB", "current", "")]
    assert _claims(vault, "service-1") == [(f"{KEY}@src-blog-draft", "25 MB", "current", "")]
    assert _clean(vault, config)
    assert git(vault.root, "status", "--porcelain", "--", "wiki", "REVIEW.md").strip() == ""


def test_ticking_the_question_alone_changes_no_page(vault: Vault, config: Config) -> None:
    _wiki(vault, incident_pages=1, blog_pages=1)
    _propose(vault, config)
    before = {p.name: p.read_text() for p in vault.wiki.glob("service-*.md")}
    text = vault.review_file.read_text()
    vault.review_file.write_text(re.sub(r"^- \[ \](.*\^claim-conflict-[0-9a-f]{10})$", r"- [x]\1", text, flags=re.M))
    queue = review_queue(config, vault)
    try:
        [outcome] = queue.process()
    finally:
        queue.close()
    assert outcome.state == "dismissed"
    assert {p.name: p.read_text() for p in vault.wiki.glob("service-*.md")} == before
