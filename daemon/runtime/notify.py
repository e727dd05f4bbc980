"""The systemd notify protocol, with the standard library only.

One datagram to the AF_UNIX socket named by ``$NOTIFY_SOCKET`` (a leading ``@`` is the
abstract namespace). A no-op returning False where the variable is unset: foreground runs,
macOS, tests.
"""

from __future__ import annotations

import logging
import os
import socket

log = logging.getLogger(__name__)

NOTIFY_TIMEOUT = 2.0


def sd_notify(message: str) -> bool:
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            # A datagram send blocks while the receiver's queue is full (a service manager that
            # has stopped reading): the daemon's loop must never hang on a status ping.
            sock.settimeout(NOTIFY_TIMEOUT)
            sock.connect(address)
            sock.sendall(message.encode("utf-8"))
    except OSError as exc:
        log.warning("sd_notify failed: %s", exc)
        return False
    return True


def watchdog_interval() -> float | None:
    """Seconds between WATCHDOG=1 pings (half of WatchdogSec), or None when not asked."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        return int(usec) / 2_000_000
    except ValueError:
        return None
