"""What an ingest prompt shows of the wiki (ingest/context.py), through the scripted server.

The claim index routes the page holding the claim a source corrects, even among many pages
sharing its vocabulary; prose is cut before claims; the overview is shown from the first
ingest; and the budget is a ceiling, not a target.
"""

from __future__ import annotations

import re

from wikiwright.ingest.context import MAX_CANDIDATES
from wikiwright.wiki.pages import Page, parse_claims, parse_page, render_page

from tests.conftest import Services
from tests.llm_server import ScriptedServer, prompt_text, user_prompt
from tests.model_helpers import page, reply, use_model

SIMILAR_PAGES = 1000
OLD = "100 requests per second per client"
NEW = "60 requests per second per client"
CORRECTION = """\
# Capacity review

Date: 2026-05-02.

After the load test we lowered the payments gateway rate limit from 100 to 60 requests per second per client.
Requests over the limit still get HTTP 429 from the gateway.
"""
CORRECTION_QUOTE = ("After the load test we lowered the payments gateway rate limit from 100 to 60 requests per "
                    "second per client.")


def write_page(services: Services, name: str, title: str, body: str, page_type: str = "entity") -> None:
    meta = {"type": page_type, "title": title, "summary": "", "sources": ["src-seed"], "updated": "2026-01-10",
            "tags": [], "aliases": []}
    (services.vault.wiki / f"{name}.md").write_text(render_page(Page(meta, body)), encoding="utf-8")


def similar_page_body(n: int) -> str:
    prose = (f"The payments gateway shard {n} serves checkout traffic for region {n % 17}. Its rate limit is "
             f"tuned per client: requests over the limit get HTTP 429, and the gateway load test runs weekly. "
             f"Capacity reviews of the payments gateway look at requests per second per client.")
    return (f"# Payments gateway shard {n}\n\n{prose}\n\n## Operations\n\n{prose}\n\n## Claims\n"
            f"- `payments-gateway-shard-{n}.rate-limit`: {100 + n % 50} requests per second per client "
            f"(as of 2026-01-10, [[src-seed]])\n")


def current_values(services: Services, name: str, key: str) -> list[str]:
    claims, _ = parse_claims(parse_page(page(services, name)).body)
    return sorted(c.value for c in claims if c.key == key and c.is_current)


def test_a_correction_reaches_the_claim_it_corrects_among_a_thousand_similar_pages(services: Services) -> None:
    for n in range(SIMILAR_PAGES):
        write_page(services, f"payments-gateway-shard-{n}", f"Payments gateway shard {n}", similar_page_body(n))
    edge_prose = "\n\n".join(
        f"Edge cache rule {i}: static assets are cached for {i + 1} hours at the checkout edge nodes."
        for i in range(30))
    write_page(services, "checkout-edge", "Checkout edge",
               f"# Checkout edge\n\n{edge_prose}\n\n## Claims\n"
               f"- `payments-gateway.rate-limit`: {OLD} (as of 2026-01-10, [[src-seed]])\n")
    services.catalog.refresh()
    # The test means something: full-text search alone ranks the page far below what is routed.
    hits = [h.name for h in services.catalog.search("payments gateway rate limit requests second client",
                                                    limit=MAX_CANDIDATES * 4)]
    assert "checkout-edge" not in hits

    correction = reply({"op": "add_claim", "page": "checkout-edge", "key": "payments-gateway.rate-limit",
                        "value": NEW, "as_of": "2026-05-02", "quote": CORRECTION_QUOTE, "replaces": True},
                       title="Capacity review")
    with ScriptedServer([correction]) as server:
        use_model(services, server)
        services.drop("capacity-review.md", CORRECTION)
        results = services.drain()
    assert [r.state for r in results] == ["ingested"], results
    prompt = user_prompt(server.requests[0])
    assert "=== page: checkout-edge ===" in prompt
    assert f"`payments-gateway.rate-limit`: {OLD}" in prompt
    assert "Edge cache rule 17" not in prompt  # its prose does not match the source: not sent
    assert current_values(services, "checkout-edge", "payments-gateway.rate-limit") == [NEW]
    assert f"~~`payments-gateway.rate-limit`: {OLD}" in page(services, "checkout-edge")


def test_prose_is_cut_before_claims_when_the_pages_do_not_fit(services: Services) -> None:
    paragraphs = "\n\n".join(
        f"Paragraph {i}: the billing API rate limit protects the billing gateway; clients that exceed the "
        f"rate limit get HTTP 429 and retry with backoff, as the billing runbook says." for i in range(60))
    claims = "\n".join(f"- `billing-api.limit-{i}`: {i} requests per second (as of 2026-01-10, [[src-seed]])"
                       for i in range(8))
    write_page(services, "billing-api", "Billing API", f"# Billing API\n\n{paragraphs}\n\n## Claims\n{claims}\n")
    services.catalog.refresh()
    source = ("# Note\n\nThe Billing API rate limit was discussed; clients that exceed the rate limit get HTTP 429 "
              "from the billing gateway.\n")
    budget = 7000  # the instructions and SCHEMA.md take about 5,000 of it
    with ScriptedServer([reply(title="Note")]) as server:
        use_model(services, server, prompt_budget_chars=budget)
        services.drop("note.md", source)
        assert [r.state for r in services.drain()] == ["ingested"]
    text = prompt_text(server.requests[0])
    assert len(text) <= budget
    shown = re.findall(r"^Paragraph \d+:", user_prompt(server.requests[0]), re.MULTILINE)
    assert 0 < len(shown) < 60  # some prose went, the rest was cut
    for i in range(8):  # every claim is there although the page's prose was cut
        assert f"`billing-api.limit-{i}`: {i} requests per second" in text
    assert "more characters of this section not shown" in text


def test_the_first_ingest_into_a_fresh_vault_shows_the_overview(services: Services) -> None:
    with ScriptedServer([reply(title="First")]) as server:
        use_model(services, server)
        services.drop("first.md", "# First note\n\nWe started a wiki about the billing platform.\n")
        assert [r.state for r in services.drain()] == ["ingested"]
    prompt = user_prompt(server.requests[0])
    assert "=== page: overview ===" in prompt
    assert "Edit freely" in prompt  # the overview's own text, which the model is told to update


def test_the_budget_is_a_ceiling_not_a_target(services: Services) -> None:
    # Three large pages about known topics; an ordinary note about one of them.
    for topic in ("billing", "search", "storage"):
        body = "\n\n".join(f"{topic.capitalize()} design note {i}: the {topic} service keeps its state in "
                           f"partition {i} and replicates it to zone {i % 3}." for i in range(80))
        write_page(services, f"{topic}-service", f"{topic.capitalize()} service",
                   f"# {topic.capitalize()} service\n\n{body}\n\n## Claims\n"
                   f"- `{topic}-service.owner`: team {topic} (as of 2026-01-10, [[src-seed]])\n")
    services.catalog.refresh()
    note = "# Standup\n\nThe Billing service moved partition 7 to zone 2 today.\n"
    budget = 24000
    with ScriptedServer([reply(title="Standup")]) as server:
        use_model(services, server, prompt_budget_chars=budget)
        services.drop("standup.md", note)
        assert [r.state for r in services.drain()] == ["ingested"]
    text = prompt_text(server.requests[0])
    prompt = user_prompt(server.requests[0])
    assert "=== page: billing-service ===" in prompt and "`billing-service.owner`: team billing" in prompt
    assert "Billing design note 7:" in prompt  # the paragraph the note is about
    assert "Billing design note 40:" not in prompt  # and not the rest of the page
    assert len(text) < budget * 0.4, len(text)


ABBREVIATED_KEYS = [  # keys (and values) as people and models write them; each must reach the correction
    ("payments-gw.rate-limit", "100 rps per client"),
    ("PaymentsGateway.RateLimit", "100 requests per second"),
    ("gateway.max-rps", "100 requests/s per client"),
    ("payments-gateway.rate-lim", "100 req/s"),
]


def test_claims_whose_keys_use_abbreviations_or_camel_case_are_routed(services: Services) -> None:
    for n, (key, value) in enumerate(ABBREVIATED_KEYS):
        write_page(services, f"edge-{n}", f"Edge {n}",
                   f"# Edge {n}\n\nStatic assets are cached at the edge.\n\n## Claims\n"
                   f"- `{key}`: {value} (as of 2026-01-10, [[src-seed]])\n")
    write_page(services, "search-service", "Search service",  # shares no key word: not routed
               "# Search service\n\nIt indexes documents.\n\n## Claims\n"
               "- `search.shard-count`: 100 shards (as of 2026-01-10, [[src-seed]])\n")
    services.catalog.refresh()
    routed = {hit.page for hit in services.catalog.claim_pages(CORRECTION, limit=50)}
    assert routed == {f"edge-{n}" for n in range(len(ABBREVIATED_KEYS))}, routed


RETENTION_DOC = """\
# Ingest API

Date: 2026-03-01.

The ingest API keeps raw events for 90 days.
"""
RETENTION_QUOTE = "The ingest API keeps raw events for 90 days."
# Shares no word with the claim's key (ingest-api.data-retention) nor its old value (90 days).
RAW_EVENTS_NOTE = """\
# Storage review

Date: 2026-05-20.

Raw events are now kept for 30 days; older batches move to cold storage.
"""
RAW_EVENTS_QUOTE = "Raw events are now kept for 30 days; older batches move to cold storage."


def test_a_correction_in_other_words_reaches_the_claim_by_what_it_is_about(services: Services) -> None:
    for n in range(40):  # pages full of the correction's words, so full-text search ranks them first
        write_page(services, f"event-batch-{n}", f"Event batch {n}",
                   f"# Event batch {n}\n\nRaw events of batch {n} are kept in cold storage; raw events older "
                   f"than a batch move on. Raw events, raw events, cold storage batches.\n")
    first = reply(
        {"op": "create_page", "page": "ingest-api", "type": "entity", "title": "Ingest API",
         "summary": "Where services send events.", "body": "# Ingest API\n\nServices send their events here."},
        {"op": "add_claim", "page": "ingest-api", "key": "ingest-api.data-retention", "value": "90 days",
         "as_of": "2026-03-01", "quote": RETENTION_QUOTE, "replaces": False}, title="Ingest API")

    def script(request: dict[str, object]) -> dict[str, object]:
        prompt = user_prompt(request)  # type: ignore[arg-type]
        if "`raw/ingest-api.md`" in prompt:
            return first
        # A careful model supersedes only what it is shown.
        if "`ingest-api.data-retention`: 90 days" not in prompt:
            return reply(title="Storage review")
        return reply({"op": "add_claim", "page": "ingest-api", "key": "ingest-api.data-retention", "value": "30 days",
                      "as_of": "2026-05-20", "quote": RAW_EVENTS_QUOTE, "replaces": True}, title="Storage review")

    with ScriptedServer(script) as server:
        use_model(services, server)
        services.drop("ingest-api.md", RETENTION_DOC)
        assert [r.state for r in services.drain()] == ["ingested"]
        routed = {hit.page for hit in services.catalog.claim_pages(RAW_EVENTS_NOTE)}
        assert "ingest-api" in routed, routed
        # The key's attribute and a word of its subject (the quoted sentence) reach it too.
        assert "ingest-api" in {h.page for h in services.catalog.claim_pages(
            "Data retention for raw events is now 30 days.")}
        services.drop("storage-review.md", RAW_EVENTS_NOTE)
        assert [r.state for r in services.drain()] == ["ingested"]
    assert "=== page: ingest-api ===" in user_prompt(server.requests[-1])
    assert current_values(services, "ingest-api", "ingest-api.data-retention") == ["30 days"]
    assert "~~`ingest-api.data-retention`: 90 days" in page(services, "ingest-api")
