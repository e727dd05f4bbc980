"""The daemon's life, tested against the real CLI in a subprocess (issue 2, "Done when").

``wikiwright run`` on a fresh vault: sources and bad inputs dropped into raw/, commits,
pages, index/log, status, the user's staged work, signals, a second writer, restarts.
Every wait is a bounded poll.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path

from tests.helpers import cli, daemon_log, git, git_holding_index_lock, ingest_commits, start_daemon, wait_for


def fresh_vault(tmp_path: Path) -> Path:
    root = tmp_path / "Wiki"
    result = cli("init", "--no-default", str(root))
    assert result.returncode == 0, result.stderr
    return root


def launch(daemons: list[subprocess.Popen[str]], root: Path, env: dict[str, str] | None = None
           ) -> subprocess.Popen[str]:
    proc = start_daemon(root, env)
    daemons.append(proc)

    def ready() -> bool:
        assert proc.poll() is None, f"daemon exited early:\n{daemon_log(proc)}"
        try:
            beat = json.loads((root / ".wikiwright" / "heartbeat.json").read_text())
        except (OSError, ValueError):
            return False
        return bool(beat["pid"] == proc.pid and not beat["stopped"])

    wait_for(ready, timeout=20, what="the daemon to start")
    return proc


def stop(proc: subprocess.Popen[str], timeout: float = 20) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=timeout)


def status_json(root: Path) -> dict:
    result = cli("status", "--json", "--vault", str(root))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def recorded(root: Path) -> dict[str, tuple[str, str]]:
    """path -> (state, reason) for every file status knows, from `wikiwright status --json`."""
    data = status_json(root)
    rows: dict[str, tuple[str, str]] = {}
    for row in data["problems"] + data["pending"]:
        rows[row["path"]] = (row["state"], row["reason"])
    for row in data["duplicates"]:
        rows[row["path"]] = ("duplicate", row["reason"])
    return rows


def source_trailers(root: Path) -> list[str]:
    out = git(root, "log", "--format=%(trailers:key=Wikiwright-Source,valueonly,unfold)",
              "--grep=Wikiwright-Operation: ingest")
    return [line for line in out.splitlines() if line.strip()]


def note(n: int) -> str:
    return f"# Topic {n}\n\nTopic {n} is described here in one sentence. A second sentence adds detail {n}.\n"


def raw_snapshot(raw: Path) -> dict[str, object]:
    found: dict[str, object] = {}
    for path in sorted(raw.iterdir()):
        if path.is_symlink():
            found[path.name] = os.readlink(path)
        elif path.is_fifo():
            found[path.name] = "fifo"
        else:
            found[path.name] = path.read_bytes()
    return found


# -- the "Done when" test ------------------------------------------------------------------

GOOD = {
    "notes.md": "sources/src-notes",
    "call 10:30 #3 [draft].md": "sources/src-call-10-30-3-draft",
    "francais.txt": "sources/src-francais",
    "utf16.md": "sources/src-utf16",
    "page.html": "sources/src-page",
}
BAD = {
    "empty.md": ("quarantined", "empty: is empty or whitespace only"),
    "blank.txt": ("quarantined", "empty: is empty or whitespace only"),
    "blob.bin": ("quarantined", "binary: contains NUL bytes"),
    "nul.md": ("quarantined", "binary: contains NUL bytes"),
    "noise.txt": ("quarantined", "undecodable: "),
    "big.md": ("quarantined", "too-large: 30000 bytes, over the limit of 20000"),
    "link.md": ("quarantined", "symlink: points to "),
    "pipe.md": ("quarantined", "not-a-file: is a FIFO (named pipe)"),
    "scan.pdf": ("quarantined", "unreadable: is not a readable PDF"),
    "movie.mkv.part": ("skipped", "partial download (.part)"),
    "~$budget.docx": ("skipped", "office lock file (~$)"),
    "francais copy.txt": ("duplicate", "same content as raw/francais.txt"),
}


def test_done_when_daemon_ingests_good_sources_and_records_every_bad_input(
    tmp_path: Path, daemons: list[subprocess.Popen[str]]
) -> None:
    root = fresh_vault(tmp_path)
    raw = root / "raw"
    # The person's own staged work, which no commit of ours may take along.
    (root / "mine.md").write_text("my staged draft\n")
    git(root, "add", "mine.md")
    staged_before = git(root, "diff", "--cached")
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nTOP SECRET words outside the vault.\n")
    env = {**os.environ, "WIKIWRIGHT_INGEST_MAX_SOURCE_BYTES": "20000",
           # The default quiet period: a slow writer below must never be queued half-written.
           "WIKIWRIGHT_WATCH_DEBOUNCE_SECONDS": "1.0"}
    proc = launch(daemons, root, env)

    french = "Le café crème coûte trois euros à la brasserie. Le garçon est très aimable.\n".encode("latin-1")
    (raw / "francais.txt").write_bytes(french)
    (raw / "utf16.md").write_bytes("# Zürich notes\n\nThe Zürich office opens at nine. Naïve façade.\n"
                                   .encode("utf-16"))
    (raw / "page.html").write_text("<html><head><title>Launch Plan</title><script>x()</script></head>"
                                   "<body><p>The launch happens on 2026-03-01 in Berlin.</p></body></html>")
    (raw / "call 10:30 #3 [draft].md").write_text(note(3))
    for name, data in (("empty.md", b""), ("blank.txt", b" \n\t \n"),
                       ("blob.bin", random.Random(3).randbytes(2048) + b"\x00"),
                       ("nul.md", b"text with a \x00 NUL byte in it"),
                       ("noise.txt", bytes(range(0x80, 0x100)) * 8), ("big.md", b"word " * 6000),
                       ("scan.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"), ("movie.mkv.part", b"partial"),
                       ("~$budget.docx", b"lock"), ("francais copy.txt", french)):
        (raw / name).write_bytes(data)
    os.symlink(secret, raw / "link.md")
    os.mkfifo(raw / "pipe.md")
    # A file still being written: many small writes, each well inside the quiet period.
    with (raw / "notes.md").open("w") as handle:
        handle.write("# Field notes\n\n")
        for n in range(20):
            handle.write(f"Observation {n} was written down while the file was still growing.\n")
            handle.flush()
            time.sleep(0.05)
        handle.write("The last line says the notes are complete.\n")

    def settled() -> bool:
        data = status_json(root)
        return (len(ingest_commits(root)) >= 5 and len(recorded(root)) >= len(BAD)
                and data["counts"]["pending"] == 0 and data["counts"]["running"] == 0)

    wait_for(settled, timeout=60, interval=0.3, what="5 ingest commits and every bad input recorded")
    time.sleep(1.5)  # a late, wrong extra commit (a half-written version) would show up here

    commits = ingest_commits(root)
    assert len(commits) == 5, git(root, "log", "--format=%s")
    data = status_json(root)
    assert data["counts"]["ingested"] == 5
    assert data["daemon"]["running"] is True
    rows = recorded(root)
    dup_pair = {"francais.txt", "francais copy.txt"}
    for name, (state, reason) in BAD.items():
        if name in dup_pair:
            continue
        got_state, got_reason = rows[f"raw/{name}"]
        assert got_state == state and got_reason.startswith(reason), (name, got_state, got_reason)
    assert str(secret) in rows["raw/link.md"][1] and "never followed" in rows["raw/link.md"][1]
    # Same bytes under two names: whichever came first is ingested, the other is its duplicate.
    dups = [path for path, (state, _) in rows.items() if state == "duplicate"]
    assert len(dups) == 1 and dups[0].removeprefix("raw/") in dup_pair
    original = (dup_pair - {dups[0].removeprefix("raw/")}).pop()
    assert rows[dups[0]][1].startswith(f"same content as raw/{original}")

    # Pages, index and log.
    trailers = source_trailers(root)
    ingested_names = set(GOOD) - {"francais.txt"} | {original}
    assert sorted(t.split(" sha256:")[0] for t in trailers) == sorted(f"raw/{n}" for n in ingested_names)
    for trailer in trailers:
        path, digest = trailer.split(" sha256:")
        assert hashlib.sha256((root / path).read_bytes()).hexdigest() == digest
    index = (root / "wiki" / "index.md").read_text()
    log_text = (root / "wiki" / "log.md").read_text()
    assert log_text.count("] ingest | ") == 5
    for name, page in GOOD.items():
        if name == "francais.txt":
            page = "sources/src-" + Path(original).stem.replace(" ", "-")
        path = root / "wiki" / f"{page}.md"
        assert path.is_file(), sorted(p.name for p in (root / "wiki" / "sources").iterdir())
        assert f"[[{page.rsplit('/', 1)[1]}" in index
    notes = (root / "wiki" / "sources" / "src-notes.md").read_text()
    assert f"{(raw / 'notes.md').stat().st_size} bytes)" in notes  # the whole file, not a prefix
    assert "## [" in log_text and "ingest | Field notes" in log_text
    assert "Zürich" in (root / "wiki" / "sources" / "src-utf16.md").read_text()
    assert "The launch happens on 2026-03-01 in Berlin." in (root / "wiki" / "sources" / "src-page.md").read_text()
    wiki_all = "".join(p.read_text() for p in (root / "wiki").rglob("*.md"))
    assert "TOP SECRET" not in wiki_all

    human = cli("status", "--vault", str(root)).stdout
    assert "raw/pipe.md: quarantined — not-a-file" in human and "raw/big.md: quarantined — too-large" in human

    before = raw_snapshot(raw)
    assert stop(proc) == 0
    assert "Traceback" not in daemon_log(proc)
    assert git(root, "status", "--porcelain", "--", "wiki") == ""
    fsck = subprocess.run(["git", "-C", str(root), "fsck", "--full", "--strict", "--no-dangling"],
                          capture_output=True, text=True)
    assert fsck.returncode == 0 and not (fsck.stdout + fsck.stderr).strip(), fsck.stdout + fsck.stderr
    assert git(root, "diff", "--cached") == staged_before
    assert git(root, "log", "--all", "--format=%H", "--", "mine.md") == ""
    assert raw_snapshot(raw) == before
    assert status_json(root)["daemon"]["running"] is False


# -- one writer ---------------------------------------------------------------------------------------


def test_second_run_on_the_same_vault_exits_3_with_a_clear_message(
    tmp_path: Path, daemons: list[subprocess.Popen[str]]
) -> None:
    root = fresh_vault(tmp_path)
    proc = launch(daemons, root)
    second = cli("run", "--vault", str(root), timeout=20)
    assert second.returncode == 3
    assert second.stderr.strip() == (f"wikiwright: the vault {root} is already in use by pid {proc.pid} (run); "
                                     "only one wikiwright writer may run per vault")
    assert proc.poll() is None, "the first daemon must keep running"
    assert stop(proc) == 0


# -- signals and restarts ------------------------------------------------------------------------------


def test_sigterm_during_work_leaves_nothing_half_done_and_restart_resumes(
    tmp_path: Path, daemons: list[subprocess.Popen[str]]
) -> None:
    root = fresh_vault(tmp_path)
    total = 60
    proc = launch(daemons, root)
    for n in range(total):
        (root / "raw" / f"topic-{n:02d}.md").write_text(note(n))
    wait_for(lambda: len(ingest_commits(root)) >= 1, timeout=30, interval=0.05, what="the first ingest commit")
    assert stop(proc) == 0
    done_first = len(ingest_commits(root))
    assert 1 <= done_first < total, "the stop came too late to test stopping mid-work"
    assert git(root, "status", "--porcelain", "--", "wiki") == "", "a job was left half done"
    data = status_json(root)
    assert data["counts"]["running"] == 0
    assert data["counts"]["ingested"] == done_first
    # The rest are pending, or were still settling in the stability wait: the start rescan finds those.
    assert data["counts"]["pending"] + done_first <= total

    proc = launch(daemons, root)
    wait_for(lambda: len(ingest_commits(root)) >= total, timeout=60, interval=0.3, what="all ingests")
    time.sleep(0.5)
    assert stop(proc) == 0
    trailers = source_trailers(root)
    assert len(trailers) == total == len(set(trailers)), "something was ingested twice"
    assert status_json(root)["counts"]["ingested"] == total
    assert git(root, "status", "--porcelain", "--", "wiki") == ""


def test_second_signal_exits_at_once(tmp_path: Path, daemons: list[subprocess.Popen[str]]) -> None:
    root = fresh_vault(tmp_path)
    holder = ExitStack()  # another git process is busy (a live one: a lock held by nobody is removed)
    holder.enter_context(git_holding_index_lock(root))  # the job waits in its commit
    env = {**os.environ, "WIKIWRIGHT_GIT_LOCK_RETRY_SECONDS": "120"}
    proc = launch(daemons, root, env)
    (root / "raw" / "a.md").write_text(note(1))
    wait_for(lambda: any("index.lock" in n["message"] for n in status_json(root)["notices"]), timeout=20,
             what="the index.lock notice")
    proc.send_signal(signal.SIGTERM)
    time.sleep(1.0)
    assert proc.poll() is None, "the first signal lets the current job finish"
    proc.send_signal(signal.SIGTERM)
    started = time.monotonic()
    assert proc.wait(timeout=5) == 130
    assert time.monotonic() - started < 2.0
    assert ingest_commits(root) == []
    # The interrupted job resumes on the next start and is committed once.
    holder.close()
    proc = launch(daemons, root)
    wait_for(lambda: len(ingest_commits(root)) == 1, timeout=30, what="the resumed ingest")
    time.sleep(0.5)
    assert stop(proc) == 0
    assert len(ingest_commits(root)) == 1
    assert (root / "wiki" / "log.md").read_text().count("] ingest | ") == 1
    assert git(root, "status", "--porcelain", "--", "wiki") == ""


def test_files_dropped_while_down_are_found_by_the_start_rescan(
    tmp_path: Path, daemons: list[subprocess.Popen[str]]
) -> None:
    root = fresh_vault(tmp_path)
    for n in range(3):
        (root / "raw" / f"offline-{n}.md").write_text(note(n))
    (root / "raw" / "sub").mkdir()
    (root / "raw" / "sub" / "nested.md").write_text(note(7))
    proc = launch(daemons, root)
    wait_for(lambda: len(ingest_commits(root)) == 4, timeout=30, what="4 ingests from the start rescan")
    # With the daemon running, `wikiwright ingest` hands the file to it (the control socket) and
    # reports what the daemon did.
    outside = tmp_path / "handed.md"
    outside.write_text(note(9))
    result = cli("ingest", "--vault", str(root), str(outside))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("[1/1] raw/handed.md: ingested") and f"[daemon pid {proc.pid}]" in result.stdout
    assert len(ingest_commits(root)) == 5
    assert stop(proc) == 0
    assert sorted(t.split(" sha256:")[0] for t in source_trailers(root)) == [
        "raw/handed.md", "raw/offline-0.md", "raw/offline-1.md", "raw/offline-2.md", "raw/sub/nested.md"]


def test_ctrl_c_in_the_terminal_stops_the_daemon_quietly(tmp_path: Path, daemons: list[subprocess.Popen[str]]) -> None:
    """Ctrl-C sends SIGINT to the terminal's whole process group: the daemon and its document
    reader. The daemon stops cleanly (exit 0) and its terminal shows no traceback, nor a line a
    second for each periodic job (old code: the reader printed a KeyboardInterrupt traceback,
    and APScheduler logged every run of every job at INFO)."""
    import sys

    root = fresh_vault(tmp_path)
    log_path = tmp_path / "terminal.log"
    with log_path.open("w") as handle:
        proc = subprocess.Popen([sys.executable, "-m", "wikiwright", "run", "--vault", str(root)],
                                stdout=handle, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                                env={**os.environ, "WIKIWRIGHT_LINT_REVIEW_POLL_SECONDS": "0.5"})
    daemons.append(proc)
    (root / "raw" / "topic.md").write_text(note(1))
    wait_for(lambda: len(ingest_commits(root)) >= 1, timeout=30, interval=0.1, what="the ingest")
    time.sleep(1.5)  # the review watch (every 0.5 s here) has run a few times
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
    assert proc.wait(timeout=30) == 0
    shown = log_path.read_text(errors="replace")
    assert "Traceback" not in shown, shown
    assert "apscheduler" not in shown, shown
