"""The daemon's control socket: the command line hands its work to the running daemon.

A Unix stream socket under ``.wikiwright/`` (mode 0600; a peer whose user id is not the
daemon's is refused, checked with SO_PEERCRED where the OS has it). Each connection is one
request served on its own thread by the ``execute`` callable the daemon was given (the command
line provides it: it knows the commands); text the command writes is streamed back as it is
written. The protocol is :mod:`runtime.control_protocol`.

The daemon holds the vault's single-writer lock before it binds, so a socket file found at
start is a dead daemon's: it is removed. Clients that find such a file get "connection
refused" and run the command themselves.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..runtime import control_protocol as proto

log = logging.getLogger(__name__)


class Reply:
    """The stream back to one client, line-buffered (``json.dump`` writes token by token; a
    progress line goes out as soon as it ends); writes after the client went away are dropped."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._pending = {"out": "", "err": ""}
        self.gone = False

    def send(self, message: dict[str, Any]) -> None:
        data = proto.encode(message)
        with self._lock:
            if self.gone:
                return
            try:
                self._conn.sendall(data)
            except OSError:
                self.gone = True  # the client stopped listening (Ctrl-C); the work goes on

    def _write(self, stream: str, text: str) -> None:
        buffered = self._pending[stream] + text
        cut = buffered.rfind("\n") + 1
        if cut == 0 and len(buffered) < 65536:
            self._pending[stream] = buffered
            return
        cut = cut or len(buffered)
        self._pending[stream] = buffered[cut:]
        self.send(proto.out(buffered[:cut]) if stream == "out" else proto.err(buffered[:cut]))

    def out(self, text: str) -> None:
        if text:
            self._write("out", text)

    def err(self, text: str) -> None:
        if text:
            self._write("err", text)

    def flush(self) -> None:
        """Send what is buffered (before the exit message)."""
        for stream in ("out", "err"):
            if self._pending[stream]:
                text, self._pending[stream] = self._pending[stream], ""
                self.send(proto.out(text) if stream == "out" else proto.err(text))


# execute(request, reply) -> the command's exit code, or None once it has sent a decline.
Executor = Callable[[dict[str, Any], Reply], "int | None"]


class ControlServer:
    def __init__(self, state_dir: Path, execute: Executor) -> None:
        self.path = proto.socket_path(state_dir)
        self.execute = execute
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    def start(self) -> bool:
        """Bind and start accepting; False (and a log line) when the socket cannot be made."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a killed daemon's: we hold the vault lock, nobody else serves here
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        old_mask = os.umask(0o177)  # created 0600: no window in which another user may connect
        try:
            with proto.short_address(self.path) as address:
                sock.bind(address)
            os.chmod(self.path, 0o600)
            sock.listen(16)
        except OSError as exc:
            sock.close()
            log.warning("no control socket (%s): commands run in their own process", exc)
            return False
        finally:
            os.umask(old_mask)
        self._sock = sock
        self._thread = threading.Thread(target=self._accept_loop, name="control", daemon=True)
        self._thread.start()
        return True

    def stop(self) -> None:
        self._stopping.set()
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        if self._thread is not None:
            self._thread.join(timeout=2.0)

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            sock = self._sock
            if sock is None:
                return
            try:
                conn, _ = sock.accept()
            except OSError:
                if self._stopping.is_set():
                    return
                log.warning("control socket: accept failed", exc_info=True)
                self._stopping.wait(0.5)
                continue
            threading.Thread(target=self._serve, args=(conn,), name="control-client", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            reply = Reply(conn)
            try:
                uid = proto.peer_uid(conn)
                if uid is not None and uid != os.getuid():
                    log.warning("control socket: refused a client of user id %d", uid)
                    reply.send(proto.decline("only the vault's owner may use this daemon"))
                    return
                with conn.makefile("rb") as stream:
                    message = proto.read_message(stream)
                if message is None:
                    return
                if message.get("v") != proto.PROTOCOL_VERSION:
                    reply.send(proto.decline(f"protocol version {message.get('v')!r}, "
                                             f"the daemon speaks {proto.PROTOCOL_VERSION}"))
                    return
            except (ValueError, OSError) as exc:
                log.warning("control socket: bad request: %s", exc)
                reply.send(proto.decline(f"bad request: {exc}"))
                return
            try:
                code = self.execute(message, reply)
                if code is None:
                    return  # declined: the client runs the command itself
            except Exception as exc:  # a bug must not kill the daemon nor leave the client hanging
                log.exception("control socket: the request failed")
                reply.err(f"wikiwright: the daemon failed to run this command: {exc}\n")
                code = 1
            reply.flush()
            reply.send(proto.exit_message(code))
