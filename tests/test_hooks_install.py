"""`wikiwright hooks install/uninstall/status` on real git repositories and real settings files.

The git hooks are installed by the real CLI from the venv, and real `git commit`, `--amend` and
`rebase` runs fire them; the Claude Code hook is installed into a settings file in the test's
own HOME (the isolated_env fixture points HOME and the XDG folders into tmp_path).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

from wikiwright.core.vault import Vault
from wikiwright.memory.dailylog import parse_log

from tests.helpers import cli, git, wait_for

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"


def _log_text(vault: Vault) -> str:
    return "".join(p.read_text() for p in sorted(vault.logs.glob("*.md")))


def _code_repo(tmp_path: Path, name: str = "api") -> Path:
    repo = tmp_path / name
    repo.mkdir()
    git(repo, "init", "-q")
    return repo


def _settled(repo: Path) -> bool:
    """Nothing queued and no background logger running in the repository."""
    folder = repo / ".git" / "wikiwright"
    queue = folder / "queue"
    return (not queue.exists() or not any(queue.iterdir())) and not (folder / "draining").exists()


def _commit(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", *args], env=env,
                          capture_output=True, text=True, check=True)


def _lines(vault: Vault) -> list[str]:
    return [o.text for o in parse_log(_log_text(vault), date.today()).observations()]


def test_a_burst_of_commits_logs_each_commit_once(vault: Vault, tmp_path: Path) -> None:
    repo = _code_repo(tmp_path)
    env = {**os.environ, "WIKIWRIGHT_VAULT": str(vault.root)}
    installed = cli("hooks", "install", "git", str(repo), env=env)
    assert installed.returncode == 0, installed.stderr
    hook = (repo / ".git" / "hooks" / "post-commit").read_text()
    assert f'"${{WIKIWRIGHT_BIN:-{Path(sys.executable).parent / "wikiwright"}}}"' in hook  # the venv's, absolute
    started = time.monotonic()
    subprocess.run(["sh", "-c", 'for i in $(seq 1 20); do git commit -q --allow-empty -m "burst $i"; done'],
                   cwd=repo, env=env, check=True)
    print(f"20 commits with the hook installed took {time.monotonic() - started:.2f}s")
    wait_for(lambda: _settled(repo) and _log_text(vault).count("burst ") >= 20, timeout=30,
             what="the burst logged")
    shas = git(repo, "log", "--reverse", "--format=%h %s").splitlines()
    assert _lines(vault) == [f"{subject} ({sha[:7]} on main)" for sha, subject in (s.split(" ", 1) for s in shas)]
    assert len(parse_log(_log_text(vault), date.today()).sessions) == 1  # a day's commits: one session
    # Running the logger again logs nothing twice.
    again = cli("hook", "git-post-commit", "--repo", str(repo), env=env)
    assert again.returncode == 0 and _log_text(vault).count("burst ") == 20


def test_amend_and_rebase_are_logged_once_each_as_such(vault: Vault, tmp_path: Path) -> None:
    repo = _code_repo(tmp_path)
    env = {**os.environ, "WIKIWRIGHT_VAULT": str(vault.root)}
    # A post-rewrite hook that was there before keeps working, standard input included.
    hooks = repo / ".git" / "hooks"
    seen = tmp_path / "their-rewrite.txt"
    (hooks / "post-rewrite").write_text(f"#!/bin/sh\necho \"$1\" >> {seen}\ncat >> {seen}\n")
    (hooks / "post-rewrite").chmod(0o755)
    assert cli("hooks", "install", "git", str(repo), env=env).returncode == 0
    _commit(repo, env, "-m", "base")
    _commit(repo, env, "-m", "export pages")
    wait_for(lambda: _settled(repo) and "export pages" in _log_text(vault), what="the commits logged")
    old = git(repo, "rev-parse", "HEAD").strip()
    _commit(repo, env, "--amend", "-m", "export pages 500 at a time")
    new = git(repo, "rev-parse", "HEAD").strip()
    wait_for(lambda: _settled(repo) and "amended:" in _log_text(vault), what="the amend logged")
    git(repo, "checkout", "-q", "-b", "feat", "HEAD~1")
    _commit(repo, env, "-m", "feat one")
    _commit(repo, env, "-m", "feat two")
    wait_for(lambda: _settled(repo) and "feat two" in _log_text(vault), what="the feature commits logged")
    subprocess.run(["git", "-C", str(repo), "rebase", "-q", "main"], env=env, check=True, capture_output=True)
    wait_for(lambda: _settled(repo) and "rebased" in _log_text(vault), what="the rebase logged")
    lines = _lines(vault)
    assert lines[:4] == [
        f"base ({git(repo, 'rev-parse', '--short=7', 'main~1').strip()} on main)",
        f"export pages ({old[:7]} on main)",
        f"amended: export pages 500 at a time ({old[:7]} → {new[:7]} on main)",
        lines[3],
    ]
    assert lines[3].startswith("feat one (") and lines[4].startswith("feat two (")
    tip = git(repo, "rev-parse", "--short=7", "feat").strip()
    assert lines[5:] == [f"rebased 2 commits on feat: feat one; feat two (now {tip})"]
    # The person's own post-rewrite hook saw both rewrites with their old -> new lines.
    theirs = seen.read_text()
    assert theirs.startswith(f"amend\n{old} {new}") and "rebase\n" in theirs and theirs.count("\n") >= 5


def test_git_hook_keeps_an_existing_hook_and_uninstall_restores_it(vault: Vault, tmp_path: Path) -> None:
    repo = _code_repo(tmp_path)
    env = {**os.environ, "WIKIWRIGHT_VAULT": str(vault.root)}
    marker = tmp_path / "their-hook-ran"
    theirs = f"#!/bin/sh\n# the team's hook\ntouch {marker}\nexit 0\n"
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.write_text(theirs)
    hook.chmod(0o755)
    first = cli("hooks", "install", "git", str(repo), env=env)
    assert first.returncode == 0, first.stderr
    assert "previous file is kept as" in first.stdout
    text = hook.read_text()
    assert text.startswith("#!/bin/sh\n# >>> wikiwright post-commit >>>") and text.endswith(theirs[len("#!/bin/sh\n"):])
    again = cli("hooks", "install", "git", str(repo), env=env)
    assert "unchanged" in again.stdout and hook.read_text() == text  # idempotent
    _commit(repo, env, "-m", "with both hooks")
    wait_for(lambda: _settled(repo) and "with both hooks" in _log_text(vault), what="the commit logged")
    assert marker.exists()  # their hook still ran
    status = cli("hooks", "status", "--json", env=env)
    data = json.loads(status.stdout)
    assert {h["target"] for h in data["hooks"]} == {str(hook), str(hook.with_name("post-rewrite"))}
    assert all(h["works"] for h in data["hooks"]) and data["vault"] == str(vault.root)
    removed = cli("hooks", "uninstall", "git", str(repo), env=env)
    assert removed.returncode == 0, removed.stderr
    assert hook.read_text() == theirs and not hook.with_name("post-rewrite").exists()
    assert json.loads(cli("hooks", "status", "--json", env=env).stdout)["hooks"] == []


def test_a_git_hook_that_cannot_run_wikiwright_says_so_and_loses_nothing(vault: Vault, tmp_path: Path) -> None:
    repo = _code_repo(tmp_path)
    env = {**os.environ, "WIKIWRIGHT_VAULT": str(vault.root)}
    gone = tmp_path / "old-venv" / "wikiwright"
    gone.parent.mkdir()
    gone.write_text(f"#!/bin/sh\nexec {sys.executable} -m wikiwright \"$@\"\n")
    gone.chmod(0o755)
    assert cli("hooks", "install", "git", str(repo), "--bin", str(gone), env=env).returncode == 0
    shutil.rmtree(gone.parent)  # the venv the hook points at was deleted
    made = _commit(repo, env, "-m", "made while wikiwright was gone")
    assert "not found" in made.stderr and "queue" in made.stderr
    hook_log = Path(env["XDG_STATE_HOME"]) / "wikiwright" / "log" / "hooks.log"
    assert "not found" in hook_log.read_text()
    status = cli("hooks", "status", env=env)
    assert status.returncode == 1 and "WILL NOT WORK" in status.stdout and "1 commit(s) queued" in status.stdout
    assert "nothing" not in _log_text(vault)
    # Installed again from the venv: the next commit logs the queued one too, in order.
    assert cli("hooks", "install", "git", str(repo), env=env).returncode == 0
    _commit(repo, env, "-m", "made after the reinstall")
    wait_for(lambda: _settled(repo) and "after the reinstall" in _log_text(vault), what="both commits logged")
    assert [line.split(" (")[0] for line in _lines(vault)] == ["made while wikiwright was gone",
                                                               "made after the reinstall"]


def test_git_hook_with_no_vault_leaves_a_trace(tmp_path: Path) -> None:
    repo = _code_repo(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "WIKIWRIGHT_VAULT"}
    assert cli("hooks", "install", "git", str(repo), env=env).returncode == 0
    _commit(repo, env, "-m", "no vault anywhere")
    hook_log = Path(env["XDG_STATE_HOME"]) / "wikiwright" / "log" / "hooks.log"
    wait_for(lambda: hook_log.exists() and "no vault" in hook_log.read_text(), what="the trace in the hook log")
    wait_for(lambda: not (repo / ".git" / "wikiwright" / "draining").exists(), what="the logger to finish")
    assert len(list((repo / ".git" / "wikiwright" / "queue").iterdir())) == 1  # kept for later


def _claude_settings(home: Path) -> Path:
    path = home / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{\n  "model": "opus",\n  "hooks": {\n    "SessionEnd": [\n      {"hooks": [{"type": "command", '
                    '"command": "echo other-tool"}]}\n    ]\n  }\n}\n')
    return path


def _claude_commands(settings: Path, event: str) -> list[str]:
    groups = json.loads(settings.read_text())["hooks"].get(event, [])
    return [hook["command"] for group in groups for hook in group["hooks"]]


def test_claude_code_hook_installs_from_the_venv_and_logs_sessions(vault: Vault, tmp_path: Path) -> None:
    env = {**os.environ, "PATH": "/usr/bin:/bin"}  # wikiwright is not on PATH: only the venv has it
    settings = _claude_settings(Path(env["HOME"]))
    original = settings.read_bytes()
    result = cli("hooks", "install", "claude-code", "--user", env=env)
    assert result.returncode == 0, result.stderr
    assert str(Path(sys.executable).parent / "wikiwright") in result.stdout
    assert _claude_commands(settings, "SessionEnd")[0] == "echo other-tool"  # the other hook intact
    [ours] = _claude_commands(settings, "SessionEnd")[1:]
    assert _claude_commands(settings, "PreCompact") == [ours]
    assert json.loads(settings.read_text())["model"] == "opus"
    assert cli("hooks", "install", "claude-code", env=env).stdout.startswith("claude-code: unchanged")

    transcript = tmp_path / "0d9b6a52.jsonl"
    shutil.copy(FIXTURES / "transcript.jsonl", transcript)
    hook_env = {**env, "WIKIWRIGHT_VAULT": str(vault.root)}

    def fire(payload: str) -> subprocess.CompletedProcess[str]:
        data = (FIXTURES / payload).read_text().replace("__TRANSCRIPT__", str(transcript))
        # As Claude Code runs a command hook: through the shell, the hook JSON on stdin.
        return subprocess.run(["sh", "-c", ours], input=data, env=hook_env, capture_output=True, text=True,
                              timeout=60, cwd=tmp_path)

    first = fire("pre-compact.json")
    assert first.returncode == 0 and first.stderr == "", first.stderr
    with transcript.open("ab") as handle:
        handle.write((FIXTURES / "transcript-after-compact.jsonl").read_bytes())
    second = fire("session-end.json")
    assert second.returncode == 0 and second.stderr == "", second.stderr
    parsed = parse_log(_log_text(vault), date.today())
    assert [s.label for s in parsed.sessions] == ["claude-code: billing (PreCompact)",
                                                  "claude-code: billing (SessionEnd)"]
    assert [s.counted for s in parsed.sessions] == [True, False]  # one Claude Code session counts once
    assert "The invoice export times out" in _log_text(vault)

    status = json.loads(cli("hooks", "status", "--json", env=hook_env).stdout)
    assert [(h["kind"], h["target"], h["works"]) for h in status["hooks"]] == [("claude-code", str(settings), True)]
    removed = cli("hooks", "uninstall", "claude-code", env=env)
    assert removed.returncode == 0 and "restored" in removed.stdout
    assert settings.read_bytes() == original


def test_claude_code_uninstall_keeps_later_changes_and_hooks_without_a_vault_say_why(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "WIKIWRIGHT_VAULT"}
    project = tmp_path / "proj"
    project.mkdir()
    assert cli("hooks", "install", "claude-code", "--project", str(project), env=env).returncode == 0
    settings = project / ".claude" / "settings.json"
    [ours] = _claude_commands(settings, "SessionEnd")
    # No vault anywhere: the hook still exits 0, and says why on stderr and in its log.
    payload = (FIXTURES / "session-end.json").read_text().replace("__TRANSCRIPT__", str(tmp_path / "t.jsonl"))
    fired = subprocess.run(["sh", "-c", ours], input=payload, env=env, capture_output=True, text=True,
                           timeout=60, cwd=tmp_path)
    assert fired.returncode == 0 and "skipped" in fired.stderr and "no vault" in fired.stderr
    hook_log = Path(env["XDG_STATE_HOME"]) / "wikiwright" / "log" / "hooks.log"
    assert "claude-code: skipped" in hook_log.read_text()
    assert "claude-code: skipped" in cli("hooks", "status", env=env).stdout
    # A person adds a hook of their own after the install: uninstall takes out only ours.
    data = json.loads(settings.read_text())
    data["hooks"]["Stop"] = [{"hooks": [{"type": "command", "command": "echo mine"}]}]
    settings.write_text(json.dumps(data))
    removed = cli("hooks", "uninstall", "claude-code", "--project", str(project), env=env)
    assert removed.returncode == 0 and "only the wikiwright entries" in removed.stdout
    assert json.loads(settings.read_text()) == {"hooks": {"Stop": [{"hooks": [{"type": "command",
                                                                                "command": "echo mine"}]}]}}
    broken = tmp_path / "broken"
    (broken / ".claude").mkdir(parents=True)
    (broken / ".claude" / "settings.json").write_text("{not json")
    refused = cli("hooks", "install", "claude-code", "--project", str(broken), env=env)
    assert refused.returncode != 0 and "not valid JSON" in refused.stderr
    assert (broken / ".claude" / "settings.json").read_text() == "{not json"


def test_shell_hook_installs_into_the_rc_file(vault: Vault, tmp_path: Path) -> None:
    env = {**os.environ, "SHELL": "/bin/bash", "PATH": "/usr/bin:/bin"}
    rc = Path(env["HOME"]) / ".bashrc"
    rc.write_text("alias ll='ls -l'\n")
    assert cli("hooks", "install", "shell", env=env).returncode == 0
    assert rc.read_text().startswith("alias ll='ls -l'\n# >>> wikiwright shell >>>")
    script = f". {rc}\nwwlog '🟡 noted from the shell'\n"
    ran = subprocess.run(["sh", "-c", script], env={**env, "WIKIWRIGHT_VAULT": str(vault.root)},
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    parsed = parse_log(_log_text(vault), date.today())
    assert [(s.label, s.counted) for s in parsed.sessions] == [(f"shell: {tmp_path.name}", False)]
    # No vault to be found: the note is not lost silently.
    lost = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert lost.returncode == 0 and "no vault" in lost.stderr and "wwlog: wikiwright log failed" in lost.stderr
    hook_log = Path(env["XDG_STATE_HOME"]) / "wikiwright" / "log" / "hooks.log"
    assert "wwlog: wikiwright log failed" in hook_log.read_text()
    assert cli("hooks", "uninstall", "shell", env=env).returncode == 0
    assert rc.read_text() == "alias ll='ls -l'\n"


# -- issue 20: the two installer cases -----------------------------------------------------------

def test_shell_install_refuses_an_rc_that_is_a_folder(tmp_path: Path) -> None:
    env = {**os.environ, "SHELL": "/bin/bash"}
    rc = Path(env["HOME"]) / ".bashrc"
    rc.mkdir()
    (rc / "kept.sh").write_text("echo mine\n")
    refused = cli("hooks", "install", "shell", env=env)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr, refused.stderr
    assert f"{rc} is a folder" in refused.stderr and "--rc FILE" in refused.stderr, refused.stderr
    assert rc.is_dir() and [p.name for p in rc.iterdir()] == ["kept.sh"]
    assert "No hooks installed" in cli("hooks", "status", env=env).stdout  # nothing recorded


def _team_repo(tmp_path: Path) -> Path:
    """A repository whose hooks live in a committed .githooks folder (core.hooksPath)."""
    repo = _code_repo(tmp_path, "team")
    (repo / ".githooks").mkdir()
    (repo / ".githooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (repo / ".githooks" / "pre-commit").chmod(0o755)
    git(repo, "config", "core.hooksPath", ".githooks")
    git(repo, "add", ".githooks")
    git(repo, "commit", "-q", "-m", "team hooks")
    return repo


def test_git_install_into_a_committed_hooks_path_needs_shared_and_carries_no_local_path(
        vault: Vault, tmp_path: Path) -> None:
    repo = _team_repo(tmp_path)
    env = {**os.environ, "WIKIWRIGHT_VAULT": str(vault.root)}
    refused = cli("hooks", "install", "git", str(repo), env=env)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr, refused.stderr
    assert "core.hooksPath" in refused.stderr and "--shared" in refused.stderr, refused.stderr
    assert sorted(p.name for p in (repo / ".githooks").iterdir()) == ["pre-commit"]  # nothing written

    shared = cli("hooks", "install", "git", str(repo), "--shared", env=env)
    assert shared.returncode == 0, shared.stderr
    assert "shared: no path of this machine" in shared.stdout and "commit it" in shared.stdout, shared.stdout
    for name in ("post-commit", "post-rewrite"):
        hook = (repo / ".githooks" / name).read_text()
        for local in (str(Path(sys.executable).parent), env["HOME"], str(tmp_path), os.environ.get("HOME", "")):
            assert local not in hook, (name, local)
        assert '"${WIKIWRIGHT_BIN:-wikiwright}"' in hook and "ww_shared=1" in hook
    # A teammate without wikiwright: the commit goes through and the hook says nothing.
    bare = {**env, "PATH": "/usr/bin:/bin"}
    bare.pop("WIKIWRIGHT_BIN", None)
    made = _commit(repo, bare, "-m", "made without wikiwright")
    assert made.stderr == "", made.stderr
    # Someone with wikiwright on PATH: the commit is logged.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "wikiwright"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} -m wikiwright \"$@\"\n")
    launcher.chmod(0o755)
    _commit(repo, {**bare, "PATH": f"{bin_dir}:/usr/bin:/bin"}, "-m", "made with wikiwright on PATH")
    wait_for(lambda: _settled(repo) and "made with wikiwright on PATH" in _log_text(vault),
             what="the commit logged through PATH")
    # A hooks folder git ignores is nobody else's: installed as usual, with this machine's path.
    other = _code_repo(tmp_path, "solo")
    (other / ".gitignore").write_text(".myhooks/\n")
    (other / ".myhooks").mkdir()
    git(other, "config", "core.hooksPath", ".myhooks")
    assert cli("hooks", "install", "git", str(other), env=env).returncode == 0
    assert str(Path(sys.executable).parent / "wikiwright") in (other / ".myhooks" / "post-commit").read_text()
