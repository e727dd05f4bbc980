"""The daemon's side of a handed-off command (the client side is ``cli/handoff.py``).

Each control request runs on a thread of the daemon: the command's own handler, on the
daemon's :class:`~.context.VaultContext` (so it adds no connection, no door and no second
recovery), with what it prints (and what it logs) routed back to that client; ``ingest`` puts
the files in the daemon's queue and reports each as its workers finish it. Parsing and running
a command line is the command line's business: it hands the daemon a :class:`CommandLine`
when it starts it, so this module (and the core) never imports ``cli/``. The protocol itself
is :mod:`runtime.control_protocol`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..core.errors import WikiwrightError
from . import control_protocol as proto

if TYPE_CHECKING:
    from .context import VaultContext
    from .daemon import Daemon

log = logging.getLogger(__name__)

_local = threading.local()

# How long a file that waits for a retry is worth waiting for before the command returns
# (it stays queued; the daemon takes it up again when it is due).
WAIT_FOR_RETRY_SECONDS = 3.0
POLL_SECONDS = 0.05


class CommandLine(Protocol):
    """What the daemon needs of the command line to run a handed-off command."""

    def parse(self, argv: list[str]) -> argparse.Namespace | None:
        """The parsed command line; None when it is not one."""

    def run(self, args: argparse.Namespace) -> int:
        """Run the command's handler (errors of the tree raised, as on the command line)."""


def serving() -> bool:
    """True on a daemon thread that is running a command for a client."""
    return getattr(_local, "reply", None) is not None


def serving_context() -> VaultContext | None:
    """The daemon's vault context, on a thread serving a client (else None): the command
    works on it instead of opening its own."""
    return getattr(_local, "ctx", None) if serving() else None


class _Routed(io.TextIOBase):
    """sys.stdout / sys.stderr in the daemon: a serving thread's text goes to its client."""

    def __init__(self, fallback: Any, which: str) -> None:
        self.fallback = fallback
        self.which = which

    def _target(self) -> Callable[[str], None] | None:
        reply = getattr(_local, "reply", None)
        return None if reply is None else getattr(reply, self.which)

    def write(self, text: str) -> int:
        target = self._target()
        if target is None:
            return int(self.fallback.write(text))
        target(text)
        return len(text)

    def flush(self) -> None:
        if self._target() is None:
            self.fallback.flush()

    def isatty(self) -> bool:
        return False if self._target() is not None else bool(self.fallback.isatty())

    def fileno(self) -> int:
        return int(self.fallback.fileno())

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.fallback, "encoding", "utf-8"))


class _ToClient(logging.Handler):
    """Log lines of a serving thread also go to its client's stderr (its progress)."""

    def emit(self, record: logging.LogRecord) -> None:
        reply = getattr(_local, "reply", None)
        if reply is None or record.levelno < getattr(_local, "level", logging.WARNING):
            return
        with contextlib.suppress(Exception):
            reply.err(self.format(record) + "\n")


@contextlib.contextmanager
def _serving(reply: Any, level: int, ctx: VaultContext) -> Iterator[None]:
    _local.reply, _local.level, _local.ctx = reply, level, ctx
    try:
        yield
    finally:
        _local.reply = _local.ctx = None


def make_executor(daemon: Daemon, command_line: CommandLine) -> Callable[[dict[str, Any], Any], int | None]:
    """The daemon's executor for control requests (see :class:`runtime.control.ControlServer`)."""
    if not isinstance(sys.stdout, _Routed):
        sys.stdout = _Routed(sys.stdout, "out")
        sys.stderr = _Routed(sys.stderr, "err")
    to_client = _ToClient()
    to_client.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(to_client)

    def execute(message: dict[str, Any], reply: Any) -> int | None:
        if proto.config_env(message.get("env") or {}) != proto.config_env(os.environ):
            reply.send(proto.decline("the command's environment configures wikiwright differently "
                                     "from the daemon's"))
            return None
        args = command_line.parse([str(a) for a in message.get("argv") or []])
        if args is None:
            reply.send(proto.decline("the daemon does not understand this command line"))
            return None
        if args.command not in proto.DELEGATED:
            reply.send(proto.decline(f"{args.command} runs in the command's own process"))
            return None
        args.vault = str(daemon.vault.root)
        verbose = int(getattr(args, "verbose", 0) or 0)
        level = logging.DEBUG if verbose > 1 else logging.INFO if verbose == 1 else logging.WARNING
        if args.command == "consolidate":
            level = min(level, logging.INFO)  # as `consolidate` logs when it runs on its own
        log.info("control socket: running `%s` for a client", args.command)
        started = time.monotonic()
        with _serving(reply, level, daemon.ctx):
            code = _run(daemon, command_line, args, Path(str(message.get("cwd") or daemon.vault.root)))
        log.info("control socket: `%s` for a client: exit %d in %.2fs", args.command, code, time.monotonic() - started)
        return code

    return execute


def _run(daemon: Daemon, command_line: CommandLine, args: argparse.Namespace, cwd: Path) -> int:
    try:
        if args.command == "ingest":
            return ingest_in_daemon(daemon, [cwd / f for f in args.files])
        return command_line.run(args)
    except WikiwrightError as exc:
        print(f"wikiwright: {exc}", file=sys.stderr)
        return exc.exit_code


def ingest_in_daemon(daemon: Daemon, given: list[Path]) -> int:
    """`wikiwright ingest` served by the daemon: queue the files, report each as it is done."""
    from ..intake.drop import copy_into_raw, expand
    from ..intake.names import relative_name

    missing = [str(f) for f in given if not (f.exists() or f.is_symlink())]
    if missing:
        raise WikiwrightError(f"no such file: {', '.join(missing)}")
    vault, ledger = daemon.vault, daemon.ctx.ledger
    # The one-shot command's own rules: folders give their files, links outside raw/ are refused.
    files, refused = expand(vault, given)
    for line in refused:
        print(f"refused {line}")
    if not files:
        return 1
    rels = []
    for source, folder in files:
        target = copy_into_raw(vault, source, folder)
        daemon.registrar.register(target)
        rels.append(relative_name(vault.root, target))
    daemon.work_ready.set()
    waiting = list(dict.fromkeys(rels))
    total, done, bad = len(waiting), 0, 0
    while waiting:
        for rel in list(waiting):
            record = ledger.get_file(rel)
            if record is None:
                waiting.remove(rel)
                done += 1
                print(f"[{done}/{total}] {rel}: not queued (not a source the daemon takes)")
                continue
            if record.state == "running":
                continue
            if record.state == "pending":
                due_in = record.not_before - time.time()
                if record.attempts < 3 and due_in <= WAIT_FOR_RETRY_SECONDS:
                    continue
                waiting.remove(rel)
                done += 1
                bad += 1
                print(f"[{done}/{total}] {rel}: pending — {record.reason or 'queued'}; "
                      f"it stays queued for the running daemon (pid {os.getpid()})")
                continue
            waiting.remove(rel)
            done += 1
            line = f"[{done}/{total}] {rel}: {record.state}" + (f" — {record.reason}" if record.reason else "")
            if record.commit_sha and record.state == "ingested":
                line += f" ({record.commit_sha[:10]})"
            print(line + f" [daemon pid {os.getpid()}]")
            bad += record.state == "quarantined"
        if waiting and daemon.stop_requested.wait(POLL_SECONDS):
            fatal = daemon.fatal  # why it stops when it was not asked to (a bad [llm] model)
            print(f"wikiwright: the daemon is stopping{f' ({fatal})' if fatal else ''}; "
                  "the rest stays queued for its next start", file=sys.stderr)
            return 1
    return 1 if bad or refused else 0
