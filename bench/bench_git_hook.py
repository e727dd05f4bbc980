"""What the git hooks cost a commit, and how long until a burst of commits is in the daily log.

    .venv/bin/python bench/bench_git_hook.py              # 3 rounds of 20 commits
    .venv/bin/python bench/bench_git_hook.py --commits 50

Each round makes the same burst of empty commits (one shell loop of `git commit`) in two fresh
repositories, one without hooks (the baseline) and one with `wikiwright hooks install git`,
then waits until every commit is in the vault's daily log. Figures, median over the rounds:
  burst, no hooks       the baseline;
  burst, with hooks     the same burst: what the person waits for (the hook's synchronous part);
  until all logged      from the burst's start until the last commit is in the log (the
                        background logger: Python start-up, once per burst, plus the appends).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent / "wikiwright"


def _run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    return subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout


def _burst(repo: Path, commits: int, env: dict[str, str]) -> float:
    script = f'for i in $(seq 1 {commits}); do git commit -q --allow-empty -m "burst $i"; done'
    started = time.perf_counter()
    subprocess.run(["sh", "-c", script], cwd=repo, env=env, check=True)
    return time.perf_counter() - started


def one_round(base: Path, commits: int, env: dict[str, str]) -> tuple[float, float, float]:
    plain, hooked = base / "plain", base / "hooked"
    for repo in (plain, hooked):
        repo.mkdir()
        _run("git", "init", "-q", str(repo), env=env)
    _run(str(BIN), "hooks", "install", "git", str(hooked), env=env)
    logs = Path(env["WIKIWRIGHT_VAULT"]) / "logs"
    baseline = _burst(plain, commits, env)
    started = time.perf_counter()
    with_hooks = _burst(hooked, commits, env)
    deadline = time.monotonic() + 120
    while True:
        text = "".join(p.read_text() for p in logs.glob("*.md"))
        if all(f"- burst {i} (" in text for i in range(1, commits + 1)):
            break
        if time.monotonic() > deadline:
            raise SystemExit("the burst was not logged within 120 s")
        time.sleep(0.02)
    return baseline, with_hooks, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for _round in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp)
            home = base / "home"
            home.mkdir()
            (home / ".gitconfig").write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n"
                                             "[init]\n\tdefaultBranch = main\n")
            env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                   "XDG_DATA_HOME": str(home / ".share"), "XDG_STATE_HOME": str(home / ".state"),
                   "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"), "GIT_CONFIG_NOSYSTEM": "1"}
            _run(str(BIN), "init", str(base / "vault"), env=env)
            env["WIKIWRIGHT_VAULT"] = str(base / "vault")
            rows.append(one_round(base, args.commits, env))
    baseline, hooked, logged = (statistics.median(column) for column in zip(*rows, strict=True))
    print(f"{args.commits} commits, median of {args.rounds} rounds")
    print(f"{'burst, no hooks':<22}{baseline:8.3f} s  1.00x")
    print(f"{'burst, with hooks':<22}{hooked:8.3f} s  {hooked / baseline:.2f}x")
    print(f"{'until all logged':<22}{logged:8.3f} s  {logged / baseline:.2f}x")


if __name__ == "__main__":
    main()
