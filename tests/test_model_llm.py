"""LLMClient and its helpers: schema validation, reply parsing, format fallback, the cost ledger."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from wikiwright.core.config import Config
from wikiwright.core.errors import LLMAuthError, LLMReplyError
from wikiwright.core.vault import Vault
from wikiwright.ingest.llm import CostLedger, LLMClient, parse_json_reply, spend_summary, validate
from wikiwright.ingest.operations import REPLY_SCHEMA

from tests.llm_server import KEY_ENV, ScriptedServer, http_error

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
                          "additionalProperties": False}


def test_validate_reports_what_is_wrong() -> None:
    assert validate({"a": 1}, SCHEMA) == []
    assert validate({"a": "1"}, SCHEMA) == ["$.a: expected integer, got str"]
    assert validate({"b": 1}, SCHEMA) == ["$: missing required key 'a'", "$: unexpected key 'b'"]
    assert validate({"a": True}, SCHEMA) == ["$.a: expected integer, got bool"]
    good = {"title": "t", "summary": "s", "operations": [
        {"op": "add_claim", "page": "p", "key": "a.b", "value": "v", "as_of": "2026-01-02", "quote": "q" * 9,
         "replaces": False}]}
    assert validate(good, REPLY_SCHEMA) == []
    bad = {**good, "operations": [{**good["operations"][0], "as_of": "Jan 2"}]}
    assert validate(bad, REPLY_SCHEMA) and "operations[0]" in validate(bad, REPLY_SCHEMA)[0]
    assert validate({**good, "operations": [{"op": "rm", "page": "p"}]}, REPLY_SCHEMA)


def test_parse_json_reply_accepts_a_fenced_reply() -> None:
    assert parse_json_reply('```json\n{"a": 1}\n```') == {"a": 1}
    with pytest.raises(ValueError):
        parse_json_reply("Sure! Here it is: {")


def test_a_server_refusing_json_schema_gets_json_object_with_the_schema(vault: Vault, config: Config,
                                                                       costs: CostLedger) -> None:
    def script(request: dict[str, Any]) -> Any:
        if request["response_format"]["type"] == "json_schema":
            return http_error(422, "Input should be 'text' or 'json_object' (response_format)")
        return {"a": 7}

    with ScriptedServer(script) as server:
        client = LLMClient(server.config(config), vault, costs=costs)
        data, usage = client.complete_json(purpose="t", system="s", user="u", schema=SCHEMA)
        second, _ = client.complete_json(purpose="t", system="s", user="u", schema=SCHEMA)
        client.close()
    assert data == {"a": 7} and second == {"a": 7}
    assert [r["response_format"]["type"] for r in server.requests] == ["json_schema", "json_object", "json_object"]
    assert server.requests[1]["response_format"]["schema"] == SCHEMA
    assert usage.model == "openai/scripted" and usage.tokens_out > 0 and usage.cost_usd == 0.0


def test_a_400_is_a_reply_error_not_a_retry(vault: Vault, config: Config, costs: CostLedger) -> None:
    with ScriptedServer([http_error(400, "bad request")]) as server:
        client = LLMClient(server.config(config), vault, costs=costs)
        with pytest.raises(LLMReplyError):
            client.complete_json(purpose="t", system="s", user="u", schema=SCHEMA)
        client.close()
    assert len(server.requests) == 1


def test_a_missing_key_is_an_auth_error_before_any_call(vault: Vault, config: Config, costs: CostLedger,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedServer([{"a": 1}]) as server:
        configured = server.config(config)
        monkeypatch.delenv(KEY_ENV)
        client = LLMClient(configured, vault, costs=costs)
        with pytest.raises(LLMAuthError, match=KEY_ENV):
            client.complete_json(purpose="t", system="s", user="u", schema=SCHEMA)
        client.close()
    assert server.requests == []


def test_spend_summary_splits_today_and_month(vault: Vault, config: Config) -> None:
    ledger = CostLedger(vault.state / "llm.db")
    now = dt.datetime(2026, 4, 10, 12, 0)
    for day, cost in ((10, 0.25), (10, 0.5), (3, 1.0)):
        ledger.record(purpose="ingest", model="m", tokens_in=100, tokens_out=10, cost_usd=cost, latency_s=1,
                      outcome="ok", when=now.replace(day=day).timestamp())
    ledger.record(purpose="ingest", model="m", tokens_in=5, tokens_out=0, cost_usd=9, latency_s=1,
                  outcome="ok", when=now.replace(month=3).timestamp())
    summary = spend_summary(vault, lambda: ledger, config, now=now)
    ledger.close()
    assert summary["today"]["usd"] == 0.75 and summary["today"]["tokens"] == 220 and summary["today"]["calls"] == 2
    assert summary["month"]["usd"] == 1.75 and summary["month"]["calls"] == 3
