"""The long-running process: threads, scheduler, signals, sd_notify, heartbeat.

No business logic lives here; it wires the watcher, the stability checker, the worker
pipeline and the periodic jobs together and keeps them alive.

Shape: ``setup; while not stopped: once(); finally teardown``. Signal handlers only set
flags: the first SIGTERM/SIGINT asks for a clean stop (the current job finishes or is
abandoned before it writes), a second one makes the main loop exit at once.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from ..core import rootguard
from ..core.config import Config
from ..core.errors import ConfigError, VaultMoved, WikiwrightError
from ..core.fsutil import atomic_write_text
from ..core.locks import vault_write_lock
from ..core.vault import Vault, VaultLock
from ..door import Door
from ..ingest.pipeline import Pipeline
from ..intake.watch import Registrar, StabilityTracker, Watcher
from ..runtime.control import ControlServer
from ..runtime.notify import sd_notify, watchdog_interval

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 5.0
FORCED_EXIT_CODE = 130


@dataclass
class PeriodicJob:
    """A job the scheduler runs every ``seconds`` (coalesced: a sleeping laptop catches up once)."""

    name: str
    seconds: float
    func: Callable[[], Any]


@dataclass
class Health:
    started_at: float = field(default_factory=time.time)
    last_rescan: float = 0.0
    missed_by_watcher: int = 0
    last_ingest: float = 0.0
    worker_beats: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


class Daemon:
    def __init__(self, config: Config, vault: Vault,
                 extra_jobs: list[PeriodicJob] | Callable[[Door], list[PeriodicJob]] | None = None,
                 control: Callable[[Daemon], Any] | None = None) -> None:
        self.config = config
        self.vault = vault
        self.stop_requested = threading.Event()
        self.force_exit = False
        self.work_ready = threading.Event()
        # Set once the model client is loaded (at once without a model): workers wait for it,
        # the watcher and the queue do not, so the daemon is ready in about a second.
        self.model_ready = threading.Event()
        self.fatal: BaseException | None = None  # a setup error found after start (bad model name)
        # Makes the control socket's executor for this daemon (the command line provides it).
        self._control_factory = control
        self.control: ControlServer | None = None
        self.health = Health()
        # Other rooms' jobs, or a function making them from this daemon's door (so they share its
        # ledger, catalogue and repository).
        self.extra_jobs = extra_jobs or []
        self._threads: list[threading.Thread] = []
        self._lock = VaultLock(vault, "run")
        self._last_heartbeat = 0.0
        self._watchdog_every = watchdog_interval()
        self._last_watchdog = 0.0
        # A worker beats between jobs; one job may take this long before it counts as stuck.
        self._job_limit = max(
            300.0, config.llm.timeout * (config.llm.max_retries + 1) + config.git.lock_retry_seconds + 60
        )

    # -- signals ---------------------------------------------------------------------

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.stop_requested.is_set():
            self.force_exit = True
        self.stop_requested.set()

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    # -- life ------------------------------------------------------------------------

    def run(self) -> int:
        self.install_signal_handlers()
        self._lock.acquire()  # raises VaultLockedError before anything else starts
        # The root's device and inode: a vault renamed while we run is noticed, never recreated.
        rootguard.guard(self.vault.root)
        try:
            self.setup()
            while not self.stop_requested.is_set():
                self.once()
            log.info("stopping: finishing the current job")
            sd_notify("STOPPING=1")
        finally:
            code = self.teardown()
            rootguard.release(self.vault.root)
        if self.fatal is not None:
            raise self.fatal  # the command line reports it (exit code of the error)
        return code

    def setup(self) -> None:
        # The door: ledger, catalogue, repository; finishes or undoes an operation a crash cut.
        self.door = Door.open(self.config, self.vault)
        self.ledger, self.catalog, self.repo = self.door.ledger, self.door.catalog, self.door.repo
        from ..upkeep.doctor import sweep_own_temp_files

        for removed in sweep_own_temp_files(self.vault):
            log.info("removed a temporary file left by an interrupted write: %s", removed)
        resumed = self.ledger.reset_running()
        if resumed:
            log.info("resuming %d job(s) interrupted by the last stop", resumed)
        self.ledger.clear_notice("git")
        planner = self._planner()
        self.pipeline = Pipeline(self.door, planner=planner, stop=self.stop_requested)
        self.registrar = Registrar(self.vault, self.ledger, self.config.ingest.max_source_bytes, self.work_ready,
                                   allow_hard_links=self.config.ingest.allow_hard_links)
        self.tracker = StabilityTracker(self.config.watch, self.registrar)
        self.watcher = Watcher(self.vault, self.config.watch, self.tracker)
        # Start watching first, then rescan: a file landing in between is seen by one of them.
        self.watcher.start()
        self.tracker.rescan()
        self.health.last_rescan = time.time()
        self._spawn("stability", self._stability_loop)
        for n in range(self.config.ingest.workers):
            self._spawn(f"worker-{n + 1}", self._worker_loop)
        if self._control_factory is not None:
            control = ControlServer(self.vault.state, self._control_factory(self))
            self.control = control if control.start() else None  # without it, commands run on their own
        if planner is None:
            self.model_ready.set()
        else:
            self._load_model_in_background(planner)
        self.work_ready.set()
        engine = self.pipeline.planner.engine
        log.info("watching %s (engine: %s, %d worker(s))", self.vault.root, engine, self.config.ingest.workers)
        sd_notify(f"READY=1\nSTATUS=watching {self.vault.root} (engine: {engine})")
        # The periodic jobs (lint, consolidation, review) start just after READY: importing
        # APScheduler and the jobs' rooms is not on the path to watching and queueing.
        self._start_scheduler()
        self.write_heartbeat()

    def _planner(self) -> Any:
        if not self.config.llm.enabled:
            return None
        from ..ingest.llm_planner import ModelPlanner

        planner = ModelPlanner(self.config, self.vault, self.ledger, self.catalog, check=False)
        planner.client.api_key()  # a missing key stops the start at once, with its message
        return planner

    def _load_model_in_background(self, planner: Any) -> None:
        """Import litellm and check the model string off the start path (it takes seconds)."""

        def load() -> None:
            hold = os.environ.get("WIKIWRIGHT_TEST_HOLD_MODEL_LOAD")
            while hold and not os.path.exists(hold) and not self.stop_requested.is_set():
                time.sleep(0.05)  # test hook: the load waits until this file exists
            started = time.monotonic()
            try:
                planner.client.check_setup()
            except Exception as exc:
                # Found after READY: say it and stop, with the same message and exit code as
                # when the check ran before the start.
                if not isinstance(exc, WikiwrightError):
                    log.exception("the model client could not be loaded")
                    exc = ConfigError(f"the model client could not be loaded: {exc}")
                self.fatal = exc
                self.stop_requested.set()
                return
            log.info("model client loaded in %.1fs", time.monotonic() - started)
            self.model_ready.set()
            self.work_ready.set()

        threading.Thread(target=load, name="model-loader", daemon=True).start()

    def once(self) -> None:
        self.stop_requested.wait(1.0)
        if self._vault_moved():
            return
        now = time.time()
        if now - self._last_heartbeat >= HEARTBEAT_SECONDS:
            self.write_heartbeat()
        problems = self.health_problems()
        if problems != self.health.problems:
            if problems:
                log.warning("unhealthy: %s", "; ".join(problems))
            elif self.health.problems:
                log.info("healthy again")
            self.health.problems = problems
            self.write_heartbeat()
        # Pings only while every part is alive: a hung worker or dead watcher that this loop
        # cannot repair lets systemd's watchdog restart the whole process.
        if self._watchdog_every and now - self._last_watchdog >= self._watchdog_every and not problems:
            sd_notify("WATCHDOG=1")
            self._last_watchdog = now
        if not self.watcher.alive() and not self.stop_requested.is_set():
            log.warning("the file watcher died; restarting it and rescanning")
            self.watcher.stop()
            self.watcher.start()
            self._rescan_job()

    def _vault_moved(self) -> bool:
        """The vault folder was renamed or replaced: say so and stop with an error exit (the
        service manager shows it); nothing is written at the old path from here on."""
        reason = rootguard.moved(self.vault.root)
        if not reason:
            return False
        if self.fatal is None:
            log.error("%s; stopping (start wikiwright again on the vault's new path)", reason)
            self.fatal = VaultMoved(f"{reason}; the daemon stopped (start it again on the vault's new path)")
            sd_notify(f"STATUS=stopped: {reason}")
        self.stop_requested.set()
        return True

    def teardown(self) -> int:
        if self.control is not None:
            self.control.stop()
        scheduler = getattr(self, "scheduler", None)
        if scheduler is not None:
            scheduler.shutdown(wait=False)
        watcher = getattr(self, "watcher", None)
        if watcher is not None:
            watcher.stop()
        self.stop_requested.set()
        self.work_ready.set()
        for thread in self._threads:
            while thread.is_alive():
                thread.join(timeout=0.2)
                if self.force_exit:
                    log.warning("second signal: exiting now; the interrupted job resumes on the next start")
                    os._exit(FORCED_EXIT_CODE)
        if hasattr(self, "door"):
            self.write_heartbeat(stopped=True)
            self.door.close()
        self._lock.release()
        log.info("stopped")
        return 0

    # -- threads ---------------------------------------------------------------------

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=self._guard(name, target), name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _guard(self, name: str, target: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            while not self.stop_requested.is_set():
                try:
                    target()
                    return
                except Exception:
                    # A bug must not silently kill a thread the daemon depends on.
                    log.exception("thread %s failed; restarting it in 5 s", name)
                    self.stop_requested.wait(5.0)

        return run

    def _stability_loop(self) -> None:
        poll = self.config.watch.poll_interval_seconds
        while not self.stop_requested.is_set():
            self.tracker.check()
            changed = self.watcher.page_changes.take()
            if changed:
                # A person's edit in Obsidian reaches search, routing and linking within a poll.
                self.catalog.refresh(changed)
            self.health.worker_beats["stability"] = time.time()
            self.stop_requested.wait(poll)

    def _worker_loop(self) -> None:
        name = threading.current_thread().name
        while not self.stop_requested.is_set():
            self.health.worker_beats[name] = time.time()
            if not self.model_ready.is_set():
                self.stop_requested.wait(0.1)  # jobs need the model client; it is still loading
                continue
            if rootguard.moved(self.vault.root):
                self.stop_requested.wait(0.5)  # the main loop stops the daemon; no job starts meanwhile
                continue
            result = self.pipeline.drain_once()
            if result is not None and result.state == "ingested":
                self.health.last_ingest = time.time()
            if result is None:
                self.work_ready.wait(0.5)
                self.work_ready.clear()

    def _rescan_job(self) -> None:
        found = self.tracker.rescan()
        self.health.last_rescan = time.time()
        if found:
            self.health.missed_by_watcher += found
            log.info("rescan found %d file(s) the watcher had not reported", found)

    def _housekeeping_job(self) -> None:
        """`git gc --auto` when the queue is quiet, under the vault's write lock, so no commit
        of ours and no doctor fsck runs while it packs and prunes (our other git commands
        never start a gc of their own)."""
        if self.ledger.pending_count() or rootguard.moved(self.vault.root):
            return
        try:
            with vault_write_lock(self.vault.state):
                self.repo.housekeeping()
        except Exception as exc:  # a failed gc never stops the daemon; git keeps what it had
            log.warning("git housekeeping (gc --auto) failed: %s", exc)

    def _logs_job(self) -> None:
        """Daily logs committed in one batch once they have been quiet (memory/logcommit.py)."""
        from ..memory.logcommit import commit_quiet_logs

        if rootguard.moved(self.vault.root):
            return
        try:
            commit_quiet_logs(self.door, self.config.git.commit_logs_after_quiet_seconds)
        except WikiwrightError as exc:  # commits paused (a merge in progress, a lock): next round
            log.info("daily logs not committed yet: %s", exc)

    def _start_scheduler(self) -> None:
        from apscheduler.schedulers.background import BackgroundScheduler

        self.scheduler = BackgroundScheduler(
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None}
        )
        jobs = [PeriodicJob("rescan", self.config.watch.rescan_minutes * 60, self._rescan_job),
                PeriodicJob("git-housekeeping", self.config.git.housekeeping_minutes * 60, self._housekeeping_job),
                PeriodicJob("logs-commit", max(0.5, min(60.0, self.config.git.commit_logs_after_quiet_seconds / 2)),
                            self._logs_job),
                *(self.extra_jobs(self.door) if callable(self.extra_jobs) else self.extra_jobs)]
        for job in jobs:
            self.scheduler.add_job(job.func, "interval", seconds=job.seconds, id=job.name, name=job.name)
        self.scheduler.start()

    # -- health ----------------------------------------------------------------------

    def health_problems(self) -> list[str]:
        """What is wrong right now, in words; empty when every part is alive and moving."""
        now = time.time()
        problems = []
        watcher = getattr(self, "watcher", None)
        if watcher is None or not watcher.alive():
            problems.append("file watcher is not running")
        for thread in self._threads:
            if not thread.is_alive() and not self.stop_requested.is_set():
                problems.append(f"thread {thread.name} has stopped")
        for name, beat in sorted(self.health.worker_beats.items()):
            limit = 120.0 if name == "stability" else self._job_limit
            if now - beat > limit:
                problems.append(f"{name} has made no progress for over {limit:.0f}s")
        scheduler = getattr(self, "scheduler", None)
        if scheduler is not None and not scheduler.running:
            problems.append("scheduler is not running")
        if self.control is not None and not self.control.alive() and not self.stop_requested.is_set():
            problems.append("the control socket is not serving")
        return problems

    def healthy(self) -> bool:
        return not self.health_problems()

    def write_heartbeat(self, stopped: bool = False) -> None:
        self._last_heartbeat = time.time()
        if rootguard.moved(self.vault.root):
            return  # never recreate .wikiwright/heartbeat.json at a moved vault's old path
        watcher = getattr(self, "watcher", None)
        data = {
            "pid": os.getpid(),
            "time": self._last_heartbeat,
            "stopped": stopped,
            "started_at": self.health.started_at,
            "watcher_alive": bool(watcher and watcher.alive()),
            # Searches may trust the catalogue (no stat scan of every page) while this holds: the
            # watcher sees wiki/ and the stability loop that re-indexes what it saw is alive.
            "pages_watched": bool(watcher and watcher.alive() and watcher.watching_pages
                                  and not self.health.problems),
            "last_rescan": self.health.last_rescan,
            "missed_by_watcher": self.health.missed_by_watcher,
            "last_ingest": self.health.last_ingest,
            "healthy": not self.health.problems,
            "problems": self.health.problems,
            "queue": self.ledger.pending_count(),
            "engine": self.pipeline.planner.engine if hasattr(self, "pipeline") else "",
        }
        try:
            atomic_write_text(self.vault.state / "heartbeat.json", json.dumps(data) + "\n", crash_hooks=False)
        except (OSError, VaultMoved) as exc:
            log.warning("cannot write the heartbeat: %s", exc)
        state = "unhealthy: " + "; ".join(self.health.problems) if self.health.problems else "healthy"
        sd_notify(f"STATUS=queue {data['queue']}, watcher {'alive' if data['watcher_alive'] else 'DOWN'}, {state}")
