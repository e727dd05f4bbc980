"""The daemon owns git's housekeeping: its commands never start a gc, it runs `gc --auto` itself
under the vault's write lock, and doctor's fsck waits for a gc another process started."""

from __future__ import annotations

import os
import subprocess
import sys

from wikiwright.core.config import Config
from wikiwright.core.vault import Vault
from wikiwright.vcs.repo import GitRepo, git_blob_id

from tests.helpers import daemon_log, git, start_daemon, wait_for


def _packs(vault: Vault) -> list[str]:
    return sorted(p.name for p in (vault.root / ".git" / "objects" / "pack").glob("*.pack"))


def _eager_gc(vault: Vault) -> None:
    """git would gc after every commit, in the foreground: any automatic gc shows as a pack.

    `gc --auto` estimates loose objects from the ones in .git/objects/17/; two there are over
    a gc.auto of 1."""
    git(vault.root, "config", "gc.auto", "1")
    git(vault.root, "config", "gc.autoDetach", "false")
    seeds = [f"seed {n}\n" for n in range(5000) if git_blob_id(f"seed {n}\n".encode()).startswith("17")][:2]
    for seed in seeds:
        subprocess.run(["git", "-C", str(vault.root), "hash-object", "-w", "--stdin"], input=seed, text=True,
                       check=True, capture_output=True)


def test_the_daemons_git_commands_never_start_an_automatic_gc(vault: Vault, config: Config) -> None:
    _eager_gc(vault)
    repo = GitRepo(vault.root, config.git.author_name, config.git.author_email)
    for n in range(3):
        (vault.wiki / f"page-{n}.md").write_text(f"# Page {n}\n")
        repo.commit_paths([f"wiki/page-{n}.md"], f"ingest: page {n}", {"Wikiwright-Operation": "ingest"})
    # Even `git commit` itself, which runs `gc --auto` afterwards, does not when the daemon runs it
    # (through its one command runner, private to vcs/, which every git command of the daemon takes).
    (vault.wiki / "page-x.md").write_text("# Page x\n")
    repo._run("add", "wiki/page-x.md")
    repo._run("commit", "-q", "-m", "direct commit")
    assert _packs(vault) == [] and not (vault.root / ".git" / "gc.pid").exists()
    # The same commit by a person's git does gc (so the check above could have failed).
    (vault.wiki / "page-y.md").write_text("# Page y\n")
    git(vault.root, "add", "wiki/page-y.md")
    git(vault.root, "commit", "-q", "-m", "a person's commit")
    assert _packs(vault) != []


def test_the_daemon_runs_gc_itself_when_the_queue_is_quiet(vault: Vault, isolated_env: dict[str, str]) -> None:
    _eager_gc(vault)
    assert _packs(vault) == []
    env = {**isolated_env, "WIKIWRIGHT_GIT_HOUSEKEEPING_MINUTES": "0.01"}
    proc = start_daemon(vault.root, env)
    try:
        wait_for(lambda: _packs(vault), timeout=30, what="the daemon's own gc --auto")
        assert proc.poll() is None, daemon_log(proc)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "git housekeeping" not in daemon_log(proc)  # no failure logged


def test_doctor_waits_for_a_gc_another_process_started(vault: Vault, isolated_env: dict[str, str]) -> None:
    # A stand-in for a person's long `git gc`: a live process named in .git/gc.pid.
    gc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        (vault.root / ".git" / "gc.pid").write_text(f"{gc.pid} {os.uname().nodename}")
        doctor = subprocess.Popen([sys.executable, "-m", "wikiwright", "doctor", "-v", "--vault", str(vault.root)],
                                  env=isolated_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert doctor.stderr is not None
            waited = ""
            for line in doctor.stderr:
                if "waiting for a git gc" in line:
                    waited = line
                    break
            assert waited, "doctor did not wait for the running gc"
            assert doctor.poll() is None  # still waiting: fsck has not run
            gc.kill()
            gc.wait()
            out, _ = doctor.communicate(timeout=60)
        finally:
            if doctor.poll() is None:
                doctor.kill()
        assert doctor.returncode == 0, out
        assert "git fsck" in out
    finally:
        if gc.poll() is None:
            gc.kill()
            gc.wait()
