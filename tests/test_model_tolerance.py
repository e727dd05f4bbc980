"""Issue 22: a competent model that does not follow the format to the letter gets the wiki it meant.

Each test is one habit real models show under the operations contract, through the real litellm
HTTP path to the scripted server: the operation lands (normalised, and counted as such in the
commit's Wikiwright-Ops trailer and llm.db), nothing else changes, and what is unsafe or
unfounded is still held. The last test tells the project's whole story with every habit at once
and gets the careful model's scorecard.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from wikiwright.ingest.llm import cost_ledger
from wikiwright.runtime.evaluate import run_eval, story_script
from wikiwright.wiki.pages import parse_claims, parse_page

from tests.conftest import Services
from tests.helpers import git
from tests.llm_server import ScriptedServer
from tests.model_helpers import page, reply, use_model
from tests.story import REPLIES, SOURCES, STORY

NOTES = """# Kestrel notes, 12 May 2026

Alice Chen's team raised the gateway's limit — it's now 200 requests per second per client.
The billing API's owner is the payments team, says Alice.

- Retention of billing logs: 45 days
"""


def seeded(services: Services, replies: list[Any]) -> ScriptedServer:
    """The design doc first (billing-api, rate-limiting, alice-chen), then ``replies``."""
    server = ScriptedServer([REPLIES["design-doc.md"], *replies])
    server.__enter__()
    use_model(services, server)
    services.drop(*SOURCES[0])
    assert [r.state for r in services.drain()] == ["ingested"]
    return server


def ingest_notes(services: Services, *replies: Any, text: str = NOTES) -> None:
    server = seeded(services, list(replies))
    try:
        services.drop("notes.md", text)
        results = services.drain()
    finally:
        server.close()
    assert [r.state for r in results] == ["ingested"], results


def claims(services: Services, name: str, key: str) -> list[tuple[str, str, str]]:
    found, _ = parse_claims(parse_page(page(services, name)).body)
    return [(c.value, c.as_of, c.status) for c in found if c.key == key]


def held(services: Services) -> list[str]:
    text = services.vault.review_file.read_text(encoding="utf-8") if services.vault.review_file.exists() else ""
    return [line for line in text.splitlines() if line.startswith("- [ ] ") and " ^held-back-" in line]


def ops_trailer(services: Services) -> str:
    body = git(services.vault.root, "log", "-1", "--format=%B", "--grep=^Wikiwright-Source: raw/notes.md")
    match = re.search(r"^Wikiwright-Ops: (.*)$", body, re.M)
    assert match, body
    return match.group(1)


def tolerance(services: Services) -> dict[str, Any]:
    ledger = cost_ledger(services.vault)
    try:
        rows = ledger._db.execute("SELECT source, as_sent, normalised, held, kinds, reasons FROM ingest_tolerance"
                                  " WHERE source='raw/notes.md'").fetchall()
    finally:
        ledger.close()
    assert len(rows) == 1, rows
    _source, as_sent, normalised, held_count, kinds, reasons = rows[0]
    return {"as_sent": as_sent, "normalised": normalised, "held": held_count, "kinds": json.loads(kinds),
            "reasons": json.loads(reasons)}


CLAIM = {"op": "add_claim", "page": "billing-api", "key": "billing-api.owner", "value": "payments team",
         "as_of": "2026-05-12", "quote": "The billing API's owner is the payments team, says Alice.",
         "replaces": False}


def test_page_names_written_as_titles_land_on_the_pages_they_name(services: Services) -> None:
    ingest_notes(services, reply(
        {"op": "add_to_section", "page": "Billing API", "heading": "Owners", "text": "The payments team."},
        {"op": "add_to_section", "page": "alice_chen", "heading": "Team", "text": "Leads the gateway team."},
        {"op": "create_page", "page": "Kestrel Limits", "type": "concept", "title": "Kestrel Limits",
         "summary": "Limits of the Kestrel gateway.", "body": "Per client."},
        {"op": "add_links", "page": "Kestrel Limits", "links": ["Rate Limiting", "[[Billing API]]"]},
    ))
    assert "The payments team." in page(services, "billing-api")
    assert "Leads the gateway team." in page(services, "alice-chen")
    kestrel = page(services, "kestrel-limits")
    assert "[[rate-limiting]]" in kestrel and "[[billing-api]]" in kestrel
    assert not held(services)
    assert not list(services.vault.wiki.glob("Billing*")) and not list(services.vault.wiki.glob("*_*"))
    counted = tolerance(services)
    assert counted["normalised"] == 4 and counted["kinds"] == {"page-name": 4, "link-target": 2}
    assert "0 applied as sent, 4 applied after normalising (page-name 4, link-target 2), 0 held back" in \
        ops_trailer(services)


def test_links_written_as_titles_point_at_the_page_files(services: Services) -> None:
    ingest_notes(services, reply(
        {"op": "add_to_section", "page": "billing-api", "heading": "Related notes",
         "text": "See [[Rate Limiting]], [[Alice Chen|Alice]] and [[Kestrel Limits]]; code: `[[Not A Link]]`."},
    ))
    text = page(services, "billing-api")
    assert "See [[rate-limiting|Rate Limiting]], [[alice-chen|Alice]] and [[kestrel-limits|Kestrel Limits]]" in text
    assert "`[[Not A Link]]`" in text  # code is text
    assert tolerance(services)["kinds"] == {"link-target": 3}


def test_typographic_quotes_and_dashes_in_a_quote_are_the_same_words(services: Services) -> None:
    ingest_notes(services, reply(
        {**CLAIM, "quote": "The billing API\u2019s owner is the payments team \u2014 says Alice."},
        {**CLAIM, "page": "alice-chen", "key": "gateway.limit", "value": "200 requests per second per client",
         "quote": "\u201cAlice Chen\u2019s team raised the gateway\u2019s limit - it\u2019s now 200 requests per "
                  "second per client.\u201d"},
    ))
    assert claims(services, "billing-api", "billing-api.owner") == [("payments team", "2026-05-12", "current")]
    assert claims(services, "alice-chen", "gateway.limit")[0][0] == "200 requests per second per client"
    assert not held(services)


def test_a_quote_with_an_ellipsis_at_the_start_or_in_the_middle(services: Services) -> None:
    ingest_notes(services, reply(
        {**CLAIM, "quote": "\u2026owner is the payments team, says Alice."},
        {**CLAIM, "key": "gateway.limit", "value": "200/s", "quote": "Alice Chen's team raised \u2026 200 requests "
                                                                     "per second per client."},
        # The parts exist, but not in one paragraph: held.
        {**CLAIM, "key": "billing-logs.retention", "value": "45 days",
         "quote": "The billing API's owner ... Retention of billing logs: 45 days"},
    ))
    assert [c[0] for c in claims(services, "billing-api", "billing-api.owner")] == ["payments team"]
    assert [c[0] for c in claims(services, "billing-api", "gateway.limit")] == ["200/s"]
    assert claims(services, "billing-api", "billing-logs.retention") == []
    lines = held(services)
    assert len(lines) == 1 and "billing-logs.retention" in lines[0] and "verbatim" in lines[0]


def test_a_final_full_stop_dropped_or_added_is_tolerated_a_changed_word_is_not(services: Services) -> None:
    ingest_notes(services, reply(
        {**CLAIM, "quote": "The billing API's owner is the payments team, says Alice"},
        {**CLAIM, "key": "billing-logs.retention", "value": "45 days",
         "quote": "Retention of billing logs: 45 days."},  # the list item has no full stop
        {**CLAIM, "key": "billing-logs.retention.audit", "value": "45 days",
         "quote": "Retention of audit logs: 45 days."},  # a changed word
        {**CLAIM, "key": "billing-api.owner.team", "value": "payments",
         "quote": "The billing API's owner is the payments team."},  # a missing word (", says Alice" is cut, ok)
    ))
    assert [c[0] for c in claims(services, "billing-api", "billing-logs.retention")] == ["45 days"]
    assert [c[0] for c in claims(services, "billing-api", "billing-api.owner.team")] == ["payments"]
    assert claims(services, "billing-api", "billing-logs.retention.audit") == []
    lines = held(services)
    assert len(lines) == 1 and "audit" in lines[0]


def test_as_of_written_out_becomes_an_iso_date_and_a_missing_one_the_sources(services: Services) -> None:
    ingest_notes(services, reply(
        {**CLAIM, "as_of": "May 12, 2026"},
        {**CLAIM, "key": "gateway.limit", "value": "200/s", "as_of": "12 May 2026",
         "quote": "it's now 200 requests per second per client"},
        {**CLAIM, "key": "billing-logs.retention", "value": "45 days", "as_of": "2026/05/12",
         "quote": "Retention of billing logs: 45 days"},
        {**CLAIM, "key": "gateway.owner", "value": "Alice Chen's team", "as_of": None,
         "quote": "Alice Chen's team raised the gateway's limit"},
        {**CLAIM, "key": "gateway.vague", "value": "x", "as_of": "05/06/2026",  # May or June: held
         "quote": "Alice Chen's team raised the gateway's limit"},
    ))
    for key in ("billing-api.owner", "gateway.limit", "billing-logs.retention", "gateway.owner"):
        assert [c[1] for c in claims(services, "billing-api", key)] == ["2026-05-12"], key
    assert claims(services, "billing-api", "gateway.vague") == []
    assert len(held(services)) == 1
    kinds = tolerance(services)["kinds"]
    assert kinds["as-of-written"] == 3 and kinds["as-of-missing"] == 1


def test_booleans_written_as_strings_or_numbers(services: Services) -> None:
    ingest_notes(services, reply(
        {**CLAIM, "key": "billing-api.rate-limit", "value": "200 requests per second per client",
         "quote": "it's now 200 requests per second per client", "replaces": "true"},
        {**CLAIM, "page": "alice-chen", "replaces": "no"},
        {**CLAIM, "page": "rate-limiting", "key": "billing-api.owner", "replaces": 0},
    ))
    assert claims(services, "billing-api", "billing-api.rate-limit")[0][2] == "superseded"
    assert claims(services, "rate-limiting", "billing-api.rate-limit")[0][2] == "superseded"
    assert ("200 requests per second per client", "2026-05-12", "current") in \
        claims(services, "billing-api", "billing-api.rate-limit")
    assert claims(services, "alice-chen", "billing-api.owner")[0][2] == "current"
    assert tolerance(services)["kinds"] == {"boolean-as-text": 3}


def test_claim_keys_with_underscores_or_capitals_meet_the_existing_key(services: Services) -> None:
    ingest_notes(services, reply(
        {**CLAIM, "key": "Billing_API.Rate_Limit", "value": "200 requests per second per client",
         "quote": "it's now 200 requests per second per client", "replaces": True},
        {**CLAIM, "key": "billing api.log retention", "value": "45 days", "quote": "Retention of billing logs: 45 days",
         "replaces": True},
    ))
    rate = claims(services, "billing-api", "billing-api.rate-limit")
    assert [c[2] for c in rate] == ["superseded", "current"] and rate[1][0] == "200 requests per second per client"
    assert [c[2] for c in claims(services, "billing-api", "billing-api.log-retention")] == ["superseded", "current"]
    text = page(services, "billing-api")
    assert "Billing_API" not in text and "billing api.log" not in text
    assert tolerance(services)["kinds"] == {"claim-key": 2}


def test_extra_fields_are_ignored_and_kept_in_the_normalised_record(services: Services) -> None:
    ingest_notes(services, reply(
        {**CLAIM, "confidence": 0.9, "reason": "The notes name the owner."},
        {"op": "add_to_section", "page": "billing-api", "heading": "Owners", "text": "The payments team.",
         "reason": "ownership", "sources": ["notes.md"]},
    ))
    assert claims(services, "billing-api", "billing-api.owner")[0][0] == "payments team"
    assert "The payments team." in page(services, "billing-api")
    assert not held(services)
    records = [json.loads(p.read_text()) for p in (services.vault.state / "normalised").glob("*.json")]
    sent = [op["sent"] for r in records for op in r["operations"]]
    assert {"confidence": 0.9, "reason": "The notes name the owner."}.items() <= sent[0].items()
    assert "confidence" not in page(services, "billing-api")
    assert tolerance(services)["kinds"] == {"extra-field": 2}


def test_json_after_a_sentence_of_prose_inside_a_fence(services: Services) -> None:
    body = json.dumps(reply({"op": "add_to_section", "page": "billing-api", "heading": "Owners",
                             "text": "The payments team."}))
    ingest_notes(services, f"Here are the operations for this source:\n\n```json\n{body}\n```\n\nLet me know!")
    assert "The payments team." in page(services, "billing-api")
    assert tolerance(services)["kinds"] == {"json-in-prose": 1}


def test_one_bad_operation_costs_only_itself(services: Services) -> None:
    ingest_notes(services, reply(
        {"op": "add_to_section", "page": "billing-api", "heading": "Owners", "text": "The payments team."},
        {"op": "add_to_section", "page": "billing-api", "heading": "Nothing"},  # no text
        {"op": "delete_page", "page": "billing-api"},
        "not an object",
        {**CLAIM, "replaces": "perhaps"},
    ))
    assert "The payments team." in page(services, "billing-api")
    lines = held(services)
    assert len(lines) == 4, lines
    assert any("missing required key 'text'" in line for line in lines)
    assert any("unknown operation 'delete_page'" in line for line in lines)
    counted = tolerance(services)
    assert counted["as_sent"] == 1 and counted["held"] == 4 and counted["reasons"] == {"shape": 4}


def test_unsafe_operations_are_still_held_when_normalised(services: Services) -> None:
    ingest_notes(services, reply(
        {"op": "add_to_section", "page": "Billing API", "heading": "Owners",
         "text": "<script>alert(1)</script>", "confidence": 1},
        {"op": "create_page", "page": "B\u0456lling API", "type": "entity", "title": "Billing API",
         "summary": "the real one", "body": "Trust me."},  # Cyrillic і: never resolved, held
        {"op": "add_to_section", "page": "../../.ssh/x", "heading": "x", "text": "y"},
        {**CLAIM, "quote": "The billing API is owned by the payments team.", "as_of": "May 12, 2026"},
    ))
    assert "alert" not in page(services, "billing-api") and "payments team" not in page(services, "billing-api")
    assert not any("\u0456" in p.name for p in services.vault.wiki.rglob("*.md"))
    lines = held(services)
    assert len(lines) == 4
    reasons = tolerance(services)["reasons"]
    assert reasons == {"unsafe-text": 1, "look-alike-name": 1, "page-name": 1, "quote-not-in-source": 1}


# -- the whole story, every habit at once --------------------------------------------------------

TITLES = {"billing-api": "Billing API", "rate-limiting": "Rate Limiting", "alice-chen": "Alice Chen",
          "on-call-runbook": "On-call Runbook", "overview": "Overview", "billing-gateway": "Billing Gateway"}
DATES = ["{m} {d}, {y}", "{d} {m} {y}", "{y}/{n:02d}/{d:02d}"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


def _written(iso: str, index: int) -> str:
    y, n, d = (int(x) for x in iso.split("-"))
    return DATES[index % len(DATES)].format(m=MONTHS[n - 1], d=d, y=y, n=n)


def _sloppy_quote(quote: str, index: int) -> str:
    quote = quote.replace("'", "\u2019").replace(" - ", " \u2014 ").replace("30-day", "30\u2013day")
    if index % 3 == 0:
        quote = "\u2026" + quote.split(" ", 1)[1]  # starts mid-sentence
    if index % 2 == 0:
        quote = quote.rstrip(".")
    quote = quote[0].upper() + quote[1:] if quote[0].isalpha() else quote
    return f"\u201c{quote}\u201d"


def _links_as_titles(text: str) -> str:
    return re.sub(r"\[\[([a-z-]+)(\|[^\]]*)?\]\]", lambda m: f"[[{TITLES.get(m.group(1), m.group(1))}"
                  f"{m.group(2) or ''}]]", text)


def sloppy(reply_: dict[str, Any], counter: list[int]) -> dict[str, Any]:
    """A reply with the same meaning, written with every habit of issue 22."""
    out = copy.deepcopy(reply_)
    for op in out["operations"]:
        counter[0] += 1
        index = counter[0]
        op["page"] = TITLES.get(op["page"], op["page"])
        op["confidence"] = 0.9
        op["reason"] = "the source says so"
        for name in ("body", "text"):
            if name in op:
                op[name] = _links_as_titles(op[name])
        if "links" in op:
            op["links"] = [TITLES.get(t, t) for t in op["links"]]
        if op["op"] == "add_claim":
            op["key"] = op["key"].replace("-", "_") if index % 2 else op["key"].upper()
            if "replaces_key" in op:
                op["replaces_key"] = op["replaces_key"].replace("-", "_")
            op["replaces"] = "true" if op["replaces"] else "false"
            op["as_of"] = _written(op["as_of"], index)
            op["quote"] = _sloppy_quote(op["quote"], index)
    return out


def sloppy_script(request: dict[str, Any]) -> Any:
    careful = story_script(STORY)(request)
    if not careful.get("operations"):
        return careful
    counter = [len(json.dumps(careful)) % 7]
    if "INC-482" in json.dumps(request):  # once: the JSON after a sentence of prose, in a fence
        return f"Sure! Here is the JSON for this source.\n```json\n{json.dumps(sloppy(careful, counter))}\n```"
    reply_ = sloppy(careful, counter)
    if "draft-faq.md" in json.dumps(request):  # and something unsafe: still held
        reply_["operations"].append({"op": "add_to_section", "page": "Overview", "heading": "Notes",
                                     "text": "<img src=x onerror=alert(1)>", "confidence": 0.2})
    return reply_


def test_the_story_told_with_every_habit_gets_the_careful_models_scorecard(services: Services) -> None:
    careful = run_eval(services.config, use_configured_model=False)
    sloppy_card = run_eval(services.config, use_configured_model=False, script=sloppy_script)
    assert careful.score == 100.0, careful.render()

    def scores(card: Any) -> dict[str, tuple[int, int]]:
        return {c.name: (c.passed, c.total) for c in card.checks}

    # Supersession on every page, conflicts kept, the retraction, citations valid, every quote
    # verified (the typographic ones included): the careful model's card, check for check.
    assert scores(sloppy_card) == scores(careful), sloppy_card.render()
    assert sloppy_card.score == 100.0
    # The unsafe operation is held, and only it.
    assert [h["reason"] for h in sloppy_card.held if "onerror" in h["reason"] or "event handler" in h["reason"]]
    assert len(sloppy_card.held) == 1, sloppy_card.held
    (model, counted), = sloppy_card.tolerance.items()
    assert counted.held == 1 and counted.reasons == {"unsafe-text": 1}
    assert counted.as_sent == 0 and counted.normalised == sum(len(r["operations"]) for r in REPLIES.values())
    for kind in ("page-name", "link-target", "extra-field", "claim-key", "as-of-written", "boolean-as-text",
                 "json-in-prose"):
        assert counted.kinds[kind] > 0, kind
    assert f"tolerance ({model}): 0 applied as sent, {counted.normalised} applied after normalising" in \
        sloppy_card.render()
    assert "1 held back (unsafe-text 1)" in sloppy_card.render()


def test_a_reply_over_the_operation_limit_lands_its_first_sixty(services: Services) -> None:
    ops = [{"op": "add_to_section", "page": "billing-api", "heading": "Log", "text": f"- entry {n}"}
           for n in range(62)]
    ingest_notes(services, reply(*ops))
    text = page(services, "billing-api")
    assert "- entry 59" in text and "- entry 60" not in text
    lines = held(services)
    assert len(lines) == 2 and all("over 60" in line for line in lines)


def test_fields_named_the_models_own_way(services: Services) -> None:
    ingest_notes(services, reply(
        {"action": "add_to_section", "page_name": "billing-api", "section": "Owners", "content": "The payments team."},
        {"operation": "add_claim", "page": "billing-api", "claim_key": "billing-api.owner", "value": "payments team",
         "date": "May 12, 2026", "evidence": CLAIM["quote"], "replace": "false"},
    ))
    assert "## Owners" in page(services, "billing-api") and "The payments team." in page(services, "billing-api")
    assert claims(services, "billing-api", "billing-api.owner") == [("payments team", "2026-05-12", "current")]
    kinds = tolerance(services)["kinds"]
    assert kinds["field-name"] == 9 and not held(services)
