"""Helpers for the model-path tests: point a Services bundle at a ScriptedServer."""

from __future__ import annotations

from typing import Any

from wikiwright.door import Door
from wikiwright.ingest.llm import LLMClient, cost_ledger
from wikiwright.ingest.llm_planner import ModelPlanner
from wikiwright.runtime.context import wire_ingest

from tests.conftest import Services
from tests.llm_server import ScriptedServer


def use_model(services: Services, server: ScriptedServer, **llm: Any) -> ModelPlanner:
    """Swap the services' pipeline for one planning with the scripted model."""
    config = server.config(services.config, **llm)
    services.config = config
    costs = services.ctx.costs if services.ctx is not None else cost_ledger(services.vault)
    client = LLMClient(config, services.vault, services.ledger, costs=costs)
    planner = ModelPlanner(config, services.vault, services.ledger, services.catalog, client=client)
    planner.client.backoff_seconds = 0.01
    # A door on the context's parts with the model's config (the pipeline reads its [llm] limits).
    door = Door(config, services.vault, services.ledger, services.catalog, services.repo)
    services.pipeline = wire_ingest(door, planner).pipeline
    return planner


def page(services: Services, name: str) -> str:
    return (services.vault.wiki / f"{name}.md").read_text(encoding="utf-8")


def reply(*operations: dict[str, Any], title: str = "A source", summary: str = "About it.") -> dict[str, Any]:
    return {"title": title, "summary": summary, "key_points": [], "operations": list(operations)}
