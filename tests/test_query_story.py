"""Query and history on the model-path five-source story (tests/story.py, scripted server)."""

from __future__ import annotations

from datetime import date
from typing import Any

from wikiwright.door import Door
from wikiwright.history.retract import retract_source
from wikiwright.history.revert import revert_ingest
from wikiwright.query.query import ASK_SYSTEM, ask, save_answer, search
from wikiwright.upkeep.lint import run_lint
from wikiwright.wiki.pages import get_section, parse_claims, parse_page

from tests.conftest import Services
from tests.helpers import git, rebuild_index
from tests.llm_server import ScriptedServer
from tests.model_helpers import page, use_model
from tests.story import SOURCES, story_script

FIFTY = "50 requests per second per client"
HUNDRED = "100 requests per second per client"
TWO_HUNDRED = "200 requests per second per client"
RATE = "billing-api.rate-limit"

ASK_REPLY = {
    "answer": f"The billing API allows {FIFTY} [[billing-api]], lowered after INC-482 [[src-inc-482]]. "
              f"A draft FAQ says {TWO_HUNDRED}, but it is unreviewed.",
    "known": True,
    "citations": ["billing-api", "src-inc-482"],
    "claims": [
        {"page": "billing-api", "key": RATE, "value": FIFTY},
        {"page": "rate-limiting", "key": RATE, "value": HUNDRED},  # struck there: must be dropped
    ],
}


def script(request: dict[str, Any]) -> dict[str, Any]:
    system = str((request.get("messages") or [{}])[0].get("content") or "")
    return dict(ASK_REPLY) if system == ASK_SYSTEM else story_script(request)


def tell_story(services: Services, server: ScriptedServer) -> list[str]:
    use_model(services, server)
    commits = []
    for name, text in SOURCES:
        services.drop(name, text)
        results = services.drain()
        assert [r.state for r in results] == ["ingested"], results
        commits.append(results[0].commit)
    return commits


def session(services: Services) -> Door:
    return services.pipeline.door


def current(services: Services, name: str, key: str = RATE) -> list[str]:
    claims, _ = parse_claims(parse_page(page(services, name)).body)
    return sorted(c.value for c in claims if c.key == key and c.is_current)


def test_search_and_ask_find_the_current_limit_and_cite_the_source_that_set_it(services: Services) -> None:
    with ScriptedServer(script) as server:
        tell_story(services, server)
        results = search(services.vault, services.catalog, "billing api rate limit")
        assert results[0].page == "billing-api"
        line = results[0].line
        assert line is not None and line.claim is not None and line.claim.is_current
        assert line.claim.source in ("src-inc-482", "src-draft-faq")  # the two current values
        struck = [c for r in results for c in r.claims if c.value == HUNDRED]
        assert struck and all(c.status == "superseded" and c.by == "src-inc-482" for c in struck)

        answer = ask(services.config, services.vault, services.catalog, services.ledger,
                     "What is the billing API rate limit?", costs=lambda: services.ctx.costs)
        assert answer.known and answer.engine == "model"
        assert [(r.page, r.claim.value, r.claim.source, r.claim.as_of) for r in answer.claims] == [
            ("billing-api", FIFTY, "src-inc-482", "2026-04-03")]
        assert any(HUNDRED in flag and "rate-limiting" in flag for flag in answer.flags)

        page_name, sha = save_answer(session(services), answer, date(2026, 5, 1))
    assert sha and parse_page(page(services, page_name)).meta["type"] == "answer"
    answers = get_section(parse_page(page(services, "billing-api")).body, "Answers")
    assert answers and f"[[{page_name.rsplit('/', 1)[-1]}|" in answers
    assert "Wikiwright-Operation: answer" in git(services.vault.root, "log", "-1", "--format=%B")
    assert git(services.vault.root, "status", "--porcelain", "--", "wiki").strip() == ""


def test_revert_of_the_third_ingest_restores_the_struck_claims_and_keeps_4_and_5(services: Services) -> None:
    with ScriptedServer(script) as server:
        commits = tell_story(services, server)
    result = revert_ingest(session(services), services.ctx.terms, commits[2])
    assert result.commit and len(result.restored) == 3
    # The 100/s value is current again on every page that stated it; 50/s is gone.
    assert current(services, "billing-api") == [HUNDRED, TWO_HUNDRED]
    assert current(services, "rate-limiting") == [HUNDRED]
    assert current(services, "on-call-runbook") == [HUNDRED]
    billing = page(services, "billing-api")
    assert FIFTY not in billing and "src-inc-482" not in billing
    # Ingest 4 (retention split, closed question) and ingest 5 (the FAQ's claim) are intact.
    assert current(services, "billing-api", "billing-api.log-retention.audit") == ["365 days"]
    assert "superseded by [[src-chat-thread]]" in billing
    assert "- [x] Who owns the retention policy" in page(services, "on-call-runbook")
    assert "src-draft-faq" in parse_page(billing).meta["sources"]
    assert "src-inc-482" not in parse_page(billing).meta["sources"]
    assert not (services.vault.wiki / "sources" / "src-inc-482.md").exists()
    assert git(services.vault.root, "status", "--porcelain", "--", "wiki").strip() == ""


def test_retracting_the_draft_faq_leaves_one_current_limit_and_lint_clean(services: Services) -> None:
    with ScriptedServer(script) as server:
        tell_story(services, server)
    # The story's model links [[billing-gateway]] without writing it; a person writes that page,
    # so the only thing lint has to say is about the draft FAQ.
    (services.vault.wiki / "billing-gateway.md").write_text(
        "---\ntype: entity\ntitle: Billing gateway\n---\n\n# Billing gateway\n\nServes the [[billing-api]].\n")
    services.catalog.refresh()
    rebuild_index(services.vault, services.catalog)
    before = run_lint(services.vault, services.config.lint, services.catalog).findings
    assert {f.kind for f in before} == {"claim-conflict"}
    result = retract_source(session(services), "raw/draft-faq.md")
    assert result.commit and result.retracted
    assert current(services, "billing-api") == [FIFTY]
    assert f"~~`{RATE}`: {TWO_HUNDRED}" in page(services, "billing-api")
    after = run_lint(services.vault, services.config.lint, services.catalog).findings
    assert after == []
