"""The control socket's server and protocol in one process (real Unix sockets): streaming,
line buffering, a failing command, a decline, a path too long for sun_path, a stale file."""

from __future__ import annotations

import socket
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from wikiwright.runtime import control_protocol as proto
from wikiwright.runtime.control import ControlServer, Reply


def ask(path: Path, argv: list[str]) -> list[dict[str, Any]]:
    """Send one request; every message of the answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        with proto.short_address(path) as address:
            sock.connect(address)
        sock.sendall(proto.encode(proto.request(argv, "/", {})))
        messages = []
        with sock.makefile("rb") as stream:
            while (message := proto.read_message(stream)) is not None:
                messages.append(message)
        return messages


def execute(message: dict[str, Any], reply: Reply) -> int | None:
    command = message["argv"][0]
    if command == "decline":
        reply.send(proto.decline("not here"))
        return None
    if command == "fail":
        reply.out("half a line")
        raise RuntimeError("a bug")
    for n in range(3):
        reply.out(f"line {n}")  # written in pieces, as json.dump does
        reply.out("\n")
    reply.err("a warning\n")
    reply.out("no newline at the end")
    return 7


@pytest.fixture
def server(tmp_path: Path) -> Any:
    # Deep enough that .wikiwright/control.sock does not fit in sun_path (108 bytes).
    state = tmp_path / ("deep-" * 20) / ".wikiwright"
    state.mkdir(parents=True)
    # A socket file left by a killed daemon is replaced at start.
    with proto.short_address(proto.socket_path(state)) as address:
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(address)
        stale.close()
    control = ControlServer(state, execute)
    assert control.start()
    yield control
    control.stop()
    assert not control.path.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/fd addresses are Linux's")
def test_a_request_streams_lines_then_its_exit_code(server: ControlServer) -> None:
    assert len(str(server.path)) > proto.MAX_SOCKET_PATH
    assert stat.S_IMODE(server.path.stat().st_mode) == 0o600
    messages = ask(server.path, ["work"])
    assert messages == [
        {"t": "out", "s": "line 0\n"}, {"t": "out", "s": "line 1\n"}, {"t": "out", "s": "line 2\n"},
        {"t": "err", "s": "a warning\n"}, {"t": "out", "s": "no newline at the end"}, {"t": "exit", "code": 7},
    ]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/fd addresses are Linux's")
def test_a_failing_command_ends_with_an_error_and_a_decline_comes_alone(server: ControlServer) -> None:
    failed = ask(server.path, ["fail"])
    assert failed[-1] == {"t": "exit", "code": 1}
    assert {"t": "out", "s": "half a line"} in failed
    assert any(m["t"] == "err" and "a bug" in m["s"] for m in failed)
    assert ask(server.path, ["decline"]) == [{"t": "decline", "reason": "not here"}]
    # Another protocol version is declined, not guessed at.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        with proto.short_address(server.path) as address:
            sock.connect(address)
        sock.sendall(proto.encode({"v": 99, "argv": ["work"]}))
        with sock.makefile("rb") as stream:
            reply = proto.read_message(stream)
    assert reply is not None and reply["t"] == "decline" and "protocol version 99" in reply["reason"]


def test_config_env_keeps_what_shapes_the_configuration() -> None:
    env = {"HOME": "/h", "PATH": "/bin", "WIKIWRIGHT_LLM_MODEL": "m", "WIKIWRIGHT_VAULT": "/v",
           "WIKIWRIGHT_TEST_HOLD_MODEL_LOAD": "/x", "OPENAI_API_KEY": "k"}
    assert proto.config_env(env) == {"HOME": "/h", "WIKIWRIGHT_LLM_MODEL": "m"}


def test_a_daemon_that_dies_before_answering_leaves_the_command_to_run_here(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse
    import threading

    from wikiwright.cli.handoff import delegate
    from wikiwright.door.init import init_vault

    vault, _ = init_vault(tmp_path / "vault", "t", "t@localhost")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(proto.socket_path(vault.state)))
    listener.listen(1)
    requests: list[dict[str, Any]] = []

    def die_after_reading() -> None:  # what a daemon killed mid-request looks like to the client
        conn, _ = listener.accept()
        with conn, conn.makefile("rb") as stream:
            requests.append(proto.read_message(stream) or {})

    thread = threading.Thread(target=die_after_reading, daemon=True)
    thread.start()
    try:
        args = argparse.Namespace(command="status", vault=str(vault.root))
        assert delegate(args, ["status"]) is None  # not an exit code: the command runs here
    finally:
        thread.join(timeout=10)
        listener.close()
    assert requests and requests[0]["argv"] == ["status"]
    assert "the daemon stopped before answering; running the command here" in capsys.readouterr().err
