"""The periodic jobs the daemon runs besides rescans (lint, consolidation, review).

Each room contributes its job here; the daemon only schedules them. Given the daemon's door,
every job works through its ledger, catalogue and repository: one connection to each database
in the process (tests/test_daemon_connections.py counts them), not one set per job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.config import Config
from ..core.vault import Vault
from ..runtime.daemon import PeriodicJob

if TYPE_CHECKING:
    from ..door import Door
    from ..intake.ledger import Ledger
    from ..vcs.repo import GitRepo
    from ..wiki.catalog import Catalog

    Services = tuple[Ledger, Catalog, GitRepo]


def periodic_jobs(config: Config, vault: Vault, door: Door | None = None) -> list[PeriodicJob]:
    jobs: list[PeriodicJob] = []
    from ..upkeep.review import ReviewJobs

    services: Services | None = (door.ledger, door.catalog, door.repo) if door is not None else None
    review = ReviewJobs(config, vault, door)
    jobs.append(PeriodicJob("lint", review.lint_period, review.lint_if_due))
    jobs.append(PeriodicJob("review-watch", config.lint.review_poll_seconds, review.watch_review))
    jobs.append(PeriodicJob("consolidation", config.consolidation.check_interval_minutes * 60,
                            lambda: _consolidation_tick(config, vault, services)))
    if config.git.remote.strip():
        from ..door.sync import SyncJob

        sync = SyncJob(config, vault, services)
        jobs.append(PeriodicJob("sync", config.git.sync_interval_seconds, sync.tick))
    return jobs


def _consolidation_tick(config: Config, vault: Vault, services: Services | None) -> None:
    from ..memory.consolidate import scheduled_tick  # imported at the first check, not at start

    scheduled_tick(config, vault, services=services)
