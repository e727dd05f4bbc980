"""The vault renamed under a running daemon: it notices, says so, exits non-zero, recreates nothing."""

from __future__ import annotations

import json

import pytest
from wikiwright.core.vault import Vault

from tests.helpers import daemon_log, start_daemon, wait_for


@pytest.mark.parametrize("replaced", [False, True], ids=["renamed", "renamed-and-replaced"])
def test_a_moved_vault_stops_the_daemon_with_an_error_and_nothing_appears_at_the_old_path(
    vault: Vault, isolated_env: dict[str, str], replaced: bool
) -> None:
    proc = start_daemon(vault.root, isolated_env)
    try:
        heartbeat = vault.state / "heartbeat.json"
        wait_for(lambda: heartbeat.exists() and not json.loads(heartbeat.read_text())["stopped"], timeout=30,
                 what="the daemon's first heartbeat")
        moved_to = vault.root.with_name("vault-renamed")
        vault.root.rename(moved_to)
        if replaced:
            vault.root.mkdir()  # a new, empty folder where the vault was
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = daemon_log(proc)
    assert code == 4, log
    assert "was moved, renamed or deleted" in log or "was replaced by another folder" in log, log
    assert "start it again on the vault's new path" in log
    if replaced:
        assert list(vault.root.iterdir()) == []  # no .wikiwright/, no heartbeat, no lock, no raw/
    else:
        assert not vault.root.exists()
    # The vault itself is intact where the person put it.
    assert (moved_to / ".wikiwright" / "state.db").exists() and (moved_to / "wiki" / "index.md").exists()
