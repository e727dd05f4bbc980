"""Revert and doctor as history grows.

revert: a vault with N offline-engine sources (tests/undo_corpus.py documents, ingested with
the real CLI in one `wikiwright ingest`), then `wikiwright revert` of its 10th ingest, timed
end to end (a process start included). Must stay under 5 s at 1,000 sources. Baselines in the
same run: `git revert --no-edit` of that commit on a copy of the vault, one more ingest into
the same vault, and a bare process start.

doctor: a history of M operations written with `git fast-import` (daemon commits that add a
page and append to log.md, every tenth a person's edit of a page), then `wikiwright doctor
--no-repair` three times: the first run (walks everything), a second run after one more
commit (incremental: only the new commit and its objects), and `--full`. Must stay under 2 s
at 1,000 operations after the first run.

    .venv/bin/python bench/bench_undo.py            # revert at 1,000 sources; doctor at 1,000 and 5,000
    .venv/bin/python bench/bench_undo.py --quick    # revert at 120 sources; doctor at 1,000 (about 2 minutes)
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository, for tests.*

from tests.undo_corpus import corpus, document
from wikiwright.door.init import init_vault

PY = sys.executable


CPU: list[float] = [0.0]  # CPU seconds (user + system) of the last command and its git children


def _cli(*args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([PY, "-m", "wikiwright", *args], capture_output=True, text=True, env=dict(os.environ))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU[0] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.perf_counter() - started, done


def bench_revert(tmp: Path, sources: int) -> None:
    vault, _ = init_vault(tmp / f"revert-{sources}", "wikiwright", "wikiwright@localhost")
    for rel, text in corpus(sources):
        path = vault.raw / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    took, done = _cli("ingest", "--vault", str(vault.root), str(vault.raw))
    assert done.returncode == 0, done.stderr[-2000:]
    log = subprocess.run(["git", "-C", str(vault.root), "log", "--format=%H", "--reverse",
                          "--grep=Wikiwright-Operation: ingest"], capture_output=True, text=True, check=True)
    tenth = log.stdout.split()[9]
    # Baseline 1: `git revert --no-edit` of the same commit on a copy of the vault (git's own
    # undo: it reverse-applies the commit's diff and, at this size, stops on conflicts).
    copy = tmp / f"revert-{sources}-git"
    shutil.copytree(vault.root, copy, symlinks=True)
    started = time.perf_counter()
    git_revert = subprocess.run(["git", "-C", str(copy), "revert", "--no-edit", tenth], capture_output=True, text=True)
    git_seconds = time.perf_counter() - started
    git_outcome = "committed" if git_revert.returncode == 0 else "stopped on conflicts"
    seconds, done = _cli("revert", "--vault", str(vault.root), tenth)
    assert done.returncode == 0, done.stdout + done.stderr
    revert_cpu = CPU[0]
    # Baseline 2: one more ingest into the same vault (one source, the same process start).
    rel, text = document(sources)
    path = vault.raw / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    one, done = _cli("ingest", "--vault", str(vault.root), str(path))
    assert done.returncode == 0, done.stderr[-2000:]
    one_cpu = CPU[0]
    start, _ = _cli("--help")
    print(f"revert of the 10th of {sources} sources: {seconds:.2f} s wall, {revert_cpu:.2f} s CPU"
          + ("  [over 5 s]" if seconds > 5 else ""))
    print(f"  baselines in this run: one more ingest {one:.2f} s wall, {one_cpu:.2f} s CPU "
          f"(revert/ingest {seconds / one:.2f}x wall, {revert_cpu / one_cpu:.2f}x CPU); "
          f"git revert --no-edit {git_seconds:.2f} s ({git_outcome}; revert/git {seconds / git_seconds:.0f}x); "
          f"process start (--help) {start:.2f} s; ingest of all {sources} took {took:.0f} s "
          f"({took / sources:.2f} s per source)")


def _history(root: Path, operations: int) -> None:
    """``operations`` commits through fast-import: wikiwright's and, every tenth, a person's."""
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    lines: list[str] = []
    log_text = "---\ntype: log\ntitle: Log\n---\n\n# Log\n"
    for n in range(operations):
        person = n % 10 == 9
        who = "Test Person <person@example.com>" if person else "wikiwright <wikiwright@localhost>"
        when = 1_700_000_000 + n
        if person:
            page = f"wiki/page-{n - 1}.md"
            content = f"---\ntype: topic\ntitle: Page {n - 1}\n---\n\n# Page {n - 1}\n\nA person's line {n}.\n"
            message = "user-edit: edits\n"
            files = [(page, content)]
        else:
            page = f"wiki/page-{n}.md"
            content = f"---\ntype: topic\ntitle: Page {n}\n---\n\n# Page {n}\n\nWritten by wikiwright.\n"
            log_text += f"\n## [2026-01-01] ingest | Page {n}\n- pages: [[page-{n}]]\n"
            message = f"ingest: Page {n}\n\nWikiwright-Operation: ingest\n"
            files = [(page, content), ("wiki/log.md", log_text)]
        lines.append(f"commit refs/heads/main\nmark :{n + 1}\nauthor {who} {when} +0000\n"
                     f"committer {who} {when} +0000\ndata {len(message.encode())}\n{message}")
        if n == 0:
            lines.append(f"from {head}\n")
        for path, text in files:
            data = text.encode()
            lines.append(f"M 100644 inline {path}\ndata {len(data)}\n{text}\n")
    subprocess.run(["git", "-C", str(root), "fast-import", "--quiet"], input="".join(lines).encode(), check=True)
    subprocess.run(["git", "-C", str(root), "reset", "-q", "--hard", "main"], check=True)


def bench_doctor(tmp: Path, operations: int) -> None:
    vault, _ = init_vault(tmp / f"doctor-{operations}", "wikiwright", "wikiwright@localhost")
    _history(vault.root, operations)
    first, done = _cli("doctor", "--no-repair", "--vault", str(vault.root))
    assert "person lines" in done.stdout, done.stdout + done.stderr
    page = vault.wiki / "page-0.md"
    page.write_text(page.read_text() + "\nOne more line.\n")
    subprocess.run(["git", "-C", str(vault.root), "commit", "-q", "-am", "one more"], check=True)
    second, done = _cli("doctor", "--no-repair", "--vault", str(vault.root))
    second_cpu = CPU[0]
    assert "1 new commit(s) walked" in done.stdout, done.stdout
    full, _ = _cli("doctor", "--no-repair", "--full", "--vault", str(vault.root))
    print(f"doctor at {operations} operations: first run {first:.2f} s, after one more commit {second:.2f} s "
          f"({second_cpu:.2f} s CPU), --full {full:.2f} s" + ("  [incremental over 2 s]" if second > 2 else ""))


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for operations in ((1000,) if quick else (1000, 5000)):
            bench_doctor(base, operations)
        bench_revert(base, 120 if quick else 1000)


if __name__ == "__main__":
    main(sys.argv[1:])
