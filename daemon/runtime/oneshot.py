"""The one-shot ingest, in this process: what `wikiwright ingest` and the MCP server's
``ingest_text`` do when no daemon runs.

The same door, pipeline and drain as the daemon's workers (the context's ingest services);
the caller holds the vault's lock (:class:`core.vault.VaultLock`), so no other writer is in
flight and a killed run's temporary files can be swept first.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..ingest.pipeline import JobResult
from ..intake.names import relative_name
from ..upkeep.doctor import sweep_own_temp_files
from .context import VaultContext


def ingest_here(ctx: VaultContext, targets: list[Path], report: Callable[[JobResult], None]) -> list[JobResult]:
    """Register ``targets`` (files already in raw/) and drain them; ``report`` hears each result."""
    vault = ctx.vault
    outcomes: list[JobResult] = []

    def heard(result: JobResult) -> None:
        outcomes.append(result)
        report(result)

    services = ctx.ingest_services()  # opens the door: the one recovery runs first
    sweep_own_temp_files(vault)  # debris of a killed run; the caller holds the lock, no write is in flight
    ctx.ledger.reset_running()
    rels = []
    for target in targets:
        services.registrar.register(target)
        rels.append(relative_name(vault.root, target))
    services.pipeline.drain_paths(rels, heard)
    return outcomes
