"""The systemd notify ping never hangs the daemon, even when nothing reads the socket."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest
from wikiwright.runtime.notify import sd_notify


def test_a_full_notify_socket_makes_the_ping_fail_instead_of_blocking(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "notify.sock"
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(str(path))
    filler = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    filler.connect(str(path))
    filler.setblocking(False)
    try:
        while True:  # a service manager that stopped reading: its queue is full
            filler.send(b"WATCHDOG=1")
    except BlockingIOError:
        pass
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    result: list[bool] = []
    pinger = threading.Thread(target=lambda: result.append(sd_notify("WATCHDOG=1")), daemon=True)
    try:
        pinger.start()
        pinger.join(60)
        assert not pinger.is_alive(), "sd_notify blocked on a full socket"
        assert result == [False]
    finally:
        filler.close()
        receiver.close()
