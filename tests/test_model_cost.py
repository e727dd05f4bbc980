"""Cost bounded per source (ingest/cost.py): an estimate before the first call; over
``llm.max_tokens_per_source`` the source waits in REVIEW.md until ticked, or is ingested by
its outline and the sections that concern the wiki."""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Any

from wikiwright.ingest.cost import COSTLY_HEADING
from wikiwright.runtime.status import gather
from wikiwright.wiki.pages import Page, render_page

from tests.conftest import Services
from tests.helpers import git, review_queue
from tests.llm_server import ScriptedServer, user_prompt
from tests.model_helpers import reply, use_model

# About 40,000 characters: four parts at the default budget, some 19,000 tokens with the replies.
LONG = "# Meeting archive\n\n" + "\n\n".join(
    f"Meeting {i}: the team reviewed item {i} of the backlog and agreed to revisit it next quarter."
    for i in range(420))


def test_a_source_over_the_cost_bound_waits_in_review_until_ticked_then_is_ingested(services: Services) -> None:
    shown: list[str] = []  # what `status` says of the source at each model call

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        with contextlib.closing(sqlite3.connect(services.vault.db_path)) as db:
            shown.append(db.execute("SELECT state || ': ' || reason FROM files WHERE path='raw/archive.md'")
                         .fetchone()[0])
        return reply(title="Meeting archive")

    with ScriptedServer(answer) as server:
        use_model(services, server, max_tokens_per_source=5000)
        services.drop("archive.md", LONG)
        results = services.drain()
        assert [r.state for r in results] == ["pending"], results
        assert server.requests == []  # nothing is spent before a person says yes
        record = services.ledger.get_file("raw/archive.md")
        assert record is not None and record.state == "pending"
        assert record.reason.startswith("waiting for approval in REVIEW.md: this source would cost about ")
        review = services.vault.review_file.read_text(encoding="utf-8")
        assert f"## {COSTLY_HEADING}" in review
        line = next(row for row in review.splitlines() if "`raw/archive.md`" in row)
        assert line.startswith("- [ ] ") and "tick to ingest it" in line and "over llm.max_tokens_per_source" in line
        assert "Wikiwright-Operation: review-request" in git(services.vault.root, "log", "-1", "--format=%B")
        status = gather(services.config, services.vault)
        assert any(p["path"] == "raw/archive.md" and "waiting for approval" in p["reason"] for p in status["pending"])
        # A second round changes nothing: still waiting, no second line.
        assert services.drain() == []

        services.vault.review_file.write_text(review.replace(line, line.replace("- [ ] ", "- [x] ", 1)),
                                              encoding="utf-8")
        queue = review_queue(services.config, services.vault)
        try:
            outcomes = queue.process()
        finally:
            queue.close()
        assert [o.state for o in outcomes] == ["applied"], outcomes
        results = services.drain()
    assert [r.state for r in results] == ["ingested"], results
    assert len(server.requests) == 4  # the whole source, in its parts
    # Meanwhile status says how far it is, not the "waiting for a worker" it said before it started.
    assert shown == [f"running: model call {n} of 4" for n in (1, 2, 3, 4)], shown
    assert services.vault.review_file.read_text(encoding="utf-8").count("`raw/archive.md`") == 1


def test_the_cheaper_plan_sends_the_outline_and_the_sections_that_concern_the_wiki(services: Services) -> None:
    meta = {"type": "entity", "title": "Billing API", "summary": "", "sources": [], "updated": "2026-01-10",
            "tags": [], "aliases": []}
    (services.vault.wiki / "billing-api.md").write_text(
        render_page(Page(meta, "# Billing API\n\nThe public billing API.\n")), encoding="utf-8")
    services.catalog.refresh()
    filler = "\n\n".join(f"Line {i} about the office plants and the coffee rota." for i in range(300))
    source = (f"# Handbook\n\n## Plants\n\n{filler}\n\n## Billing\n\nThe Billing API now needs a client id.\n\n"
              f"## Coffee\n\n{filler}\n")
    with ScriptedServer([], default=reply(title="Handbook")) as server:
        use_model(services, server, max_tokens_per_source=6000, over_cost="outline")
        services.drop("handbook.md", source)
        results = services.drain()
    assert [r.state for r in results] == ["ingested"], results
    assert len(server.requests) == 1
    prompt = user_prompt(server.requests[0])
    assert "A cheaper plan" in prompt and "- Plants" in prompt and "- Coffee" in prompt  # the outline
    assert "The Billing API now needs a client id." in prompt  # the section that concerns a page
    assert "office plants" not in prompt
