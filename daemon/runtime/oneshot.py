"""The one-shot ingest, in this process: what `wikiwright ingest` and the MCP server's
``ingest_text`` do when no daemon runs.

The same door, pipeline and drain as the daemon's workers; the caller holds the vault's lock
(:class:`core.vault.VaultLock`), so no other writer is in flight and a killed run's temporary
files can be swept first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from ..core.config import Config
from ..core.vault import Vault
from ..door import Door
from ..ingest.pipeline import JobResult, Pipeline
from ..intake.names import relative_name
from ..intake.watch import Registrar
from ..upkeep.doctor import sweep_own_temp_files


def ingest_here(config: Config, vault: Vault, targets: list[Path],
                report: Callable[[JobResult], None]) -> list[JobResult]:
    """Register ``targets`` (files already in raw/) and drain them; ``report`` hears each result."""
    door = Door.open(config, vault)
    outcomes: list[JobResult] = []

    def heard(result: JobResult) -> None:
        outcomes.append(result)
        report(result)

    try:
        sweep_own_temp_files(vault)  # debris of a killed run; the caller holds the lock, no write is in flight
        door.ledger.reset_running()
        planner = None
        if config.llm.enabled:
            from ..ingest.llm_planner import ModelPlanner

            planner = ModelPlanner(config, vault, door.ledger, door.catalog)
        pipeline = Pipeline(door, planner=planner)
        registrar = Registrar(vault, door.ledger, config.ingest.max_source_bytes, threading.Event(),
                              allow_hard_links=config.ingest.allow_hard_links)
        rels = []
        for target in targets:
            registrar.register(target)
            rels.append(relative_name(vault.root, target))
        pipeline.drain_paths(rels, heard)
    finally:
        door.close()
    return outcomes
