"""The periodic jobs the daemon runs besides rescans (lint, consolidation, review).

Each room contributes its job here; the daemon only schedules them.
"""

from __future__ import annotations

from ..core.config import Config
from ..core.vault import Vault
from ..runtime.daemon import PeriodicJob


def periodic_jobs(config: Config, vault: Vault) -> list[PeriodicJob]:
    jobs: list[PeriodicJob] = []
    from ..upkeep.review import ReviewJobs

    review = ReviewJobs(config, vault)
    jobs.append(PeriodicJob("lint", review.lint_period, review.lint_if_due))
    jobs.append(PeriodicJob("review-watch", config.lint.review_poll_seconds, review.watch_review))
    jobs.append(PeriodicJob("consolidation", config.consolidation.check_interval_minutes * 60,
                            lambda: _consolidation_tick(config, vault)))
    if config.git.remote.strip():
        from ..door.sync import SyncJob

        sync = SyncJob(config, vault)
        jobs.append(PeriodicJob("sync", config.git.sync_interval_seconds, sync.tick))
    return jobs


def _consolidation_tick(config: Config, vault: Vault) -> None:
    from ..memory.consolidate import scheduled_tick  # imported at the first check, not at start

    scheduled_tick(config, vault)
