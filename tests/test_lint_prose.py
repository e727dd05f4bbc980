from __future__ import annotations

import dataclasses

from wikiwright.core.config import Config
from wikiwright.core.vault import Vault
from wikiwright.ingest.llm import CostLedger, LLMClient
from wikiwright.upkeep.prose_check import KIND, make_shards, prose_of, run_prose_check, verify

from tests.llm_server import ScriptedServer

TEXTS = {
    "faq": "# FAQ\n\nExports are kept for seven days after they finish.\nSee [[retention]].\n",
    "retention": "# Retention\n\nStandard exports are kept for thirty days.\n",
    "other": "# Other\n\nNothing related here at all.\n",
}


def test_only_verbatim_quotes_survive() -> None:
    reply = {"contradictions": [
        {"page_a": "faq", "quote_a": "Exports are kept for seven days after they finish.",
         "page_b": "[[retention]]", "quote_b": "Standard exports are kept for  thirty days.", "why": "7 vs 30"},
        # paraphrased: dropped
        {"page_a": "faq", "quote_a": "Exports last a week.", "page_b": "retention",
         "quote_b": "Standard exports are kept for thirty days.", "why": "x"},
        # a page the shard does not hold: dropped
        {"page_a": "nowhere", "quote_a": "Exports are kept for seven days after they finish.",
         "page_b": "retention", "quote_b": "Standard exports are kept for thirty days.", "why": "x"},
        {"page_a": "faq"},  # malformed: dropped
    ]}
    kept, dropped = verify(reply, TEXTS)
    assert dropped == 3
    [finding] = kept
    assert finding.kind == KIND and finding.pages == ("faq", "retention") and finding.line == 3
    assert "seven days" in finding.message and "thirty days" in finding.message
    assert verify({"contradictions": [dict(reply["contradictions"][0])]}, TEXTS)[0][0].id == finding.id


def test_shards_keep_linked_pages_together_and_skip_claims() -> None:
    shards = make_shards(TEXTS, 2)
    assert ["faq", "retention"] in shards and ["other"] in shards
    body = "Prose.\n\n## Claims\n- `a.b`: 1 (as of 2026-01-01, [[src-x]])\n\n## Notes\nMore.\n"
    assert "a.b" not in prose_of(body) and "More." in prose_of(body)


def test_prose_check_through_the_scripted_model_keeps_only_verbatim_findings_and_uses_route_model(
    config: Config, vault: Vault, costs: CostLedger,
) -> None:
    """The real LLMClient, litellm's HTTP path and the scripted server; the cheaper route model is used."""
    reply = {"contradictions": [
        {"page_a": "faq", "quote_a": "Exports are kept for seven days after they finish.",
         "page_b": "retention", "quote_b": "Standard exports are kept for thirty days.", "why": "7 vs 30"},
        {"page_a": "faq", "quote_a": "Exports last a week.", "page_b": "retention",
         "quote_b": "Standard exports are kept for thirty days.", "why": "paraphrase"},
    ]}
    with ScriptedServer([reply]) as server:
        configured = server.config(config, route_model="openai/cheap-router")
        configured = configured.replace(lint=dataclasses.replace(configured.lint, prose_check=True))
        client = LLMClient(configured, vault, costs=costs)
        result = run_prose_check(configured, TEXTS, client)
    assert [f.pages for f in result.findings] == [("faq", "retention")]
    assert result.dropped == 1 and result.shards_checked == 1
    assert [r["model"] for r in server.requests] == ["cheap-router"]
    assert "seven days" in server.requests[0]["messages"][-1]["content"]
