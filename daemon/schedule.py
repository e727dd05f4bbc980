"""The periodic jobs the daemon runs besides rescans (lint, consolidation, review).

Each room contributes its job here; the daemon only schedules them.
"""

from __future__ import annotations

from .config import Config
from .daemon import PeriodicJob
from .vault import Vault


def periodic_jobs(config: Config, vault: Vault) -> list[PeriodicJob]:
    jobs: list[PeriodicJob] = []
    # [anchor: periodic jobs]
    return jobs
