"""A shared remote is untrusted input (issue 21): trailers from other machines are claims that
are checked against the commits they sit on; files with a generated block merge by block; a
``.git/index.lock`` left by a killed git child of ours is removed, another process's is waited
for; a syncing daemon killed again and again loses no line a person wrote.

Real parts only: a bare remote, clones, an attacker clone that pushes crafted commits
(``git commit-tree`` with forged trailers), the real daemon and CLI in subprocesses.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from wikiwright.ingest.concepts import OVERVIEW_END, OVERVIEW_START
from wikiwright.runtime.status import gather
from wikiwright.vcs.remote import merge_file
from wikiwright.vcs.repo import GitRepo
from wikiwright.wiki.index import INDEX_END, INDEX_START
from wikiwright.wiki.syncmerge import merge_index

from tests.fault_tools import assert_doctor_green, heartbeat
from tests.helpers import cli, git, git_holding_index_lock, wait_for
from tests.test_sync import Machine, source_text, sync_env, two_machines

PERSON_LINES = ("Person line one, before the block.", "Person line two, after the block.",
                "Person line three, after the block.")


@pytest.fixture
def world(tmp_path: Path, isolated_env: dict[str, str]) -> Iterator[tuple[Path, Machine, Machine]]:
    """A bare remote, machine A (initialised, pushed) and machine B (a clone, initialised, synced)."""
    remote, a, b = two_machines(tmp_path)
    yield remote, a, b
    a.close()
    b.close()


def _around_block(text: str, start: str, end: str) -> str:
    """``text`` with the person's three lines: one before its generated block, two after it."""
    at, until = text.index(start), text.index(end) + len(end) + 1
    return (text[:at] + PERSON_LINES[0] + "\n\n" + text[at:until] + "\n" + PERSON_LINES[1] + "\n"
            + PERSON_LINES[2] + "\n" + text[until:])


# -- files with a generated block merge by block ---------------------------------------------------

def test_overview_merge_keeps_the_persons_lines_around_the_block(world: tuple[Path, Machine, Machine]) -> None:
    """The merge base has no overview block (a fresh vault), the other machine's overview has
    one, this machine's has one with the person's text before and after it: every line stays
    (0 of 3 on the old code: the union emitted the start marker twice and the remote's whole
    file was taken)."""
    _remote, ma, mb = world
    ma.ingest("apples.md", source_text(1, "apples"))
    ma.sync()
    mb.ingest("bananas.md", source_text(2, "bananas"))
    overview = mb.root / "wiki" / "overview.md"
    overview.write_text(_around_block(overview.read_text(encoding="utf-8"), OVERVIEW_START, OVERVIEW_END),
                        encoding="utf-8")
    mb.sync()
    ma.sync()
    for machine in (ma, mb):
        text = (machine.root / "wiki" / "overview.md").read_text(encoding="utf-8")
        kept = [line for line in PERSON_LINES if line in text]
        assert kept == list(PERSON_LINES), text
        assert text.count(OVERVIEW_START) == 1 and text.count(OVERVIEW_END) == 1, text
        assert text.index(PERSON_LINES[0]) < text.index(OVERVIEW_START) < text.index(PERSON_LINES[1])
        assert "[[src-apples" in text  # the block is a generated one, not the person's text


def test_index_merge_keeps_the_persons_lines_when_the_base_has_no_block(vault) -> None:
    """index.md the same way: a base whose block a person had deleted, a remote version with
    the block put back at the end, this machine's with text on both sides of it."""
    repo = GitRepo(vault.root)
    head = "---\ntype: index\ntitle: Index\n---\n\n# Index\n\nA person's preface.\n"
    block = f"{INDEX_START}\n\n## Sources (1)\n\n- [[src-a]]\n{INDEX_END}\n"
    base, theirs = head, head + "\n" + block
    ours = _around_block(head + "\n" + block, INDEX_START, INDEX_END)
    merged = merge_index(base, ours, theirs, lambda b, o, t, favour: merge_file(repo, b, o, t, favour))
    assert [line for line in PERSON_LINES if line in merged] == list(PERSON_LINES), merged
    assert merged.count(INDEX_START) == 1 and merged.count(INDEX_END) == 1, merged
    assert "A person's preface." in merged



# -- trailers from other machines are claims -------------------------------------------------------

class Attacker:
    """A clone of the shared remote that pushes commits made by hand: any tree, any message."""

    def __init__(self, remote: Path, where: Path) -> None:
        subprocess.run(["git", "clone", "-q", str(remote), str(where)], check=True)
        self.root = where

    def push(self, subject: str, trailers: dict[str, str], files: dict[str, bytes] | None = None) -> str:
        git(self.root, "fetch", "-q", "origin")
        env = {**os.environ, "GIT_INDEX_FILE": str(self.root / ".git" / "crafted-index")}

        def run(*args: str, data: bytes | None = None) -> str:
            return subprocess.run(["git", "-C", str(self.root), *args], input=data, capture_output=True, env=env,
                                  check=True).stdout.decode().strip()

        run("read-tree", "origin/main")
        for path, data in (files or {}).items():
            blob = run("hash-object", "-w", "--stdin", data=data)
            run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
        message = subject + "\n\n" + "".join(f"{key}: {value}\n" for key, value in trailers.items())
        commit = run("commit-tree", run("write-tree"), "-p", "origin/main", data=message.encode())
        git(self.root, "push", "-q", "origin", f"{commit}:refs/heads/main")
        return commit


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _drop(machine: Machine, name: str, text: str) -> Path:
    """A file lands in the victim's raw/ and is seen (queued), not yet ingested."""
    path = machine.vault.raw / name
    path.write_text(text, encoding="utf-8")
    machine.registrar.register(path)
    return path


def _drain(machine: Machine) -> None:
    while machine.pipeline.drain_once() is not None:
        pass


def _ingest_commits(root: Path, sha256: str) -> list[str]:
    out = git(root, "log", "--format=%H", "-F", f"--grep=sha256:{sha256}", "--grep=Wikiwright-Operation: ingest",
              "--all-match")
    return out.split()


def _refusal_visible(machine: Machine) -> None:
    notices = [n["message"] for n in gather(machine.config, machine.vault)["notices"]]
    assert any("refused from the remote" in message for message in notices), notices
    review = machine.vault.review_file.read_text(encoding="utf-8")
    assert "refused from the remote" in review, review


def _doctor_green(machine: Machine, env: dict[str, str]) -> None:
    done = cli("doctor", "--json", "--no-repair", "--vault", str(machine.root), env=env)
    assert json.loads(done.stdout)["ok"], done.stdout


def _victim_ingested_its_own(machine: Machine, rel: str, sha256: str, page: str, forged: str) -> None:
    record = machine.ledger.get_file(rel)
    assert record is not None and record.state == "ingested", record
    assert record.commit_sha != forged and record.page == page, record
    assert (machine.root / "wiki" / f"{page}.md").exists()
    commits = [sha for sha in _ingest_commits(machine.root, sha256) if sha != forged]
    assert commits == [record.commit_sha], commits  # this machine's own ingest, once


def test_forged_source_trailer_for_bytes_the_victim_holds(world: tuple[Path, Machine, Machine], tmp_path: Path,
                                                          isolated_env: dict[str, str]) -> None:
    """A commit that claims to have ingested bytes it does not hold (bytes the victim has in
    raw/): old code recorded them ingested, on no page, and never ingested them (doctor green)."""
    remote, _ma, mb = world
    text = source_text(4, "secrets of the victim")
    _drop(mb, "secret.md", text)
    sha = _sha(text.encode())
    forged = Attacker(remote, tmp_path / "evil").push("ingest: Secret", {
        "Wikiwright-Operation": "ingest", "Wikiwright-Source": f"raw/secret.md sha256:{sha}",
        "Wikiwright-Pages": "wiki/sources/src-secret.md"})
    mb.sync()
    _drain(mb)
    _victim_ingested_its_own(mb, "raw/secret.md", sha, "sources/src-secret", forged)
    _refusal_visible(mb)
    _doctor_green(mb, isolated_env)


def test_forged_pages_trailer_cannot_bind_a_source_to_index(world: tuple[Path, Machine, Machine], tmp_path: Path,
                                                            isolated_env: dict[str, str]) -> None:
    """A commit that holds the victim's very bytes at their raw/ path but names wiki/index.md as
    their page (and changes index.md): old code recorded the source ingested on ``index`` (the
    victim's own ingest never ran; with other bytes its source page replaced index.md)."""
    remote, _ma, mb = world
    text = source_text(5, "notes of the victim")
    _drop(mb, "notes.md", text)
    attacker = Attacker(remote, tmp_path / "evil")
    index = (attacker.root / "wiki" / "index.md").read_bytes() + b"\nA forged line.\n"
    forged = attacker.push("ingest: Notes", {
        "Wikiwright-Operation": "ingest", "Wikiwright-Source": f"raw/notes.md sha256:{_sha(text.encode())}",
        "Wikiwright-Pages": "wiki/index.md"}, {"raw/notes.md": text.encode(), "wiki/index.md": index})
    mb.sync()
    _drain(mb)
    _victim_ingested_its_own(mb, "raw/notes.md", _sha(text.encode()), "sources/src-notes", forged)
    index_text = (mb.root / "wiki" / "index.md").read_text(encoding="utf-8")
    assert INDEX_START in index_text and "type: index" in index_text and "[[src-notes" in index_text, index_text
    _refusal_visible(mb)
    _doctor_green(mb, isolated_env)


def test_forged_pages_trailer_cannot_leave_a_source_pending(world: tuple[Path, Machine, Machine], tmp_path: Path,
                                                            isolated_env: dict[str, str]) -> None:
    """A claim binding the victim's raw/ path to a page outside wiki/: old code bound it, and the
    victim's source stayed pending for good ("page path … climbs out of wiki/")."""
    remote, _ma, mb = world
    text = source_text(6, "pears")
    _drop(mb, "pears.md", text)
    forged = Attacker(remote, tmp_path / "evil").push("ingest: Pears", {
        "Wikiwright-Operation": "ingest", "Wikiwright-Source": f"raw/pears.md sha256:{'ab' * 32}",
        "Wikiwright-Pages": "wiki/sources/../../pears.md"})
    mb.sync()
    _drain(mb)
    _victim_ingested_its_own(mb, "raw/pears.md", _sha(text.encode()), "sources/src-pears", forged)
    _refusal_visible(mb)
    _doctor_green(mb, isolated_env)


def test_forged_duplicate_trailer_does_not_make_a_fresh_clone_reingest(world: tuple[Path, Machine, Machine],
                                                                       tmp_path: Path,
                                                                       isolated_env: dict[str, str]) -> None:
    """A sync commit claiming that the one ingest of a source was undone as a duplicate: old
    code skipped that ingest when a fresh clone rebuilt its ledger, so the clone ingested the
    source (its bytes are in git) a second time."""
    remote, ma, _mb = world
    text = source_text(7, "shared facts")
    ma.ingest("shared.md", text)
    ma.sync()
    sha = _sha(text.encode())
    (original,) = _ingest_commits(ma.root, sha)
    Attacker(remote, tmp_path / "evil").push("sync: merge 1 commit(s) from origin/main", {
        "Wikiwright-Operation": "sync", "Wikiwright-Duplicate": f"{original} {sha}"})
    subprocess.run(["git", "clone", "-q", str(remote), str(tmp_path / "c")], check=True)
    mc = Machine(tmp_path / "c")
    try:
        mc.sync()
        assert (mc.vault.raw / "shared.md").exists()  # the source came with the clone
        mc.registrar.register(mc.vault.raw / "shared.md")
        _drain(mc)
        record = mc.ledger.get_file("raw/shared.md")
        assert record is not None and record.state == "ingested" and record.commit_sha == original, record
        assert _ingest_commits(mc.root, sha) == [original]
        _refusal_visible(mc)
        _doctor_green(mc, isolated_env)
    finally:
        mc.close()


# -- a .git/index.lock nobody holds ----------------------------------------------------------------

def test_a_killed_git_childs_index_lock_is_removed_and_a_live_ones_waited_for(
        world: tuple[Path, Machine, Machine], isolated_env: dict[str, str], caplog: pytest.LogCaptureFixture) -> None:
    """``git update-index --index-info`` (a command the daemon runs) holds .git/index.lock while
    it reads its input: alive, the lock is waited for; killed (SIGKILL, as with the daemon's
    process group), its lock is removed when the door opens, with a log line, and doctor calls
    it stale at once (old code: waited for a person; doctor only after 10 minutes)."""
    from wikiwright.upkeep.doctor import run_doctor

    _remote, _ma, mb = world
    lock = mb.root / ".git" / "index.lock"
    with git_holding_index_lock(mb.root) as holder:
        _drop(mb, "held.md", source_text(8, "held locks"))
        _drain(mb)  # the commit waits for the lock (2 s here), then the job waits, pending
        record = mb.ledger.get_file("raw/held.md")
        assert record is not None and record.state == "pending" and "index.lock" in record.reason, record
        assert lock.exists()
        checks = run_doctor(mb.config, mb.vault, mb.ledger, mb.repo).checks
        assert next(c for c in checks if c.name == "locks").ok  # held: not stale
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
    assert lock.exists()  # a killed git leaves its lock
    before = time.time() - 10
    os.utime(lock, (before, before))  # killed a while ago: not a lock a library is writing this instant
    locks = next(c for c in run_doctor(mb.config, mb.vault, mb.ledger, mb.repo).checks if c.name == "locks")
    assert not locks.ok and "held by no git process" in locks.details[0], locks
    with caplog.at_level("WARNING", logger="wikiwright.vcs.gitlock"):
        mb.reopen(mb.config)  # B's process started again: its door opened, the recovery run
    assert not lock.exists()
    assert any("removed .git/index.lock" in r.getMessage() for r in caplog.records), caplog.records
    mb.ledger.wake("raw/held.md", record.sha256, "retry")
    _drain(mb)
    record = mb.ledger.get_file("raw/held.md")
    assert record is not None and record.state == "ingested", record
    _doctor_green(mb, isolated_env)


def test_a_killed_git_childs_lock_on_the_daemons_own_index_is_removed(
        world: tuple[Path, Machine, Machine], isolated_env: dict[str, str], caplog: pytest.LogCaptureFixture) -> None:
    """The daemon commits from a private index (``.wikiwright/git-index``, GIT_INDEX_FILE): a git
    child killed while it updated that index leaves ``.wikiwright/git-index.lock``. Nobody holds
    it, so the next commit removes it and goes on (old code looked only in .git: every ingest
    and sync round waited for it forever — the kill storm below found it on a loaded machine)."""
    from wikiwright.upkeep.doctor import run_doctor

    _remote, _ma, mb = world
    index = mb.root / ".wikiwright" / "git-index"
    with git_holding_index_lock(mb.root, index) as holder:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
    lock = Path(f"{index}.lock")
    assert lock.exists()  # a killed git leaves its lock
    before = time.time() - 10
    os.utime(lock, (before, before))
    locks = next(c for c in run_doctor(mb.config, mb.vault, mb.ledger, mb.repo).checks if c.name == "locks")
    assert not locks.ok and ".wikiwright/git-index.lock is held by no git process" in locks.details[0], locks
    _drop(mb, "after-kill.md", source_text(9, "after a killed git"))
    with caplog.at_level("WARNING", logger="wikiwright.vcs.gitlock"):
        _drain(mb)
    record = mb.ledger.get_file("raw/after-kill.md")
    assert record is not None and record.state == "ingested", record
    assert not lock.exists()
    assert any("removed .wikiwright/git-index.lock" in r.getMessage() for r in caplog.records), caplog.records
    _doctor_green(mb, isolated_env)


# -- a kill storm of a syncing daemon ----------------------------------------------------------------

# Read at import: the isolated_env fixture clears WIKIWRIGHT_* before a test runs.
KILLS = int(os.environ.get("WIKIWRIGHT_SYNC_KILLS", "40"))
SEED = int(os.environ.get("WIKIWRIGHT_FAULT_SEED", "0"))


def _start_group(root: Path, env: dict[str, str], log: Path, *, wait: bool = True) -> subprocess.Popen[bytes]:
    """``wikiwright run`` as the leader of its own process group (its git children in it);
    ``wait``: until its heartbeat says it is up."""
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "wikiwright", "run", "--vault", str(root)], env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def up() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"the daemon exited ({proc.returncode}):\n{log.read_text(errors='replace')[-3000:]}")
        beat = heartbeat(root)
        return bool(beat.get("pid") == proc.pid and not beat.get("stopped"))

    if wait:
        wait_for(up, timeout=30, interval=0.05, what="the daemon to start")
    return proc


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL to the daemon and every git child it has running, as an OOM kill or a logout would."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def _person_writes(overview: Path, n: int) -> str:
    """The person adds line ``n`` to overview.md: before the generated block, or after it."""
    line = f"Person line {n:03d}, written on machine B by hand."
    text = overview.read_text(encoding="utf-8")
    at = text.find(OVERVIEW_START)
    if n % 2 == 0 and at != -1:
        text = text[:at] + line + "\n\n" + text[at:]
    else:
        text = text.rstrip("\n") + "\n\n" + line + "\n"
    overview.write_text(text, encoding="utf-8")
    return line


@pytest.mark.slow
def test_kill_storm_of_a_syncing_daemon_loses_no_persons_line(world: tuple[Path, Machine, Machine],
                                                             tmp_path: Path, isolated_env: dict[str, str]) -> None:
    """Machine B's daemon syncs every half second and ingests; machine A ingests and pushes all
    the while; B's daemon and its git children are SIGKILLed 40 times at random moments, and
    between a kill and the restart a person adds a line to B's overview.md (before or after the
    generated block, alternately), after two written before the storm around a block the merge
    base lacks. At the end every one of the person's lines is on both machines, no lock is left
    in .git, doctor is green (old code: the person's lines lost, doctor red).
    The seed is printed so a failure can be replayed (WIKIWRIGHT_FAULT_SEED)."""
    seed = SEED or random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    remote, ma, mb = world
    env = {**sync_env(isolated_env, interval=0.5), "WIKIWRIGHT_GIT_LOCK_RETRY_SECONDS": "5"}
    log = tmp_path / "daemon-b.log"
    overview = mb.root / "wiki" / "overview.md"
    # Before the storm, as in the deterministic case above: B ingested on its own (its overview
    # has a block the merge base lacks) and the person wrote before and after that block, while
    # A ingested and pushed.
    mb.ingest("b-first.md", source_text(100, "machine b first"))
    ma.ingest("a-first.md", source_text(100, "machine a first"))
    ma.sync()
    lines = [_person_writes(overview, 100), _person_writes(overview, 101)]
    mb.close()  # B is its daemon's from here on
    proc = _start_group(mb.root, env, log)
    try:
        started = time.monotonic()
        for n in range(KILLS):
            if n % 4 == 0:
                (mb.root / "raw" / f"b-{n:03d}.md").write_text(source_text(n, "machine b"), encoding="utf-8")
            ma.ingest(f"a-{n:03d}.md", source_text(n, "machine a"))  # while B starts, recovers, syncs
            ma.sync(expect=None)
            time.sleep(rng.uniform(0.0, 1.2))
            _kill_group(proc)
            lines.append(_person_writes(overview, n))
            # Most restarts are killed again wherever they are (recovery, rescan, a sync round);
            # every fourth one is first let up.
            proc = _start_group(mb.root, env, log, wait=n % 4 == 3)
        print(f"{KILLS} kills in {time.monotonic() - started:.0f}s")
        sources_b = len(range(0, KILLS, 4))

        def settled() -> bool:
            ma.sync(expect=None)
            heads = {git(root, "rev-parse", "HEAD").strip() for root in (ma.root, mb.root)}
            remote_head = git(remote, "rev-parse", "main").strip()
            done = len(list((mb.root / "wiki" / "sources").glob("src-b-0*.md"))) == sources_b
            # The person's last lines are committed by B's next round (before its push).
            committed = not git(mb.root, "status", "--porcelain", "--", "wiki/overview.md").strip()
            return done and committed and len(heads) == 1 and remote_head in heads

        try:
            wait_for(settled, timeout=180, interval=1.0, what="both machines on one history")
        except AssertionError as exc:
            status = cli("status", "--vault", str(mb.root), env=env).stdout
            raise AssertionError(f"{exc} (seed {seed})\n{status}\n{log.read_text(errors='replace')[-4000:]}") from exc
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text(errors="replace")[-3000:]
    finally:
        if proc.poll() is None:
            _kill_group(proc)
    for root in (ma.root, mb.root):
        text = (root / "wiki" / "overview.md").read_text(encoding="utf-8")
        lost = [line for line in lines if line not in text]
        assert not lost, f"{len(lost)} of {len(lines)} person lines lost on {root.name}: {lost}\n{text}"
        assert text.count(OVERVIEW_START) == 1 and text.count(OVERVIEW_END) == 1, text
    assert not list((mb.root / ".git").glob("*.lock")) and not list((mb.root / ".git").glob("refs/**/*.lock"))
    assert git(mb.root, "status", "--porcelain", "--untracked-files=no").strip() == ""
    assert_doctor_green(mb.root)
