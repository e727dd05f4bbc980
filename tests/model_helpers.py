"""Helpers for the model-path tests: point a Services bundle at a ScriptedServer."""

from __future__ import annotations

import dataclasses
from typing import Any

from wikiwright.ingest.llm_planner import ModelPlanner

from tests.conftest import Services, open_services
from tests.llm_server import ScriptedServer


def use_model(services: Services, server: ScriptedServer, **llm: Any) -> ModelPlanner:
    """The services opened again with the scripted model configured: their vault context closed
    and a new one opened on the model's config, wired as a daemon started with ``[llm]`` set."""
    config = server.config(services.config, **llm)
    services.close()
    reopened = open_services(config, services.vault)
    for field in dataclasses.fields(Services):
        setattr(services, field.name, getattr(reopened, field.name))
    planner = services.pipeline.planner
    assert isinstance(planner, ModelPlanner), planner
    planner.client.backoff_seconds = 0.01
    return planner


def page(services: Services, name: str) -> str:
    return (services.vault.wiki / f"{name}.md").read_text(encoding="utf-8")


def reply(*operations: dict[str, Any], title: str = "A source", summary: str = "About it.") -> dict[str, Any]:
    return {"title": title, "summary": summary, "key_points": [], "operations": list(operations)}
