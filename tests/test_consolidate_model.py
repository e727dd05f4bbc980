"""Consolidation through the model path, against the scripted OpenAI-compatible server."""

from __future__ import annotations

from datetime import UTC, datetime

from wikiwright.core.config import Config
from wikiwright.core.vault import Vault
from wikiwright.intake.ledger import Ledger
from wikiwright.memory.consolidate import ConsolidationLock, Consolidator

from tests.consolidate_model import script
from tests.helpers import git
from tests.llm_server import ScriptedServer, http_error
from tests.logweek import generate_week, surviving

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC).timestamp()


def test_week_of_logs_through_the_scripted_model(config: Config, vault: Vault) -> None:
    generate_week(vault.logs)
    ledger = Ledger(vault.db_path)
    try:
        with ScriptedServer(script) as server:
            model_config = server.config(config)
            result = Consolidator(model_config, vault, ledger, clock=lambda: NOW).run()
            assert server.requests, "the model was not called"
            prompt = server.requests[0]["messages"][1]["content"]
            assert "sk_live" not in prompt and "```" not in prompt  # code and secrets never sent
            assert "Restarted the dev server" not in prompt  # 🟢 lines never sent
    finally:
        ledger.close()
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
    ledger = Ledger(vault.db_path)
    try:
        with ScriptedServer([http_error(503)] * 10) as server:
            model_config = server.config(config, max_retries=0)
            consolidator = Consolidator(model_config, vault, ledger, clock=lambda: NOW)
            result = consolidator.run()
        assert result.state == "waiting"
        assert any(key == "consolidation" for key, _, _ in ledger.notices())
    finally:
        ledger.close()
    lock = ConsolidationLock(vault, 30).read()
    assert lock.locked_by is None and lock.last_consolidated_at is None
    assert not (vault.wiki / "decisions.md").exists()
