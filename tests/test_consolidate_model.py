"""Consolidation through the model path, against the scripted OpenAI-compatible server."""

from __future__ import annotations

from datetime import UTC, datetime

from wikiwright.core.config import Config
from wikiwright.core.vault import Vault
from wikiwright.memory.consolidate import ConsolidationLock
from wikiwright.runtime.context import VaultContext

from tests.consolidate_model import script
from tests.helpers import consolidator_on, git
from tests.llm_server import ScriptedServer, http_error
from tests.logweek import generate_week, surviving

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC).timestamp()


def test_week_of_logs_through_the_scripted_model(config: Config, vault: Vault) -> None:
    generate_week(vault.logs)
    with ScriptedServer(script) as server:
        model_config = server.config(config)
        with VaultContext(model_config, vault) as ctx:
            result = consolidator_on(ctx, clock=lambda: NOW).run()
        assert server.requests, "the model was not called"
        prompt = server.requests[0]["messages"][1]["content"]
        assert "sk_live" not in prompt and "```" not in prompt  # code and secrets never sent
        assert "Restarted the dev server" not in prompt  # 🟢 lines never sent
    assert result.state == "consolidated" and result.plan is not None
    plan = result.plan
    assert plan.engine.startswith("model")
    assert plan.rejected >= 2  # the unread log and the pasted secret
    pages = "".join((vault.wiki / f"{c.page}.md").read_text() for c in plan.changes)
    assert [f.name for f, ok in surviving(pages) if not ok] == []
    assert "1999-01-01" not in pages and "sk-proj" not in pages
    assert plan.ratio >= 5, plan.ratio
    trailers = git(vault.root, "log", "-1", "--format=%(trailers:only,unfold)")
    assert "Wikiwright-Tokens: in " in trailers and "Wikiwright-Engine: model" in trailers


def test_model_outage_waits_and_keeps_the_gate_open(config: Config, vault: Vault) -> None:
    generate_week(vault.logs, days=1, sessions=5, filler=3)
    with ScriptedServer([http_error(503)] * 10) as server:
        model_config = server.config(config, max_retries=0)
        with VaultContext(model_config, vault) as ctx:
            result = consolidator_on(ctx, clock=lambda: NOW).run()
            assert result.state == "waiting"
            assert any(key == "consolidation" for key, _, _ in ctx.ledger.notices())
    lock = ConsolidationLock(vault, 30).read()
    assert lock.locked_by is None and lock.last_consolidated_at is None
    assert not (vault.wiki / "decisions.md").exists()
