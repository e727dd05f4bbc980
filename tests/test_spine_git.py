"""Git behaviour of the spine and the CLI commands around it (issue 2, "Git" and the CLI).

Real repositories throughout: the user's own staged work, a held index.lock, a real merge
conflict, a detached HEAD; and the real CLI in a subprocess for init, the vault naming
rule, config origins and one-shot ingest.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
from wikiwright.core.config import Config
from wikiwright.core.vault import Vault
from wikiwright.runtime.status import gather

from tests.conftest import Services, open_services
from tests.helpers import cli, git, git_holding_index_lock, ingest_commits


def note(n: int) -> str:
    return f"# Note {n}\n\nNote number {n} records a decision about topic {n}. It matters.\n"


def git_ok(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(vault), *args], capture_output=True, text=True)


def daemon_like(config: Config, vault: Vault, lock_retry: float) -> Services:
    """Services opened as the daemon opens them (a vault context's wiring): git waits are
    reported as notices; a job waiting to commit is tried again soon."""
    services = open_services(config, vault, lock_retry=lock_retry)
    services.pipeline.retry_git_seconds = 0.2
    return services


def notices(services: Services) -> list[str]:
    return [n["message"] for n in gather(services.config, services.vault)["notices"]]


def assert_fsck_clean(vault: Path) -> None:
    result = git_ok(vault, "fsck", "--full", "--strict", "--no-dangling")
    assert result.returncode == 0, result.stderr
    assert not (result.stdout + result.stderr).strip(), result.stdout + result.stderr


# -- the user's own git work ------------------------------------------------------------------


def test_users_staged_file_stays_staged_and_uncommitted(services: Services) -> None:
    root = services.vault.root
    (root / "private.md").write_text("my own draft, staged but not ready to commit\n")
    schema = (root / "SCHEMA.md").read_text()
    (root / "SCHEMA.md").write_text(schema + "\nMy half-finished rule.\n")
    git(root, "add", "private.md", "SCHEMA.md")
    (root / "private.md").write_text("my own draft, plus unstaged words\n")
    staged_before = git(root, "diff", "--cached")
    unstaged_before = git(root, "diff")
    services.drop("a.md", note(1))
    services.drop("b.md", note(2))
    services.drain()
    assert len(ingest_commits(root)) == 2
    assert git(root, "diff", "--cached") == staged_before
    assert git(root, "diff") == unstaged_before
    assert git(root, "log", "--all", "--format=%H", "--", "private.md") == ""
    assert git(root, "log", "--format=%H", "--", "SCHEMA.md").count("\n") == 1  # only the init commit
    assert_fsck_clean(root)


def test_exactly_one_commit_per_ingest_with_trailers(services: Services) -> None:
    root = services.vault.root
    texts = {"alpha.md": note(1), "beta.txt": note(2), "gamma.md": note(3)}
    for name, text in texts.items():
        services.drop(name, text)
    services.drain()
    commits = ingest_commits(root)
    assert len(commits) == 3
    assert git(root, "rev-list", "--count", "HEAD").strip() == "4"  # init + one per ingest
    by_source = {}
    for sha in commits:
        trailers = git(root, "log", "-1", "--format=%(trailers:only,unfold)", sha)
        fields = dict(line.split(": ", 1) for line in trailers.strip().splitlines())
        by_source[fields["Wikiwright-Source"].split(" ")[0]] = (sha, fields)
    assert set(by_source) == {f"raw/{name}" for name in texts}
    for name, text in texts.items():
        sha, fields = by_source[f"raw/{name}"]
        page = f"wiki/sources/src-{Path(name).stem}.md"
        digest = hashlib.sha256(text.encode()).hexdigest()
        assert fields["Wikiwright-Source"] == f"raw/{name} sha256:{digest}"
        # The source page, and the overview whose generated block lists the newest sources.
        assert fields["Wikiwright-Pages"].split(", ")[0] == page
        assert set(fields["Wikiwright-Pages"].split(", ")) <= {page, "wiki/overview.md"}
        assert fields["Wikiwright-Engine"] == "offline"
        assert fields["Wikiwright-Operation"] == "ingest"
        files = git(root, "show", "--name-only", "--format=", sha).split()
        # The source itself is in its ingest's commit (the first one also adds the daemon's
        # .gitignore section that keeps the rest of raw/ out of git).
        expected = {page, "wiki/index.md", "wiki/log.md", f"raw/{name}"}
        assert expected <= set(files) <= {*expected, ".gitignore", "wiki/overview.md"}
        assert git(root, "log", "-1", "--format=%an <%ae>", sha).strip() == "wikiwright <wikiwright@localhost>"
    assert git(root, "status", "--porcelain", "--", "wiki") == ""
    assert_fsck_clean(root)


# -- a busy or odd repository ----------------------------------------------------------------


def test_index_lock_is_retried_with_backoff_until_released(config: Config, vault: Vault) -> None:
    services = daemon_like(config, vault, lock_retry=10.0)
    lock = vault.root / ".git" / "index.lock"
    try:
        lock.write_text("")
        threading.Timer(0.8, lock.unlink).start()
        services.drop("a.md", note(1))
        started = time.monotonic()
        results = services.drain()
        waited = time.monotonic() - started
        assert [r.state for r in results] == ["ingested"]
        assert waited >= 0.7, "the commit went ahead while index.lock was held?"
        assert len(ingest_commits(vault.root)) == 1
        assert notices(services) == []  # cleared once the commit went through
    finally:
        services.close()


def test_index_lock_held_too_long_leaves_the_job_pending_with_a_notice(config: Config, vault: Vault) -> None:
    services = daemon_like(config, vault, lock_retry=0.4)
    lock = vault.root / ".git" / "index.lock"
    holder = ExitStack()  # a live git process holds the lock (a file alone, held by nobody, is removed)
    try:
        holder.enter_context(git_holding_index_lock(vault.root))
        services.drop("a.md", note(1))
        results = services.drain()
        assert [r.state for r in results] == ["pending"]
        data = gather(services.config, vault)
        assert [row["path"] for row in data["pending"]] == ["raw/a.md"]
        assert data["pending"][0]["reason"].startswith("waiting to commit: another git process holds "
                                                       ".git/index.lock")
        assert any("index.lock" in message and "commits resume when it is released" in message
                   for message in notices(services))
        out = cli("status", "--vault", str(vault.root)).stdout
        assert "Notice:  another git process holds .git/index.lock" in out
        assert ingest_commits(vault.root) == []
        assert lock.exists(), "wikiwright must never remove the user's lock"
        holder.close()
        time.sleep(0.25)
        results = services.drain()
        assert [r.state for r in results] == ["ingested"]
        assert len(ingest_commits(vault.root)) == 1
        assert notices(services) == []
        assert git(vault.root, "status", "--porcelain", "--", "wiki") == ""
    finally:
        holder.close()
        services.close()


def _conflicted_merge(root: Path) -> None:
    (root / "plan.md").write_text("line one\n")
    git(root, "add", "plan.md")
    git(root, "commit", "-q", "-m", "plan")
    git(root, "checkout", "-q", "-b", "other")
    (root / "plan.md").write_text("line one, as the other branch has it\n")
    git(root, "commit", "-q", "-am", "other plan")
    git(root, "checkout", "-q", "main")
    (root / "plan.md").write_text("line one, as main has it\n")
    git(root, "commit", "-q", "-am", "main plan")
    assert git_ok(root, "merge", "other").returncode != 0
    assert (root / ".git" / "MERGE_HEAD").exists()


def test_merge_in_progress_pauses_commits_until_it_is_finished(config: Config, vault: Vault) -> None:
    services = daemon_like(config, vault, lock_retry=1.0)
    root = vault.root
    try:
        _conflicted_merge(root)
        services.drop("a.md", note(1))
        assert [r.state for r in services.drain()] == ["pending"]
        data = gather(services.config, vault)
        assert data["git_problem"] == "a merge is in progress in the vault's git repository; finish or abort it"
        assert data["pending"][0]["reason"] == f"waiting to commit: {data['git_problem']}"
        out = cli("status", "--vault", str(root)).stdout
        assert "PAUSED:  commits wait: a merge is in progress" in out
        assert ingest_commits(root) == []
        # The person finishes the merge; nothing of ours may ride along in it.
        (root / "plan.md").write_text("line one, merged by hand\n")
        git(root, "add", "plan.md")
        git(root, "commit", "-q", "--no-edit")
        merge_files = git(root, "show", "--name-only", "--format=", "--first-parent", "HEAD").split()
        assert merge_files == ["plan.md"]
        time.sleep(0.25)
        assert [r.state for r in services.drain()] == ["ingested"]
        assert len(ingest_commits(root)) == 1
        assert gather(services.config, vault)["git_problem"] is None
        assert notices(services) == []
        assert_fsck_clean(root)
    finally:
        services.close()


def test_detached_head_pauses_commits_until_a_branch_is_checked_out(config: Config, vault: Vault) -> None:
    services = daemon_like(config, vault, lock_retry=1.0)
    root = vault.root
    try:
        git(root, "checkout", "-q", "--detach")
        services.drop("a.md", note(1))
        assert [r.state for r in services.drain()] == ["pending"]
        problem = gather(services.config, vault)["git_problem"]
        assert problem is not None and problem.startswith("HEAD is detached")
        assert "check out a branch to resume commits" in problem
        assert any("HEAD is detached" in message for message in notices(services))
        assert ingest_commits(root) == []
        git(root, "checkout", "-q", "main")
        time.sleep(0.25)
        assert [r.state for r in services.drain()] == ["ingested"]
        commits = ingest_commits(root)
        assert len(commits) == 1
        assert git(root, "rev-parse", "main").strip() == commits[0]
        assert notices(services) == []
    finally:
        services.close()


# -- the CLI: init, the vault naming rule, config, one-shot ingest ----------------------------------


def test_init_twice_changes_nothing_and_says_so(tmp_path: Path) -> None:
    target = tmp_path / "Wiki"
    first = cli("init", str(target))
    assert first.returncode == 0, first.stderr
    assert f"Created vault {target}" in first.stdout
    for part in ("raw", "logs", "wiki/sources", ".wikiwright"):
        assert (target / part).is_dir()
    for name in ("SCHEMA.md", "REVIEW.md", ".gitignore", "wiki/index.md", "wiki/log.md", "wiki/overview.md"):
        assert (target / name).is_file()
    assert ".wikiwright/" in (target / ".gitignore").read_text().splitlines()
    head = git(target, "rev-parse", "HEAD")
    files = {p: p.read_bytes() for p in target.rglob("*") if p.is_file() and ".git" not in p.parts}
    second = cli("init", str(target))
    assert second.returncode == 0, second.stderr
    assert f"{target} is already a complete vault; nothing changed." in second.stdout
    assert "Created" not in second.stdout
    assert git(target, "rev-parse", "HEAD") == head
    assert git(target, "status", "--porcelain") == ""
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file() and ".git" not in p.parts} == files


def _vault_named(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    result = cli("status", "--json", *args, cwd=cwd, env=env)
    assert result.returncode == 0, result.stderr
    return str(json.loads(result.stdout)["vault"])


def test_vault_naming_rule(tmp_path: Path) -> None:
    home_vault, other, elsewhere = tmp_path / "Home", tmp_path / "Other", tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert cli("init", str(home_vault)).returncode == 0  # recorded as the default vault
    assert cli("init", "--no-default", str(other)).returncode == 0
    env = dict(os.environ)
    # 4. the default vault that init recorded
    assert _vault_named(elsewhere) == str(home_vault)
    # 3. the current directory when it is inside a vault (any depth) beats the default
    assert _vault_named(other / "wiki" / "sources") == str(other)
    # 2. WIKIWRIGHT_VAULT beats the current directory
    assert _vault_named(other, env={**env, "WIKIWRIGHT_VAULT": str(home_vault)}) == str(home_vault)
    # 1. --vault beats everything
    assert _vault_named(home_vault, "--vault", str(other),
                        env={**env, "WIKIWRIGHT_VAULT": str(home_vault)}) == str(other)
    # Clear errors, no traceback.
    bad = cli("status", "--vault", str(elsewhere), cwd=home_vault)
    assert bad.returncode == 2
    assert bad.stderr.strip() == (f"wikiwright: --vault {elsewhere}: not a wikiwright vault "
                                  f"(run `wikiwright init {elsewhere}`)")
    bad = cli("status", cwd=home_vault, env={**env, "WIKIWRIGHT_VAULT": str(elsewhere)})
    assert bad.returncode == 2 and "WIKIWRIGHT_VAULT" in bad.stderr and "Traceback" not in bad.stderr
    fresh = {**env, "XDG_CONFIG_HOME": str(tmp_path / "fresh-config")}
    none = cli("status", cwd=elsewhere, env=fresh)
    assert none.returncode == 2
    assert "no vault: pass --vault PATH, set WIKIWRIGHT_VAULT, run inside a vault" in none.stderr
    assert "Traceback" not in none.stderr


def test_config_shows_where_each_value_came_from(vault: Vault) -> None:
    user_file = Path(os.environ["XDG_CONFIG_HOME"]) / "wikiwright" / "config.toml"
    user_file.parent.mkdir(parents=True)
    user_file.write_text("[ingest]\nworkers = 3\n[watch]\nrescan_minutes = 9.0\n")
    vault_file = vault.state / "config.toml"
    vault_file.write_text("[watch]\nrescan_minutes = 7.5\n[git]\nauthor_name = \"Vault Bot\"\n")
    env = {**os.environ, "WIKIWRIGHT_GIT_LOCK_RETRY_SECONDS": "12"}
    result = cli("config", "--json", "--vault", str(vault.root), env=env)
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout)["values"]
    assert values["llm.timeout"] == {"value": 120.0, "from": "shipped defaults"}
    assert values["ingest.workers"] == {"value": 3, "from": str(user_file)}
    assert values["watch.rescan_minutes"] == {"value": 7.5, "from": str(vault_file)}  # vault beats user
    assert values["git.author_name"] == {"value": "Vault Bot", "from": str(vault_file)}
    assert values["git.lock_retry_seconds"] == {"value": 12.0, "from": "env WIKIWRIGHT_GIT_LOCK_RETRY_SECONDS"}
    text = cli("config", "--vault", str(vault.root), env=env).stdout
    lines = {line.split("=")[0].strip(): line for line in text.splitlines() if not line.startswith("#")}
    assert lines["ingest.workers"].rstrip().endswith(f"# {user_file}")
    assert lines["watch.rescan_minutes"].rstrip().endswith(f"# {vault_file}")
    assert lines["git.lock_retry_seconds"].rstrip().endswith("# env WIKIWRIGHT_GIT_LOCK_RETRY_SECONDS")
    assert lines["llm.timeout"].rstrip().endswith("# shipped defaults")
    # A bad value names the layer and the key; no traceback.
    vault_file.write_text("[ingest]\nworkers = \"many\"\n")
    bad = cli("config", "--vault", str(vault.root))
    assert bad.returncode == 2
    assert bad.stderr.strip() == f"wikiwright: {vault_file}: ingest.workers: expected int, got 'many'"
    assert "Traceback" not in bad.stderr


def test_ingest_command_copies_outside_files_into_raw_with_progress(vault: Vault, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    files = {"alpha.md": note(1), "beta.txt": note(2), "empty.md": ""}
    for name, text in files.items():
        (outside / name).write_text(text)
    # A different file already holds one of the names in raw/: the copy gets a new name.
    (vault.raw / "beta.txt").write_text(note(9))
    result = cli("ingest", "--vault", str(vault.root), *[str(outside / n) for n in files])
    assert result.returncode == 1, result.stderr  # one input was quarantined
    lines = result.stdout.splitlines()
    assert len(lines) == 3, result.stdout
    assert any(line.startswith("[") and "raw/empty.md: quarantined — empty" in line for line in lines)
    assert any(line.startswith("[") and "raw/alpha.md: ingested — Note 1 (" in line for line in lines)
    assert any(line.startswith("[") and "raw/beta-2.txt: ingested — Note 2 (" in line for line in lines)
    assert sorted(line.split("]")[0] for line in lines) == ["[1/3", "[2/3", "[3/3"]
    for name, text in files.items():
        assert (outside / name).read_text() == text  # the originals are untouched
    assert (vault.raw / "alpha.md").read_text() == files["alpha.md"]
    assert (vault.raw / "beta-2.txt").read_text() == files["beta.txt"]
    assert (vault.raw / "beta.txt").read_text() == note(9)
    assert len(ingest_commits(vault.root)) == 2
    # Again: the same bytes are already in raw/ and already ingested; nothing runs twice.
    again = cli("ingest", "--vault", str(vault.root), str(outside / "alpha.md"))
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip().startswith("[1/1] raw/alpha.md: ingested")
    assert len(ingest_commits(vault.root)) == 2
    assert sorted(p.name for p in vault.raw.iterdir()) == ["alpha.md", "beta-2.txt", "beta.txt", "empty.md"]


def test_ingest_command_reports_work_left_pending(vault: Vault, tmp_path: Path) -> None:
    git(vault.root, "checkout", "-q", "--detach")
    source = tmp_path / "a.md"
    source.write_text(note(1))
    result = cli("ingest", "--vault", str(vault.root), str(source))
    assert "raw/a.md: pending" in result.stdout, result.stdout + result.stderr
    assert "HEAD is detached" in result.stdout
    assert result.returncode == 1
    assert ingest_commits(vault.root) == []


@pytest.mark.parametrize("name", ["no-such-file.md"])
def test_ingest_command_names_a_missing_file(vault: Vault, tmp_path: Path, name: str) -> None:
    result = cli("ingest", "--vault", str(vault.root), str(tmp_path / name))
    assert result.returncode == 2
    assert result.stderr.strip() == f"wikiwright: no such file: {tmp_path / name}"


def test_commit_of_unchanged_paths_is_no_commit(services: Services) -> None:
    root = services.vault.root
    (root / "mine.md").write_text("staged by the person\n")
    git(root, "add", "mine.md")
    head = git(root, "rev-parse", "HEAD").strip()
    assert services.repo.commit_paths(["wiki/index.md", "wiki/log.md"], "nothing", {}) is None
    assert git(root, "rev-parse", "HEAD").strip() == head
    assert git(root, "diff", "--cached", "--name-only") == "mine.md\n"
    (root / "wiki" / "overview.md").write_text("# Overview\n\nChanged.\n")
    sha = services.repo.commit_paths(["wiki/index.md", "wiki/overview.md"], "overview", {"K": "v"})
    assert sha == git(root, "rev-parse", "HEAD").strip() != head
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["wiki/overview.md"]
    assert git(root, "diff", "--cached", "--name-only") == "mine.md\n"
