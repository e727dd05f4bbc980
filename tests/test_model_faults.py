"""Faults of the model: retries, pauses, stops, spend caps, and clear errors at start."""

from __future__ import annotations

import os
import time

from wikiwright.ingest.llm import CostLedger, LLMClient
from wikiwright.runtime.status import gather

from tests.conftest import Services
from tests.helpers import cli
from tests.llm_server import KEY_ENV, ScriptedServer, hang, http_error, rate_limited
from tests.model_helpers import reply, use_model

OK = reply({"op": "create_page", "page": "billing-api", "type": "entity", "title": "Billing API", "summary": "s",
            "body": "The billing API."})
SOURCE = "# Billing\n\nThe billing API exists.\n"


def notices(services: Services) -> str:
    return " ".join(message for _, message, _ in services.ledger.notices())


def outcomes(services: Services) -> list[str]:
    costs = CostLedger(services.vault.state / "llm.db")
    try:
        return [r[0] for r in costs._db.execute("SELECT outcome FROM llm_calls ORDER BY id")]
    finally:
        costs.close()


def test_429_with_a_short_retry_after_is_retried_in_the_call(services: Services) -> None:
    with ScriptedServer([rate_limited(0.3), OK]) as server:
        use_model(services, server)
        services.drop("a.md", SOURCE)
        started = time.monotonic()
        results = services.drain()
    assert [r.state for r in results] == ["ingested"]
    assert time.monotonic() - started >= 0.3  # Retry-After honoured
    assert outcomes(services) == ["transient", "ok"]


def test_429_with_a_long_retry_after_pauses_the_queue_and_the_source_stays_pending(services: Services) -> None:
    with ScriptedServer([rate_limited(120)], default=OK) as server:
        use_model(services, server)
        services.drop("a.md", SOURCE)
        services.drop("b.md", SOURCE + "more\n")
        first = services.pipeline.drain_once()
        second = services.pipeline.drain_once()  # not sent while the queue is paused
        assert len(server.requests) == 1
    assert first is not None and first.state == "pending"
    assert second is not None and second.path == "raw/b.md" and second.state == "pending"
    a = services.ledger.get_file("raw/a.md")
    assert a is not None and a.state == "pending" and a.not_before > time.time() + 100
    assert "429" in a.reason
    assert "model unavailable" in notices(services)
    data = gather(services.config, services.vault)
    assert any("429" in n["message"] for n in data["notices"])


def test_5xx_is_retried_with_backoff_then_the_source_waits(services: Services) -> None:
    with ScriptedServer([http_error(503), http_error(502), http_error(500)]) as server:
        use_model(services, server, max_retries=2)
        services.drop("a.md", SOURCE)
        results = services.drain()
    assert [r.state for r in results] == ["pending"]
    assert len(server.requests) == 3
    record = services.ledger.get_file("raw/a.md")
    assert record is not None and record.state == "pending" and "HTTP 500" in record.reason


def test_5xx_then_success_within_the_retries_is_ingested(services: Services) -> None:
    with ScriptedServer([http_error(503), OK]) as server:
        use_model(services, server, max_retries=2)
        services.drop("a.md", SOURCE)
        assert [r.state for r in services.drain()] == ["ingested"]


def test_a_hang_past_the_timeout_is_abandoned_and_the_source_waits(services: Services) -> None:
    with ScriptedServer([hang(5, OK)]) as server:
        use_model(services, server, timeout=0.5, max_retries=0)
        services.drop("a.md", SOURCE)
        started = time.monotonic()
        results = services.drain()
        elapsed = time.monotonic() - started
    assert [r.state for r in results] == ["pending"]
    assert elapsed < 4, elapsed
    record = services.ledger.get_file("raw/a.md")
    assert record is not None and "no reply within 0.5s" in record.reason


def test_401_stops_model_calls_and_says_so(services: Services) -> None:
    with ScriptedServer([http_error(401, "invalid api key")], default=OK) as server:
        use_model(services, server)
        services.drop("a.md", SOURCE)
        first = services.pipeline.drain_once()
        services.drop("b.md", SOURCE + "b\n")
        second = services.pipeline.drain_once()
        assert len(server.requests) == 1  # no call after the refusal
    assert first is not None and first.state == "pending" and second is not None and second.state == "pending"
    assert "model calls stopped" in notices(services) and "401" in notices(services)
    assert outcomes(services) == ["auth"]


def test_a_spend_cap_pauses_the_queue_and_loses_nothing(services: Services) -> None:
    with ScriptedServer([], default=OK) as server:
        use_model(services, server, daily_cap_tokens=10)
        services.drop("a.md", SOURCE)
        assert [r.state for r in services.drain()] == ["ingested"]
        services.drop("b.md", SOURCE + "b\n")
        results = services.drain()
        assert len(server.requests) == 1
    assert [r.state for r in results] == ["pending"]
    record = services.ledger.get_file("raw/b.md")
    assert record is not None and record.state == "pending" and "daily token cap 10 reached" in record.reason
    assert "model calls paused" in notices(services)


def test_the_cost_ledger_enforces_a_dollar_cap(services: Services) -> None:
    config = services.config.replace(llm=services.config.llm.__class__(model="openai/x", daily_cap_usd=1.0))
    client = LLMClient(config, services.vault, costs=services.ctx.costs)
    client.costs.record(purpose="ingest", model="openai/x", tokens_in=1, tokens_out=1, cost_usd=1.5,
                        latency_s=0.1, outcome="ok")
    try:
        client.complete_json(purpose="t", system="s", user="u", schema={"type": "object"})
    except Exception as exc:
        assert type(exc).__name__ == "BudgetExceeded" and "daily spend cap $1.00" in str(exc)
    else:
        raise AssertionError("the cap was not enforced")
    finally:
        client.close()


def test_run_refuses_to_start_with_a_missing_key(services: Services) -> None:
    env = dict(os.environ, WIKIWRIGHT_LLM_MODEL="openai/scripted", WIKIWRIGHT_LLM_API_KEY_ENV="NO_SUCH_KEY_VAR")
    env.pop("NO_SUCH_KEY_VAR", None)
    result = cli("run", "--vault", str(services.vault.root), env=env, timeout=60)
    assert result.returncode != 0
    assert "NO_SUCH_KEY_VAR" in result.stderr and "Traceback" not in result.stderr


def test_run_refuses_to_start_with_a_bad_model_name(services: Services) -> None:
    env = dict(os.environ, WIKIWRIGHT_LLM_MODEL="no-such-model-xyz", WIKIWRIGHT_LLM_API_KEY_ENV=KEY_ENV)
    env[KEY_ENV] = "sk-dummy"
    result = cli("run", "--vault", str(services.vault.root), env=env, timeout=90)
    assert result.returncode == 2, result.stderr
    assert "llm.model 'no-such-model-xyz'" in result.stderr and "Traceback" not in result.stderr


def test_status_shows_the_engine_and_spend_against_the_cap(services: Services) -> None:
    with ScriptedServer([OK]) as server:
        use_model(services, server)
        services.drop("a.md", SOURCE)
        services.drain()
        env = dict(os.environ, **server.env(), WIKIWRIGHT_LLM_DAILY_CAP_USD="2.5")
        result = cli("status", "--vault", str(services.vault.root), env=env)
    assert result.returncode == 0, result.stderr
    assert "Engine:  model:openai/scripted" in result.stdout
    assert "of $2.50 today" in result.stdout and "1 calls" in result.stdout
