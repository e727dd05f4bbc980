"""The control socket's protocol: where the socket lives and what travels over it.

One place for both ends (the daemon's server in :mod:`runtime.control`, the command line's
client in ``cli/handoff.py``). Standard library only: the client must stay cheap to import.

A Unix stream socket ``.wikiwright/control.sock`` (mode 0600). One request per connection,
newline-delimited JSON both ways:

- the client sends ``{"v": 1, "argv": [...], "cwd": "...", "env": {...}}`` — the command line
  as typed, the directory it was typed in, and the environment that shapes the configuration;
- the daemon answers with any number of ``{"t": "out", "s": "..."}`` / ``{"t": "err", "s": "..."}``
  (text for the client's stdout / stderr, streamed as the work goes on), then exactly one
  ``{"t": "exit", "code": N}``; or a single ``{"t": "decline", "reason": "..."}`` when it will not
  serve this request (another protocol version, another configuration): the client then runs
  the command itself, as it does when no daemon answers.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

PROTOCOL_VERSION = 1
SOCKET_NAME = "control.sock"
# Longest path sun_path takes (108 on Linux, 104 on macOS), less the terminating NUL.
MAX_SOCKET_PATH = 103
MAX_REQUEST_BYTES = 1 << 20
# Commands a running daemon does for the command line (their work needs its loaded model client
# and warm services); every other command runs in the command's own process.
DELEGATED = frozenset({"ingest", "ask", "consolidate", "lint", "status"})
# The environment that decides the effective configuration: a daemon serves a client only when
# these agree, so a command never silently runs under another configuration than it would alone.
CONFIG_ENV_NAMES = ("HOME", "XDG_CONFIG_HOME")
CONFIG_ENV_PREFIX = "WIKIWRIGHT_"
NOT_CONFIG_ENV = frozenset({"WIKIWRIGHT_VAULT", "WIKIWRIGHT_CRASH_AT", "WIKIWRIGHT_TEST_HOOKS",
                            "WIKIWRIGHT_HOOK_TIMEOUT"})


def socket_path(state_dir: Path) -> Path:
    return state_dir / SOCKET_NAME


def config_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of ``environ`` that shapes the configuration (compared by the daemon)."""
    return {
        name: value for name, value in environ.items()
        if name in CONFIG_ENV_NAMES
        or (name.startswith(CONFIG_ENV_PREFIX) and name not in NOT_CONFIG_ENV
            and not name.startswith(CONFIG_ENV_PREFIX + "TEST_"))
    }


@contextlib.contextmanager
def short_address(path: Path) -> Iterator[str]:
    """An address for ``path`` that fits in sun_path.

    A deep vault (a temporary folder, a synced drive) can make ``.wikiwright/control.sock``
    longer than the kernel takes; on Linux the folder is then reached through an open
    descriptor, ``/proc/self/fd/N/control.sock``, which names the same socket file.
    """
    text = os.fsdecode(path)
    if len(os.fsencode(text)) <= MAX_SOCKET_PATH or not os.path.isdir("/proc/self/fd"):
        yield text
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def peer_uid(sock: Any) -> int | None:
    """The user id of the process at the other end (SO_PEERCRED), None where the OS has no such call."""
    import socket  # the server's: the client need not import it before it knows a daemon listens
    import struct

    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


def encode(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def request(argv: list[str], cwd: str, environ: Mapping[str, str]) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "argv": list(argv), "cwd": cwd, "env": config_env(environ)}


def out(text: str) -> dict[str, Any]:
    return {"t": "out", "s": text}


def err(text: str) -> dict[str, Any]:
    return {"t": "err", "s": text}


def exit_message(code: int) -> dict[str, Any]:
    return {"t": "exit", "code": int(code)}


def decline(reason: str) -> dict[str, Any]:
    return {"t": "decline", "reason": reason}


def read_message(stream: IO[bytes], limit: int = MAX_REQUEST_BYTES) -> dict[str, Any] | None:
    """The next message, or None at the end of the stream; ValueError for a malformed one."""
    line = stream.readline(limit + 1)
    if not line:
        return None
    if len(line) > limit or not line.endswith(b"\n"):
        raise ValueError("message too long or cut off")
    message = json.loads(line.decode("utf-8"))
    if not isinstance(message, dict):
        raise ValueError("a message is a JSON object")
    return message
