"""Shared test helpers: bounded waits, the real CLI in a subprocess, writing files."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent


def wait_for(predicate: Callable[[], Any], timeout: float = 15.0, interval: float = 0.1, what: str = "") -> Any:
    """Poll until ``predicate()`` is truthy; fail the test with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(interval)


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 60,
        input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real CLI (``python -m wikiwright``) to completion."""
    return subprocess.run(
        [sys.executable, "-m", "wikiwright", *args],
        env=env if env is not None else dict(os.environ), cwd=cwd, capture_output=True, text=True,
        timeout=timeout, input=input_text,
    )


def start_daemon(vault: Path, env: dict[str, str] | None = None, *extra: str) -> subprocess.Popen[str]:
    """Start ``wikiwright run`` on ``vault`` as a subprocess (stdout+stderr to a log file)."""
    log_path = vault.parent / f"daemon-{time.monotonic_ns()}.log"
    handle = log_path.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "wikiwright", "run", "--vault", str(vault), *extra],
        env=env if env is not None else dict(os.environ), stdout=handle, stderr=subprocess.STDOUT, text=True,
    )
    proc.log_path = log_path  # type: ignore[attr-defined]
    return proc


@contextmanager
def git_holding_index_lock(root: Path, index: Path | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """A live git process holding ``.git/index.lock`` (or, given ``index``, that index file's
    lock, as with GIT_INDEX_FILE): ``git update-index --index-info`` (a command the daemon
    itself runs) waiting for its input. At the end its input is closed and it releases the lock
    (unless the test killed it: then the lock stays, as a killed git's does)."""
    lock = Path(f"{index}.lock") if index else root / ".git" / "index.lock"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)} if index else None
    proc = subprocess.Popen(["git", "update-index", "--index-info"], cwd=root, stdin=subprocess.PIPE, env=env)
    try:
        wait_for(lock.exists, timeout=10, interval=0.02, what="git to take .git/index.lock")
        yield proc
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)


def daemon_log(proc: subprocess.Popen[str]) -> str:
    return Path(proc.log_path).read_text(errors="replace")  # type: ignore[attr-defined]


def git(vault: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(vault), *args], capture_output=True, text=True, check=True).stdout


def ingest_commits(vault: Path) -> list[str]:
    out = git(vault, "log", "--format=%H", "--grep=Wikiwright-Operation: ingest")
    return [line for line in out.splitlines() if line]


def rebuild_index(vault: Any, catalog: Any) -> bool:
    """Fixtures only: rewrite index.md's generated block from the catalogue, without a commit
    (the daemon itself writes index.md only through the door)."""
    from wikiwright.wiki.index import block_of, empty_page, render_index_block, splice_index

    path = vault.wiki / "index.md"
    current = path.read_text(encoding="utf-8") if path.exists() else empty_page("index")
    updated = splice_index(current, render_index_block(catalog.entries()), block_of(current))
    if updated == current:
        return False
    path.write_text(updated, encoding="utf-8")
    return True


class NotifySocket:
    """A real AF_UNIX datagram socket standing in for systemd's notify socket."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.2)
        self.messages: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, daemon=True)
        self._thread.start()

    def _receive(self) -> None:
        while not self._stop.is_set():
            try:
                self.messages.append(self.sock.recv(4096).decode())
            except TimeoutError:
                continue
            except OSError:
                return

    def lines(self) -> list[str]:
        return [line for message in list(self.messages) for line in message.splitlines()]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


@contextmanager
def daemon_in_process(vault: Any) -> Iterator[Any]:
    """The daemon `wikiwright run` builds (runtime/daemon.py, its jobs and control socket), set
    up in this process on a VaultContext of its own: its threads run; the test may step any of
    its loops (``daemon.jobs[name]``). Stopped and torn down, the context closed, at the end."""
    import wikiwright.cli.main  # noqa: F401  (registers the parser the control socket's executor uses)
    from wikiwright.cli.vault_cmds import build_daemon
    from wikiwright.core.config import load_config
    from wikiwright.runtime.context import VaultContext

    out, err = sys.stdout, sys.stderr  # the control executor routes them; put back afterwards
    ctx = VaultContext(load_config(vault.root), vault)
    daemon = build_daemon(ctx)
    daemon._lock.acquire()
    try:
        daemon.setup()
        yield daemon
    finally:
        daemon.stop_requested.set()
        daemon.teardown()
        ctx.close()
        sys.stdout, sys.stderr = out, err


@contextmanager
def opened_door(config: Any, vault: Any) -> Iterator[Any]:
    """The door of a vault context opened for the block, as one command opens it (the crash
    recovery runs), closed with the context."""
    from wikiwright.runtime.context import VaultContext

    with VaultContext(config, vault) as ctx:
        yield ctx.door


def review_queue(config: Any, vault: Any) -> Any:
    """A review queue on a vault context of its own (what one `wikiwright review` opens): its
    door at first use, the context closed with the queue."""
    from wikiwright.runtime.context import VaultContext
    from wikiwright.upkeep.review import ReviewQueue

    class OwnQueue(ReviewQueue):
        def __init__(self) -> None:
            self.ctx = VaultContext(config, vault)
            super().__init__(config, vault, lambda: self.ctx.door, self.ctx.llm_client)

        def close(self) -> None:
            super().close()
            self.ctx.close()

    return OwnQueue()


def consolidator_on(ctx: Any, **kw: Any) -> Any:
    """A consolidator on a vault context's parts, as the daemon and `consolidate` make one."""
    from wikiwright.memory.consolidate import Consolidator

    return Consolidator(ctx.config, ctx.vault, ctx.ledger, ctx.repo, door=ctx.door,
                        llm=ctx.llm_client() if ctx.config.llm.enabled else None, **kw)


def killed_in_child(work: Callable[[], None], crash_at: str) -> bool:
    """``work`` in a forked child that dies (SIGKILL) at the crash point ``crash_at``
    (``WIKIWRIGHT_CRASH_AT``); True if it was killed there, False if it ran to its end. A child
    that fails otherwise fails the test."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            os.environ["WIKIWRIGHT_CRASH_AT"] = crash_at
            work()
        except BaseException:
            traceback.print_exc()
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True
    assert os.WEXITSTATUS(status) == 0, f"the child failed (not a crash) at {crash_at}"
    return False


def plans_set_aside(services: Any, monkeypatch: Any) -> list[Any]:
    """The next plans the services' planner makes are set aside uncommitted, as when a shutdown
    is asked for while a source is planned (the pipeline's stop set as each plan is made); the
    list returned gathers them. ``monkeypatch.undo()`` and ``pipeline.stop.clear()`` end it."""
    planner = services.pipeline.planner
    real_plan = planner.plan_read
    plans: list[Any] = []

    def plan_then_shutdown(*args: Any, **kwargs: Any) -> Any:
        plan = real_plan(*args, **kwargs)
        plans.append(plan)
        services.pipeline.stop.set()
        return plan

    monkeypatch.setattr(planner, "plan_read", plan_then_shutdown)
    return plans


def drain_in_workers(pipeline: Any, workers: int = 2, timeout: float = 120.0) -> None:
    """The pipeline's queue drained by ``workers`` threads at once, as the daemon's workers
    drain it; an exception in any of them fails the caller."""
    errors: list[BaseException] = []

    def work() -> None:
        try:
            while pipeline.drain_once() is not None:
                pass
        except BaseException as exc:  # pragma: no cover - raised below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    assert not errors, errors
    assert not any(thread.is_alive() for thread in threads), "a worker still drains"
