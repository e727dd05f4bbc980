"""The periodic jobs the daemon runs besides rescans (lint, consolidation, review, sync).

Each room contributes its job here; the daemon only schedules them. Made from the daemon's
:class:`~.context.VaultContext` before anything is opened (the daemon builds its loops in its
``__init__``); each job takes the context's parts at its first tick, after the daemon's
setup opened the door: every job works through the one ledger, catalogue, repository and cost
ledger of the process (tests/test_daemon_connections.py counts them), not one set per job.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..runtime.context import VaultContext
from ..runtime.daemon import PeriodicJob

T = TypeVar("T")


def _made_once(make: Callable[[], T]) -> Callable[[], T]:
    made: list[T] = []

    def get() -> T:
        if not made:
            made.append(make())
        return made[0]

    return get


def periodic_jobs(ctx: VaultContext) -> list[PeriodicJob]:
    config, vault = ctx.config, ctx.vault

    from ..upkeep.review import ReviewJobs

    # The door is asked for at the first tick (after the daemon's setup opened it).
    review = ReviewJobs(config, vault, lambda: ctx.door, ctx.llm_client)
    jobs = [PeriodicJob("lint", review.lint_period, review.lint_if_due),
            PeriodicJob("review-watch", config.lint.review_poll_seconds, review.watch_review),
            PeriodicJob("consolidation", config.consolidation.check_interval_minutes * 60,
                        lambda: _consolidation_tick(ctx))]
    if config.git.remote.strip():
        def sync_job() -> Any:
            from ..door.sync import SyncJob

            return SyncJob(ctx.door)

        sync = _made_once(sync_job)
        jobs.append(PeriodicJob("sync", config.git.sync_interval_seconds, lambda: sync().tick()))
    return jobs


def _consolidation_tick(ctx: VaultContext) -> None:
    from ..memory.consolidate import scheduled_tick  # imported at the first check, not at start

    scheduled_tick(ctx.config, ctx.vault, ctx.door, llm=ctx.llm_client)
