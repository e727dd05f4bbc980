"""Handing a command to the running daemon, both ends.

The client half (:func:`delegate`) runs first in ``wikiwright ingest|ask|consolidate|lint|status``:
when a daemon serves this vault's control socket, the command line sends it the command and
prints what it streams back, so the command uses the daemon's loaded model client and warm
services and this process never imports litellm. No socket, a dead daemon's socket file
(connection refused), a daemon that declines (another configuration or protocol version):
None, and the command runs in this process as it always did.

The daemon half (:func:`make_executor`) runs each request on a thread of the daemon: the
command's own handler, with what it prints (and what it logs) routed back to that client;
``ingest`` puts the files in the daemon's queue and reports each as its workers finish it.
The protocol itself is :mod:`runtime.control_protocol`.
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
from typing import Any

from ..runtime import control_protocol as proto

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 5.0
_local = threading.local()


def serving() -> bool:
    """True on a daemon thread that is running a command for a client."""
    return getattr(_local, "reply", None) is not None


# -- the client ---------------------------------------------------------------------------

def delegate(args: argparse.Namespace, argv: list[str]) -> int | None:
    """Run the command in the daemon if one serves this vault; None: run it here."""
    if args.command not in proto.DELEGATED or serving():
        return None
    from ..core.config import load_config
    from ..core.errors import VaultError
    from ..core.vault import find_vault

    try:
        try:
            vault = find_vault(getattr(args, "vault", None), os.environ, "")
        except VaultError:  # the user config's default vault, read only when it is needed
            vault = find_vault(getattr(args, "vault", None), os.environ, load_config(None).default_vault)
    except Exception:  # no vault found: the command itself says so when it runs here
        return None
    path = proto.socket_path(vault.state)
    if not os.path.exists(path):
        return None
    import socket  # only when a daemon may be listening

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        try:
            with proto.short_address(path) as address:
                sock.connect(address)
            sock.sendall(proto.encode(proto.request(argv, os.getcwd(), os.environ)))
        except OSError as exc:
            # Refused: a socket file left by a daemon that was killed. Run here; lose nothing.
            log.debug("no daemon answers on %s (%s); running here", path, exc)
            return None
        sock.settimeout(None)  # the work may take as long as it takes; its progress streams
        return _stream(sock, path)
    finally:
        sock.close()


def _stream(sock: Any, path: Path) -> int | None:
    received = False
    with sock.makefile("rb") as stream:
        while True:
            try:
                message = proto.read_message(stream)
            except (OSError, ValueError) as exc:
                message = None
                log.debug("control socket: %s", exc)
            if message is None:
                if not received:  # the daemon went away before answering: run here (nothing is lost)
                    print("wikiwright: the daemon stopped before answering; running the command here",
                          file=sys.stderr)
                    return None
                print("wikiwright: the daemon stopped before the command finished; "
                      "`wikiwright status` shows what is still queued", file=sys.stderr)
                return 1
            kind = message.get("t")
            if kind == "decline" and not received:  # only ever the first message
                log.info("the daemon declined (%s); running here", message.get("reason"))
                return None
            received = True
            if kind == "out":
                sys.stdout.write(str(message.get("s", "")))
                sys.stdout.flush()
            elif kind == "err":
                sys.stderr.write(str(message.get("s", "")))
                sys.stderr.flush()
            elif kind == "exit":
                return int(message.get("code", 1))


# -- the daemon side ----------------------------------------------------------------------

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
def _serving(reply: Any, level: int) -> Iterator[None]:
    _local.reply, _local.level = reply, level
    try:
        yield
    finally:
        _local.reply = None


def make_executor(daemon: Any) -> Callable[[dict[str, Any], Any], int | None]:
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
        from .main import build_parser

        try:
            args = build_parser().parse_args([str(a) for a in message.get("argv") or []])
        except SystemExit:
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
        with _serving(reply, level):
            code = _run(daemon, args, Path(str(message.get("cwd") or daemon.vault.root)))
        log.info("control socket: `%s` for a client: exit %d in %.2fs", args.command, code, time.monotonic() - started)
        return code

    return execute


def _run(daemon: Any, args: argparse.Namespace, cwd: Path) -> int:
    from ..core.errors import WikiwrightError
    from .common import _COMMANDS

    try:
        if args.command == "ingest":
            return ingest_in_daemon(daemon, [cwd / f for f in args.files])
        return _COMMANDS[args.command](args)
    except WikiwrightError as exc:
        print(f"wikiwright: {exc}", file=sys.stderr)
        return exc.exit_code


# How long a file that waits for a retry is worth waiting for before the command returns
# (it stays queued; the daemon takes it up again when it is due).
WAIT_FOR_RETRY_SECONDS = 3.0
POLL_SECONDS = 0.05


def ingest_in_daemon(daemon: Any, given: list[Path]) -> int:
    """`wikiwright ingest` served by the daemon: queue the files, report each as it is done."""
    from ..core.errors import WikiwrightError
    from ..intake.names import relative_name
    from .ingest_cmds import _copy_into_raw, _expand

    missing = [str(f) for f in given if not (f.exists() or f.is_symlink())]
    if missing:
        raise WikiwrightError(f"no such file: {', '.join(missing)}")
    vault, ledger = daemon.vault, daemon.ledger
    # The one-shot command's own rules: folders give their files, links outside raw/ are refused.
    files, refused = _expand(vault, given)
    for line in refused:
        print(f"refused {line}")
    if not files:
        return 1
    rels = []
    for source, folder in files:
        target = _copy_into_raw(vault, source, folder)
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
            fatal = getattr(daemon, "fatal", None)  # why it stops when it was not asked to (a bad [llm] model)
            print(f"wikiwright: the daemon is stopping{f' ({fatal})' if fatal else ''}; "
                  "the rest stays queued for its next start", file=sys.stderr)
            return 1
    return 1 if bad or refused else 0
