"""Fixtures: every test gets its own HOME, XDG folders and git identity, and a real vault."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from wikiwright.core.config import Config, WatchConfig, load_config
from wikiwright.core.vault import Vault
from wikiwright.door.init import init_vault
from wikiwright.ingest.llm import CostLedger
from wikiwright.ingest.pipeline import Pipeline
from wikiwright.intake.ledger import Ledger
from wikiwright.intake.watch import Registrar
from wikiwright.runtime.context import VaultContext
from wikiwright.vcs.repo import GitRepo
from wikiwright.wiki.catalog import Catalog

if shutil.which("git") is None:  # pragma: no cover
    pytest.skip("git is required", allow_module_level=True)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    for name in list(os.environ):
        if name.startswith("WIKIWRIGHT_") or name in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"):
            monkeypatch.delenv(name, raising=False)
    gitconfig = home / ".gitconfig"
    gitconfig.write_text("[user]\n\tname = Test Person\n\temail = person@example.com\n"
                         "[init]\n\tdefaultBranch = main\n")
    values = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_CONFIG_NOSYSTEM": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        # Fast stability checks in tests; the debounce logic itself is exercised all the same.
        "WIKIWRIGHT_WATCH_DEBOUNCE_SECONDS": "0.3",
        "WIKIWRIGHT_WATCH_POLL_INTERVAL_SECONDS": "0.1",
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    return dict(os.environ)


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    created, _ = init_vault(tmp_path / "vault", "wikiwright", "wikiwright@localhost")
    return created


@pytest.fixture
def config(vault: Vault) -> Config:
    return load_config(vault.root)


@dataclass
class Services:
    config: Config
    vault: Vault
    ledger: Ledger
    catalog: Catalog
    repo: GitRepo
    pipeline: Pipeline
    registrar: Registrar
    ctx: VaultContext | None = None  # None: parts a test wired by hand

    def drop(self, name: str, data: bytes | str) -> Path:
        """Put a file into raw/ and register it as the watcher would once it is stable."""
        path = self.vault.raw / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        self.registrar.register(path)
        return path

    def drain(self) -> list:
        results = []
        while (result := self.pipeline.drain_once()) is not None:
            results.append(result)
        return results

    def close(self) -> None:
        if self.ctx is not None:
            self.ctx.close()


def open_services(config: Config, vault: Vault, *, lock_retry: float = 2.0) -> Services:
    """A vault context on ``config`` and its ingest wiring, as a process opens them (the one
    wiring, :meth:`VaultContext.ingest_services`), git lock waits ``lock_retry`` seconds; the
    caller closes it (``Services.close``)."""
    ctx = VaultContext(config.replace(git=dataclasses.replace(config.git, lock_retry_seconds=lock_retry)), vault)
    try:
        wired = ctx.ingest_services()
    except BaseException:
        ctx.close()
        raise
    return Services(config, vault, ctx.ledger, ctx.catalog, ctx.repo, wired.pipeline, wired.registrar, ctx)


@pytest.fixture
def catalog(vault: Vault) -> Iterator[Catalog]:
    """The vault's catalogue, as a process's context holds it: for a test that lints alone."""
    opened = Catalog(vault)
    yield opened
    opened.close()


@pytest.fixture
def costs(vault: Vault) -> Iterator[CostLedger]:
    """The vault's cost ledger (llm.db), as a process's context holds it: for a test that calls
    the model client alone."""
    ledger = CostLedger(vault.state / "llm.db")
    yield ledger
    ledger.close()


@pytest.fixture
def services(config: Config, vault: Vault) -> Iterator[Services]:
    """The vault's context and its ingest wiring, as a process opens them (git lock waits short)."""
    opened = open_services(config, vault)
    yield opened
    opened.close()


def fast_watch() -> WatchConfig:
    return WatchConfig(debounce_seconds=0.3, poll_interval_seconds=0.1, rescan_minutes=5.0)


@pytest.fixture
def daemons() -> Iterator[list[subprocess.Popen[str]]]:
    """Every daemon a test starts; any still alive at the end is killed (a failed test)."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    """A 24 MB tmpfs to fill up (disk-full tests); skipped where it cannot be mounted."""
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a size-limited tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m,mode=0755", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)
