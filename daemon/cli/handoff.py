"""Handing a command to the running daemon: the client half.

:func:`delegate` runs first in ``wikiwright ingest|ask|consolidate|lint|status``: when a
daemon serves this vault's control socket, the command line sends it the command and prints
what it streams back, so the command uses the daemon's loaded model client and warm services
and this process never imports litellm. No socket, a dead daemon's socket file (connection
refused), a daemon that declines (another configuration or protocol version): None, and the
command runs in this process as it always did.

The daemon half is :mod:`runtime.handoff` (it runs the command's own handler on the daemon's
vault context; what it asks of the command line is ``cli.common.RegisteredCommandLine``).
The protocol itself is :mod:`runtime.control_protocol`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from ..runtime import control_protocol as proto
from ..runtime.handoff import serving

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 5.0


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
