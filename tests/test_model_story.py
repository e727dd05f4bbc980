"""The five-source story through the real litellm HTTP path to the scripted server."""

from __future__ import annotations

import re

from wikiwright.ingest.llm import spend_summary
from wikiwright.wiki.pages import parse_claims, parse_page

from tests.conftest import Services
from tests.helpers import git, ingest_commits
from tests.llm_server import ScriptedServer, prompt_text, user_prompt
from tests.model_helpers import page, use_model
from tests.story import SOURCES, story_script

STRUCK_100 = re.compile(r"^- ~~`billing-api\.rate-limit`: 100 requests per second per client .*~~ superseded by "
                        r"\[\[src-inc-482\]\]$", re.MULTILINE)


def current(services: Services, name: str, key: str) -> list[str]:
    claims, _ = parse_claims(parse_page(page(services, name)).body)
    return sorted(c.value for c in claims if c.key == key and c.is_current)


def test_five_source_story(services: Services) -> None:
    with ScriptedServer(story_script) as server:
        use_model(services, server)
        results = []
        for name, text in SOURCES:
            services.drop(name, text)
            results += services.drain()
    assert [r.state for r in results] == ["ingested"] * 5, results
    assert len(server.requests) == 5  # one model call per ordinary source
    assert len(ingest_commits(services.vault.root)) == 5

    # "from 100 to 50": the old value is struck through on EVERY page that stated it.
    for name in ("billing-api", "rate-limiting", "on-call-runbook"):
        text = page(services, name)
        assert STRUCK_100.search(text), f"{name} does not strike the 100/s claim:\n{text}"
        assert "100 requests per second per client" not in current(services, name, "billing-api.rate-limit")
    # The draft FAQ states 200 without replacing anything: two current claims, nothing chosen.
    assert current(services, "billing-api", "billing-api.rate-limit") == [
        "200 requests per second per client", "50 requests per second per client"]
    # The chat splits one retention value into two scoped ones and retires the old one.
    billing = page(services, "billing-api")
    assert "~~`billing-api.log-retention`: 30 days (as of 2026-03-16, [[src-design-doc]])~~ superseded by " \
           "[[src-chat-thread]]" in billing
    assert current(services, "billing-api", "billing-api.log-retention.audit") == ["365 days"]
    assert current(services, "billing-api", "billing-api.log-retention.debug") == ["7 days"]
    assert current(services, "billing-api", "billing-api.log-retention") == []
    # The open question is closed, naming what answered it.
    assert "- [x] Who owns the retention policy for billing logs? — answered by [[src-chat-thread]]" in \
        page(services, "on-call-runbook")
    # A person's words in overview.md stay; the model's addition is appended.
    assert "Edit freely" in page(services, "overview") and "[[billing-api]]" in page(services, "overview")
    # Code renders front matter: sources and updated on every touched page.
    meta = parse_page(billing).meta
    assert meta["sources"] == ["src-design-doc", "src-runbook", "src-inc-482", "src-chat-thread", "src-draft-faq"]
    # The source page is code-rendered with the verbatim statements.
    inc = page(services, "sources/src-inc-482")
    assert "engine: model:openai/scripted" in inc and "from 100 to 50 requests per second" in inc
    assert "[[billing-api" in inc
    # Trailers carry the ingest's totals.
    log = git(services.vault.root, "log", "-1", "--format=%B", "--grep=INC-482")
    assert "Wikiwright-Claims: added 1, superseded 3" in log
    assert "Wikiwright-Tokens: in " in log and "Wikiwright-Engine: model:openai/scripted" in log
    # index.md is built by code and lists the model's pages.
    assert "[[billing-api|Billing API]]" in page(services, "index")
    # Every prompt carries the vault's SCHEMA.md; later prompts carry the routed page's text.
    assert all("A fact that can change is a claim" in prompt_text(r) for r in server.requests)
    faq_prompt = user_prompt(server.requests[4])
    assert "=== page: billing-api ===" in faq_prompt and "50 requests per second per client" in faq_prompt
    # The requests went out as litellm sends them: schema as response_format, key, token cap.
    first = server.requests[0]
    assert first["response_format"]["type"] == "json_schema"
    assert first["_authorization"] == "Bearer sk-scripted-dummy" and first["max_tokens"] == 4000
    # Every call is in the cost ledger.
    spend = spend_summary(services.vault, lambda: services.ctx.costs, services.config)
    assert spend["today"]["calls"] == 5 and spend["today"]["tokens"] > 0
    assert git(services.vault.root, "status", "--porcelain", "--", "wiki").strip() == ""


def test_rerunning_the_story_sources_changes_nothing(services: Services) -> None:
    with ScriptedServer(story_script) as server:
        use_model(services, server)
        for name, text in SOURCES[:3]:
            services.drop(name, text)
        services.drain()
        before = page(services, "billing-api")
        services.drop("copy-of-inc.md", SOURCES[2][1])  # same bytes: a duplicate, no model call
        results = services.drain()
    assert [r.state for r in results] == ["duplicate"]
    assert len(server.requests) == 3
    assert page(services, "billing-api") == before
