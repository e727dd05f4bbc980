"""The long-running process: threads, scheduler, signals, sd_notify, heartbeat.

No business logic lives here; it wires the watcher, the stability checker, the worker
pipeline and the periodic jobs together and keeps them alive, on the process's one
:class:`~.context.VaultContext` (one door, one connection to each database).

Every loop has one shape, ``setup; while not stopped: once(); finally teardown``: the daemon's
own main loop and the loops it runs on threads (:class:`StabilityLoop`, one :class:`WorkerLoop`
per worker), built in ``__init__`` so a test can step one; the periodic jobs are
:class:`JobLoop` objects built there too, stepped by APScheduler (a test steps them itself).
Signal handlers only set flags: the first SIGTERM/SIGINT
asks for a clean stop (the current job finishes or is abandoned before it writes), a second
one makes the main loop exit at once.
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
from typing import TYPE_CHECKING, Any

from ..core import rootguard
from ..core.errors import ConfigError, VaultMoved, WikiwrightError
from ..core.fsutil import atomic_write_text
from ..core.locks import vault_write_lock
from ..core.vault import VaultLock
from ..intake.watch import StabilityTracker, Watcher
from ..runtime.context import VaultContext
from ..runtime.control import ControlServer
from ..runtime.notify import sd_notify, watchdog_interval

if TYPE_CHECKING:
    from ..ingest.pipeline import Pipeline

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 5.0
FORCED_EXIT_CODE = 130
RESTART_AFTER_FAILURE_SECONDS = 5.0


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


# -- the loops the daemon runs on its threads -------------------------------------------------

class StabilityLoop:
    """Registers the files the watcher saw once they stand still, and re-indexes the pages a
    person edited (one poll per step)."""

    name = "stability"

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon

    def setup(self) -> None:
        pass

    def once(self) -> None:
        daemon = self.daemon
        daemon.tracker.check()
        changed = daemon.watcher.page_changes.take()
        if changed:
            # A person's edit in Obsidian reaches search, routing and linking within a poll.
            daemon.ctx.catalog.refresh(changed)
        daemon.health.worker_beats[self.name] = time.time()
        daemon.stop_requested.wait(daemon.config.watch.poll_interval_seconds)

    def teardown(self) -> None:
        pass


class WorkerLoop:
    """One ingest worker: one job from the queue per step (or a short wait when there is none)."""

    def __init__(self, daemon: Daemon, name: str) -> None:
        self.daemon = daemon
        self.name = name

    def setup(self) -> None:
        pass

    def once(self) -> None:
        daemon = self.daemon
        daemon.health.worker_beats[self.name] = time.time()
        if not daemon.model_ready.is_set():
            daemon.stop_requested.wait(0.1)  # jobs need the model client; it is still loading
            return
        if rootguard.moved(daemon.vault.root):
            daemon.stop_requested.wait(0.5)  # the main loop stops the daemon; no job starts meanwhile
            return
        result = daemon.pipeline.drain_once()
        if result is not None and result.state == "ingested":
            daemon.health.last_ingest = time.time()
        if result is None:
            daemon.work_ready.wait(0.5)
            daemon.work_ready.clear()

    def teardown(self) -> None:
        pass


class JobLoop:
    """One periodic job as an object the scheduler steps: :meth:`once` runs it now (a failure
    logged, never raised, so the next period runs again). The timing is APScheduler's
    (:meth:`Daemon._start_scheduler`): coalesced — a sleeping laptop catches up with one run,
    not one per missed period — never two runs of a job at once, the first one period after
    the start."""

    def __init__(self, daemon: Daemon, job: PeriodicJob) -> None:
        self.daemon = daemon
        self.job = job
        self.name = job.name
        self.runs = 0
        # Clear while a run is under way: the daemon's teardown waits for it before the vault
        # context closes under it (and before the vault lock is let go).
        self.idle = threading.Event()
        self.idle.set()

    def once(self) -> None:
        self.idle.clear()  # before the stop check: a teardown that saw it idle sees no run start
        try:
            if self.daemon.stop_requested.is_set():
                return
            try:
                self.job.func()
            except Exception:
                log.exception("periodic job %s failed; it runs again at its next period", self.name)
            self.runs += 1
        finally:
            self.idle.set()


class Daemon:
    def __init__(self, ctx: VaultContext,
                 extra_jobs: list[PeriodicJob] | Callable[[VaultContext], list[PeriodicJob]] | None = None,
                 control: Callable[[Daemon], Any] | None = None) -> None:
        self.ctx = ctx
        self.config = config = ctx.config
        self.vault = vault = ctx.vault
        self.stop_requested = threading.Event()
        self.force_exit = False
        self.work_ready = threading.Event()
        # Set once the model client is loaded (at once without a model): workers wait for it,
        # the watcher and the queue do not, so the daemon is ready in about a second.
        self.model_ready = threading.Event()
        self.fatal: BaseException | None = None  # a setup error found after start (bad model name)
        # Makes the control socket's executor for this daemon (runtime/handoff.py provides it).
        self._control_factory = control
        self.control: ControlServer | None = None
        self.health = Health()
        self._threads: list[threading.Thread] = []
        self._lock = VaultLock(vault, "run")
        self._last_heartbeat = 0.0
        self._watchdog_every = watchdog_interval()
        self._last_watchdog = 0.0
        # A worker beats between jobs; one job may take this long before it counts as stuck.
        self._job_limit = max(
            300.0, config.llm.timeout * (config.llm.max_retries + 1) + config.git.lock_retry_seconds + 60
        )
        # The loops, built here and started by setup(); each takes what it needs at its first step.
        self.stability = StabilityLoop(self)
        self.workers = [WorkerLoop(self, f"worker-{n + 1}") for n in range(config.ingest.workers)]
        # Other rooms' jobs (lint, consolidation, review, sync), made from this daemon's context
        # so they share its door, ledger, catalogue, repository and cost ledger.
        extra = extra_jobs(ctx) if callable(extra_jobs) else list(extra_jobs or [])
        jobs = [PeriodicJob("rescan", config.watch.rescan_minutes * 60, self._rescan_job),
                PeriodicJob("git-housekeeping", config.git.housekeeping_minutes * 60, self._housekeeping_job),
                PeriodicJob("logs-commit", max(0.5, min(60.0, config.git.commit_logs_after_quiet_seconds / 2)),
                            self._logs_job),
                *extra]
        self.jobs = {job.name: JobLoop(self, job) for job in jobs}

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
        # The door (the context's ledger, catalogue, repository): opening it finishes or undoes
        # an operation a crash cut.
        self.door = self.ctx.door
        self.ledger, self.catalog, self.repo = self.door.ledger, self.door.catalog, self.door.repo
        from ..upkeep.doctor import sweep_own_temp_files

        for removed in sweep_own_temp_files(self.vault):
            log.info("removed a temporary file left by an interrupted write: %s", removed)
        resumed = self.ledger.reset_running()
        if resumed:
            log.info("resuming %d job(s) interrupted by the last stop", resumed)
        self.ledger.clear_notice("git")
        services = self.ctx.ingest_services(stop=self.stop_requested, work_ready=self.work_ready, check_model=False)
        self.pipeline: Pipeline = services.pipeline
        self.registrar = services.registrar
        model_planner: Any = services.planner if self.config.llm.enabled else None
        if model_planner is not None:
            model_planner.client.api_key()  # a missing key stops the start at once, with its message
        self.tracker = StabilityTracker(self.config.watch, self.registrar)
        self.watcher = Watcher(self.vault, self.config.watch, self.tracker)
        # Start watching first, then rescan: a file landing in between is seen by one of them.
        self.watcher.start()
        self.tracker.rescan()
        self.health.last_rescan = time.time()
        self._spawn(self.stability)
        for worker in self.workers:
            self._spawn(worker)
        if self._control_factory is not None:
            control = ControlServer(self.vault.state, self._control_factory(self))
            self.control = control if control.start() else None  # without it, commands run on their own
        if model_planner is None:
            self.model_ready.set()
        else:
            self._load_model_in_background(model_planner)
        self.work_ready.set()
        engine = self.pipeline.planner.engine
        log.info("watching %s (engine: %s, %d worker(s))", self.vault.root, engine, self.config.ingest.workers)
        sd_notify(f"READY=1\nSTATUS=watching {self.vault.root} (engine: {engine})")
        # The periodic jobs (lint, consolidation, review) start just after READY.
        self._start_scheduler()
        self.write_heartbeat()

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
        self.stop_requested.set()  # first: a periodic job starting from here on runs nothing
        if self.control is not None:
            self.control.stop()
        scheduler = getattr(self, "scheduler", None)
        if scheduler is not None:
            scheduler.shutdown(wait=False)  # no new runs; the running ones are waited for below
        watcher = getattr(self, "watcher", None)
        if watcher is not None:
            watcher.stop()
        self.work_ready.set()
        # A worker's job, and a periodic job's run (a sync round, consolidation, lint), finish
        # before the vault context closes under them and the vault lock is let go: cut off, it
        # would leave its operation to the next start's recovery, and a doctor run after the stop red.
        for thread in self._threads:
            while thread.is_alive():
                thread.join(timeout=0.2)
                self._exit_on_second_signal()
        for loop in self.jobs.values():
            while not loop.idle.wait(timeout=0.2):
                self._exit_on_second_signal()
        if hasattr(self, "door"):
            self.write_heartbeat(stopped=True)
        self._lock.release()
        log.info("stopped")
        return 0

    def _exit_on_second_signal(self) -> None:
        if self.force_exit:
            log.warning("second signal: exiting now; the interrupted job resumes on the next start")
            os._exit(FORCED_EXIT_CODE)

    # -- threads ---------------------------------------------------------------------

    def _start_scheduler(self) -> None:
        """The periodic jobs on APScheduler (imported here: not on the path to READY)."""
        from apscheduler.schedulers.background import BackgroundScheduler

        self.scheduler = BackgroundScheduler(
            daemon=True, job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None})
        for loop in self.jobs.values():
            self.scheduler.add_job(loop.once, "interval", seconds=loop.job.seconds, id=loop.name, name=loop.name)
        self.scheduler.start()

    def _spawn(self, loop: StabilityLoop | WorkerLoop) -> None:
        thread = threading.Thread(target=self._run_loop, args=(loop,), name=loop.name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _run_loop(self, loop: StabilityLoop | WorkerLoop) -> None:
        """``setup; while not stopped: once(); finally teardown`` on the loop's own thread."""
        try:
            loop.setup()
            while not self.stop_requested.is_set():
                try:
                    loop.once()
                except Exception:
                    # A bug must not silently kill a thread the daemon depends on.
                    log.exception("thread %s failed; going on in %.0f s", loop.name, RESTART_AFTER_FAILURE_SECONDS)
                    self.stop_requested.wait(RESTART_AFTER_FAILURE_SECONDS)
        finally:
            loop.teardown()

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
