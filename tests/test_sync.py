"""One wiki across machines through a git remote (issue 14): real bare repositories, real
clones, the real CLI and real daemons in subprocesses."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from wikiwright.core.config import Config, load_config
from wikiwright.door.init import init_vault
from wikiwright.door.sync import Syncer, SyncReport
from wikiwright.runtime.context import VaultContext
from wikiwright.runtime.status import gather
from wikiwright.vcs.remote import PushResult, Remote
from wikiwright.vcs.repo import GitRepo
from wikiwright.wiki.pagemerge import merge_page

from tests.helpers import cli, daemon_log, git, start_daemon, wait_for

MARKER_RE = re.compile(r"^(<{7}|>{7})( |$)", re.MULTILINE)


# -- machines ------------------------------------------------------------------------------

def sync_env(env: dict[str, str], interval: float = 1.0) -> dict[str, str]:
    return {**env, "WIKIWRIGHT_GIT_REMOTE": "origin", "WIKIWRIGHT_GIT_SYNC_INTERVAL_SECONDS": str(interval)}


def ww(vault: Path, env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return cli(*args, "--vault", str(vault), env=env, timeout=timeout)


class Machine:
    """One vault with its services in this process: drop-and-ingest and sync rounds, fast.

    The services are a vault context's, wired as the daemon wires them (``ingest_services``);
    :meth:`reopen` closes them and opens them again on another config (a model configured)."""

    def __init__(self, root: Path) -> None:
        vault, _ = init_vault(root, "wikiwright", "wikiwright@localhost")
        self.root = root
        self.vault = vault
        self.ctx: VaultContext | None = None
        self.reopen(load_config(root, environ={**os.environ, "WIKIWRIGHT_GIT_REMOTE": "origin"}))

    def reopen(self, config: Config) -> None:
        """The machine's process started again on ``config``: its context closed, a new one opened."""
        self.close()
        self.config = config
        self.ctx = VaultContext(config.replace(git=dataclasses.replace(config.git, lock_retry_seconds=2)), self.vault)
        wired = self.ctx.ingest_services()
        self.ledger, self.catalog, self.repo = self.ctx.ledger, self.ctx.catalog, self.ctx.repo
        self.pipeline, self.registrar = wired.pipeline, wired.registrar
        self.syncer = Syncer(self.config, self.vault, self.ledger, self.catalog, self.repo, door=self.ctx.door)

    def ingest(self, name: str, text: str) -> None:
        path = self.vault.raw / name
        path.write_text(text, encoding="utf-8")
        self.registrar.register(path)
        while self.pipeline.drain_once() is not None:
            pass

    def sync(self, expect: str | None = "ok") -> SyncReport:
        report = self.syncer.round()
        if expect == "ok":
            assert report.state in ("up-to-date", "integrated", "pushed"), report
        return report

    def close(self) -> None:
        if self.ctx is not None:
            self.ctx.close()
            self.ctx = None


def two_machines(tmp_path: Path) -> tuple[Path, Machine, Machine]:
    """A bare remote, machine A (initialised, pushed) and machine B (a clone, initialised, synced);
    the caller closes both machines."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    (tmp_path / "a").mkdir()
    subprocess.run(["git", "init", "-q", str(tmp_path / "a")], check=True)
    git(tmp_path / "a", "remote", "add", "origin", str(remote))
    a = Machine(tmp_path / "a")
    a.sync()
    subprocess.run(["git", "clone", "-q", str(remote), str(tmp_path / "b")], check=True)
    b = Machine(tmp_path / "b")
    b.sync()
    return remote, a, b


@pytest.fixture
def world(tmp_path: Path, isolated_env: dict[str, str]) -> Iterator[tuple[Path, Machine, Machine]]:
    """A bare remote, machine A (initialised, pushed) and machine B (a clone, initialised, synced)."""
    remote, a, b = two_machines(tmp_path)
    yield remote, a, b
    a.close()
    b.close()


def person_clone(remote: Path, where: Path, env: dict[str, str]) -> Path:
    subprocess.run(["git", "clone", "-q", str(remote), str(where)], check=True, env=env)
    return where


def source_text(n: int, topic: str = "widgets") -> str:
    return f"# Note {n:03d} about {topic}\n\nNote {n:03d} says that {topic} number {n} work well on Tuesdays.\n"


def tracked_files(vault: Path) -> dict[str, str]:
    out = git(vault, "ls-files", "-s")
    return {line.split("\t", 1)[1]: line.split()[1] for line in out.splitlines()}


def markers_in_history(vault: Path) -> list[str]:
    """Every committed file, in every commit, that holds a conflict marker line."""
    revs = git(vault, "rev-list", "--all").split()
    found = subprocess.run(["git", "-C", str(vault), "grep", "-l", "-E", "^(<<<<<<<|>>>>>>>)( |$)", *revs],
                           capture_output=True, text=True)
    return [line for line in found.stdout.splitlines() if line]


def ingests_by_source(vault: Path) -> Counter[str]:
    """sha256 of every ingest commit in HEAD's history, minus ingests a sync merge undid."""
    undone = set()
    for line in git(vault, "log", "--format=%(trailers:key=Wikiwright-Duplicate,valueonly)").splitlines():
        undone |= {item.split()[0] for item in line.split(",") if item.strip()}
    counts: Counter[str] = Counter()
    out = git(vault, "log", "--format=%H %(trailers:key=Wikiwright-Source,valueonly)",
              "--grep=Wikiwright-Operation: ingest")
    for line in out.splitlines():
        if " sha256:" in line:
            sha, rest = line.split(" ", 1)
            if sha not in undone:
                counts[rest.rsplit("sha256:", 1)[1].strip()] += 1
    return counts


# -- the pure parts --------------------------------------------------------------------------

def test_page_merge_keeps_both_machines_claims_and_reapplies_supersession(vault) -> None:
    repo = GitRepo(vault.root)

    def merge3(base: str, ours: str, theirs: str, favour: str) -> tuple[str, bool]:
        from wikiwright.vcs.remote import merge_file

        return merge_file(repo, base, ours, theirs, favour)

    head = "---\ntype: entity\ntitle: Billing API\nsources:\n- src-a\n---\n\n# Billing API\n\nIntro.\n\n"
    old = "- `billing.rate`: 100 per second (as of 2026-01-01, [[src-a]])\n"
    base = head + "## Claims\n" + old
    ours = base.replace("sources:\n- src-a", "sources:\n- src-a\n- src-b") + \
        "- `billing.region`: eu-west (as of 2026-02-01, [[src-b]])\n"
    struck = "- ~~`billing.rate`: 100 per second (as of 2026-01-01, [[src-a]])~~ superseded by [[src-c]]\n"
    theirs = (head.replace("sources:\n- src-a", "sources:\n- src-a\n- src-c") + "## Claims\n" + struck
              + "- `billing.rate`: 50 per second (as of 2026-03-01, [[src-c]])\n")
    result = merge_page(base, ours, theirs, merge3)
    assert result.clean, result.notes
    assert "- src-b" in result.text and "- src-c" in result.text
    assert struck.strip() in result.text  # the other machine's supersession stands
    assert "`billing.region`: eu-west" in result.text and "`billing.rate`: 50 per second" in result.text
    assert f"\n{old}" not in result.text  # the old value is not current twice
    assert not MARKER_RE.search(result.text)

    # Both changed the same sentence: the remote's stays, ours comes back as a hunk; no marker.
    clash = merge_page(base, base.replace("Intro.", "Intro from here."), base.replace("Intro.", "Intro from there."),
                       merge3)
    assert not clash.clean and "Intro from there." in clash.text and not MARKER_RE.search(clash.text)
    assert any("Intro from here." in ours_lines for ours_lines, _ in clash.hunks)


def test_overview_keeps_one_generated_block_and_both_sides_text(vault) -> None:
    from wikiwright.vcs.remote import merge_file
    from wikiwright.wiki.syncmerge import merge_overview

    start = "<!-- wikiwright:overview:start (kept by wikiwright from the wiki; edit outside this block) -->"
    end = "<!-- wikiwright:overview:end -->"

    def page(block: str, *extra: str) -> str:
        return "---\ntype: overview\n---\n\n# Overview\n\n" + "".join(f"{x}\n" for x in extra) + \
            f"{start}\n{block}\n{end}\n"

    repo = GitRepo(vault.root)
    merged = merge_overview(page("3 sources"), page("5 sources", "Mine."), page("4 sources", "Theirs."),
                            lambda b, o, t, favour: merge_file(repo, b, o, t, favour))
    assert merged.count(start) == 1 and merged.count(end) == 1 and "4 sources" in merged
    assert "Mine." in merged and "Theirs." in merged and not MARKER_RE.search(merged)


# -- two daemons, one remote ------------------------------------------------------------------

def test_two_daemons_share_one_wiki(world: tuple[Path, Machine, Machine], isolated_env: dict[str, str]) -> None:
    """Sources dropped on two machines, each with its own running daemon, syncing every second:
    both working trees end identical, every source ingested exactly once in the shared history,
    lint and doctor clean on both. 30 sources here (the suite's time budget); the issue's 200
    in the opt-in variant below."""
    share_one_wiki(world, isolated_env, 30)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("WIKIWRIGHT_SYNC_200"), reason="the issue's 200 sources: WIKIWRIGHT_SYNC_200=1")
def test_two_daemons_two_hundred_sources(world: tuple[Path, Machine, Machine], isolated_env: dict[str, str]) -> None:
    share_one_wiki(world, isolated_env, 200)


def share_one_wiki(world: tuple[Path, Machine, Machine], isolated_env: dict[str, str], sources: int) -> None:
    env = sync_env(isolated_env)
    remote, ma, mb = world
    a, b = ma.root, mb.root
    daemons = [start_daemon(a, env), start_daemon(b, env)]
    try:
        for n in range(sources):
            target = a if n % 2 == 0 else b
            (target / "raw" / f"note-{n:03d}.md").write_text(source_text(n), encoding="utf-8")

        def settled() -> bool:
            heads = {git(v, "rev-parse", "HEAD").strip() for v in (a, b)}
            remote_head = subprocess.run(["git", "-C", str(remote), "rev-parse", "main"], capture_output=True,
                                         text=True).stdout.strip()
            pages = [len(list((v / "wiki" / "sources").glob("src-note-*.md"))) for v in (a, b)]
            return len(heads) == 1 and remote_head in heads and pages == [sources, sources]

        wait_for(settled, timeout=60 + sources, interval=0.5, what="both machines on one history with every page")
        for proc in daemons:
            proc.terminate()
        for proc in daemons:
            assert proc.wait(timeout=30) == 0, daemon_log(proc)[-3000:]
    finally:
        for proc in daemons:
            if proc.poll() is None:
                proc.kill()
    # Both working trees identical (every tracked file, same bytes), nothing left uncommitted.
    assert tracked_files(a) == tracked_files(b)
    for vault in (a, b):
        assert not git(vault, "status", "--porcelain", "--untracked-files=no").strip()
    # Each source ingested exactly once in the shared history.
    counts = ingests_by_source(a)
    assert len(counts) == sources and set(counts.values()) == {1}, counts
    assert not markers_in_history(a)
    for vault in (a, b):
        lint = ww(vault, env, "lint", "--json")
        findings = json.loads(lint.stdout)["findings"]
        assert not [f for f in findings if f["kind"] == "conflict-marker"], findings
        doctor = ww(vault, env, "doctor", "--json", "--no-repair")
        assert json.loads(doctor.stdout)["ok"], doctor.stdout
    status = json.loads(ww(b, env, "status", "--json").stdout)
    assert status["sync"]["ahead"] == 0 and status["sync"]["behind"] == 0, status["sync"]
    log_a, log_b = (a / "wiki" / "log.md").read_text(), (b / "wiki" / "log.md").read_text()
    assert log_a == log_b and sum(log_a.count(f"Note {n:03d} about") for n in range(sources)) == sources


# -- concurrent edits ---------------------------------------------------------------------------

def test_concurrent_edits_from_two_machines_and_a_person(world: tuple[Path, Machine, Machine], tmp_path: Path,
                                                         isolated_env: dict[str, str]) -> None:
    remote, ma, mb = world
    a, b = ma.root, mb.root
    ma.ingest("shared.md", source_text(1, "gadgets"))
    ma.sync()
    mb.sync()
    page = "wiki/sources/src-shared.md"
    assert (b / page).exists()
    person = person_clone(remote, tmp_path / "person", isolated_env)

    def edit(root: Path, old: str, new: str) -> None:
        path = root / page
        text = path.read_text(encoding="utf-8")
        assert old in text, text
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    # The same line changed on A and on B (a real conflict); the person adds a line at the end
    # and pushes first; B also adds a line of its own at the end (both additions stay).
    original = (a / page).read_text(encoding="utf-8")
    title_line = next(line for line in original.splitlines() if line.startswith("# "))
    edit(a, title_line, title_line + " (edited on A)")
    edit(b, title_line, title_line + " (edited on B)")
    with (b / page).open("a", encoding="utf-8") as handle:
        handle.write("\nA line only machine B wrote.\n")
    with (person / page).open("a", encoding="utf-8") as handle:
        handle.write("\nA line the person wrote in a third clone.\n")
    git(person, "commit", "-qam", "my note")
    git(person, "push", "-q", "origin", "main")
    # A's and B's edits are uncommitted: the sync commits them first under the person's name.
    for machine in (ma, mb, ma, mb):
        machine.sync()
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert tracked_files(a) == tracked_files(b)
    text = (a / page).read_text(encoding="utf-8")
    review = (a / "REVIEW.md").read_text(encoding="utf-8")
    # 0 lines lost: every line anyone wrote is on the page or quoted in REVIEW.md.
    assert "A line only machine B wrote." in text and "A line the person wrote in a third clone." in text
    # A pushed first, so B's merge met A's version: A's line stays, B's is quoted for review.
    assert title_line + " (edited on A)" in text and "sync-conflict" in review
    assert title_line + " (edited on B)" in review
    assert not markers_in_history(a)
    assert not MARKER_RE.search(text) and not MARKER_RE.search(review)
    authors = git(a, "log", "--format=%an %s").splitlines()
    assert any(line.startswith("Test Person edit: your changes") for line in authors), authors
    lint = json.loads(ww(a, sync_env(isolated_env), "lint", "--json").stdout)
    assert not [f for f in lint["findings"] if f["kind"] == "conflict-marker"]
    doctor = ww(b, sync_env(isolated_env), "doctor", "--json", "--no-repair")
    assert json.loads(doctor.stdout)["ok"], doctor.stdout


# -- offline, rejected, duplicates ----------------------------------------------------------------

def test_a_persons_edits_travel_with_a_round_when_the_remote_has_nothing_new(
        world: tuple[Path, Machine, Machine]) -> None:
    """A person edits a page and REVIEW.md and writes a new page of their own on B; nothing is
    new on the remote. B's round commits those edits under the person's identity and pushes
    them; A has them after its round (old code committed a person's edit only when the remote
    changed the same file: the edit stayed on B). A file outside sync's allow-list is not
    committed, and raw/ (the inbox) is left to the ingest."""
    _remote, ma, mb = world
    ma.ingest("shared.md", source_text(1, "shared"))
    ma.sync()
    mb.sync()
    page = mb.root / "wiki" / "sources" / "src-shared.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nA person's line on B.\n", encoding="utf-8")
    (mb.root / "wiki" / "my-own-note.md").write_text("# My own note\n\nWritten by hand on B.\n", encoding="utf-8")
    review = mb.root / "REVIEW.md"
    review.write_text(review.read_text(encoding="utf-8") + "\nA person's note in REVIEW.md.\n", encoding="utf-8")
    (mb.root / "wiki" / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    (mb.root / "raw" / "dropped.md").write_text("# Dropped\n\nNot yet ingested.\n", encoding="utf-8")
    report = mb.sync()
    assert report.state == "pushed", report
    subject, author = git(mb.root, "log", "-1", "--format=%s%x1f%an", "--", "wiki/my-own-note.md").strip().split("\x1f")
    assert subject.startswith("edit: your changes to") and author != "wikiwright", (subject, author)
    status = git(mb.root, "status", "--porcelain", "--untracked-files=all")
    assert "wiki/photo.png" in status, status
    assert not git(mb.root, "ls-files", "--", "raw/dropped.md").strip()
    assert "src-shared.md" not in status and "REVIEW.md" not in status, status
    ma.sync()
    assert "A person's line on B." in (ma.root / "wiki" / "sources" / "src-shared.md").read_text(encoding="utf-8")
    assert (ma.root / "wiki" / "my-own-note.md").read_text(encoding="utf-8").startswith("# My own note")
    assert "A person's note in REVIEW.md." in (ma.root / "REVIEW.md").read_text(encoding="utf-8")
    assert not (ma.root / "wiki" / "photo.png").exists()


def test_remote_unreachable_then_back(world: tuple[Path, Machine, Machine], tmp_path: Path,
                                      isolated_env: dict[str, str]) -> None:
    remote, ma, mb = world
    away = tmp_path / "remote-away.git"
    remote.rename(away)
    for n in range(3):
        ma.ingest(f"offline-{n}.md", source_text(n, "offline"))
    report = ma.sync(expect=None)
    assert report.state == "offline" and "cannot be reached" in report.detail, report
    status = ww(ma.root, sync_env(isolated_env), "status")
    assert "3 commits not pushed" in status.stdout and "waits:" in status.stdout, status.stdout
    # The daemon's job backs off while the remote is away (a person's `wikiwright sync` does not).
    assert not ma.syncer.due() and ma.syncer.state()["failures"] == 1
    away.rename(remote)
    ma.sync()
    assert ma.syncer.state()["failures"] == 0 and not ma.syncer.state()["waiting"]
    mb.sync()
    for n in range(3):
        assert (mb.root / "wiki" / "sources" / f"src-offline-{n}.md").exists()
    assert gather(ma.config, ma.vault)["sync"]["not_pushed"] == 0


def test_rejected_push_is_integrated_and_retried(world: tuple[Path, Machine, Machine], tmp_path: Path,
                                                 isolated_env: dict[str, str]) -> None:
    remote, ma, _mb = world
    person = person_clone(remote, tmp_path / "person", isolated_env)
    ma.ingest("mine.md", source_text(7))
    (person / "SCHEMA.md").write_text((person / "SCHEMA.md").read_text() + "\nA rule the person added.\n")
    git(person, "commit", "-qam", "schema rule")
    git(person, "push", "-q", "origin", "main")
    # A pushes without having fetched: someone pushed first.
    result, _detail = ma.syncer.remote.push()
    assert result is PushResult.REJECTED
    ma.sync()
    log = git(ma.root, "log", "--format=%s", "origin/main")
    assert "schema rule" in log and "ingest: Note 007 about widgets" in log
    assert "A rule the person added." in (ma.root / "SCHEMA.md").read_text()


def test_same_file_dropped_on_two_machines_is_ingested_once(world: tuple[Path, Machine, Machine],
                                                            tmp_path: Path, isolated_env: dict[str, str]) -> None:
    remote, ma, mb = world
    data = source_text(9, "twins")
    ma.ingest("twin.md", data)
    mb.ingest("twin-copy.md", data)
    # A claimed the bytes on the remote first (door/sourceclaims.py): B's copy waits for A's ingest.
    waiting = mb.ledger.get_file("raw/twin-copy.md")
    assert waiting is not None and waiting.state == "pending" and "claimed" in waiting.reason, waiting
    for machine in (ma, mb):
        machine.sync()
    while mb.pipeline.drain_once() is not None:  # woken by the round that brought A's ingest
        pass
    for machine in (mb, ma):
        machine.sync()
    assert tracked_files(ma.root) == tracked_files(mb.root)
    pages = sorted(p.name for p in (ma.root / "wiki" / "sources").glob("*.md"))
    assert pages == ["src-twin.md"], pages
    assert set(ingests_by_source(ma.root).values()) == {1}
    duplicates = gather(mb.config, mb.vault)["duplicates"]
    assert [d["path"] for d in duplicates] == ["raw/twin-copy.md"], duplicates
    # A third machine's fresh ledger is rebuilt from history: the same bytes are not ingested again.
    subprocess.run(["git", "clone", "-q", str(remote), str(tmp_path / "c")], check=True)
    mc = Machine(tmp_path / "c")
    try:
        mc.sync()
        mc.ingest("twin.md", data)
        assert mc.ledger.get_file("raw/twin.md").state == "ingested"
        assert len(ingests_by_source(mc.root)) == 1 and git(mc.root, "status", "--porcelain", "wiki") == ""
    finally:
        mc.close()


def test_a_round_killed_after_writing_files_is_undone_and_redone(world: tuple[Path, Machine, Machine],
                                                                 isolated_env: dict[str, str]) -> None:
    _remote, ma, mb = world
    ma.ingest("from-a.md", source_text(3, "from-a"))
    mb.ingest("from-b.md", source_text(3, "from-b"))
    ma.sync()
    head = git(mb.root, "rev-parse", "HEAD")
    crashed = ww(mb.root, {**sync_env(isolated_env), "WIKIWRIGHT_CRASH_AT": "sync-files-written"}, "sync")
    assert crashed.returncode != 0
    assert git(mb.root, "rev-parse", "HEAD") == head  # HEAD never moved
    assert (mb.vault.state / "journal.json").exists()  # the door's one journal
    # An ingest on B before the next sync round: its door first undoes the half-done merge, so
    # the merged files are never committed as a person's edit.
    mb.ingest("after-crash.md", source_text(4, "after the crash"))
    assert not (mb.vault.state / "journal.json").exists()
    mb.sync()
    assert (mb.root / "wiki" / "sources" / "src-from-a.md").exists()
    subjects = git(mb.root, "log", "--format=%an|%s").splitlines()
    assert not [s for s in subjects if "edit: your changes" in s], subjects  # never the person's
    assert not git(mb.root, "status", "--porcelain", "--untracked-files=no").strip()


def test_a_round_an_earlier_release_left_half_done_is_undone(world: tuple[Path, Machine, Machine]) -> None:
    """An earlier release's sync round killed after writing a merged file, before moving HEAD,
    left ``sync-journal.json``: the door reads it once as its own journal and puts the file
    back, so it is never committed as a person's edit; the next round brings it properly."""
    import json

    _remote, ma, mb = world
    ma.ingest("from-a.md", source_text(3, "from-a"))
    ma.sync()
    git(mb.root, "fetch", "-q", "origin")
    page = "wiki/sources/src-from-a.md"
    blob = git(mb.root, "rev-parse", f"origin/main:{page}").strip()
    (mb.root / page).write_bytes(subprocess.run(["git", "-C", str(mb.root), "cat-file", "blob", blob],
                                                capture_output=True, check=True).stdout)
    journal = {"old_head": git(mb.root, "rev-parse", "HEAD").strip(), "commit": "", "paths": {page: ["", blob]}}
    (mb.vault.state / "sync-journal.json").write_text(json.dumps(journal), encoding="utf-8")
    mb.ingest("after-crash.md", source_text(4, "after the crash"))
    assert not (mb.vault.state / "sync-journal.json").exists() and not (mb.vault.state / "journal.json").exists()
    assert not (mb.root / page).exists()
    mb.sync()
    assert (mb.root / page).exists()
    subjects = git(mb.root, "log", "--format=%an|%s").splitlines()
    assert not [s for s in subjects if "edit: your changes" in s], subjects
    assert not git(mb.root, "status", "--porcelain", "--untracked-files=no").strip()


def test_sync_pauses_during_a_persons_merge(world: tuple[Path, Machine, Machine],
                                            isolated_env: dict[str, str]) -> None:
    _remote, ma, _mb = world
    (ma.root / ".git" / "MERGE_HEAD").write_text(git(ma.root, "rev-parse", "HEAD"))
    done = ww(ma.root, sync_env(isolated_env), "sync")
    assert done.returncode == 1 and "merge is in progress" in done.stdout, done.stdout + done.stderr
    assert "merge is in progress" in gather(ma.config, ma.vault)["sync"]["waiting"]
    (ma.root / ".git" / "MERGE_HEAD").unlink()
    ma.sync()
    # Another branch checked out: nothing is pushed from it, nothing merged into it.
    configured = Machine.__new__(Machine)
    configured.__dict__.update(ma.__dict__)
    branch_config = ma.config.replace(git=dataclasses.replace(ma.config.git, branch="main"))
    configured.syncer = Syncer(branch_config, ma.vault, ma.ledger, ma.catalog, ma.repo,
                               door=ma.ctx.door)
    git(ma.root, "checkout", "-q", "-b", "experiment")
    report = configured.sync(expect=None)
    assert report.state == "paused" and "experiment" in report.detail, report
    assert "experiment" not in git(ma.root, "ls-remote", "origin")
    git(ma.root, "checkout", "-q", "main")
    configured.sync()


def test_consolidation_claim_first_push_wins(world: tuple[Path, Machine, Machine]) -> None:
    _remote, ma, mb = world
    remotes = [Remote(GitRepo(m.root), "origin", "main") for m in (ma, mb)]
    for remote in remotes:
        remote.fetch()
    first, _ = remotes[0].push_claim("consolidation claim a")
    second, _ = remotes[1].push_claim("consolidation claim b")
    assert (first, second) == (PushResult.PUSHED, PushResult.REJECTED)
    remotes[1].fetch()
    claim = remotes[1].last_claim()
    assert claim is not None and claim[1] == "consolidation claim a"


def test_consolidation_runs_on_one_machine_per_period(world: tuple[Path, Machine, Machine]) -> None:
    from wikiwright.door.sync import claim_consolidation
    from wikiwright.memory.consolidate import Consolidator

    _remote, ma, mb = world
    assert Consolidator(mb.config, mb.vault, mb.ledger, mb.repo).gate().time_ok  # never consolidated
    assert claim_consolidation(ma.config, ma.repo, "machine-a") is None
    refused = claim_consolidation(mb.config, mb.repo, "machine-b")
    assert refused is not None and "another machine claimed" in refused and "machine-a" in refused
    # B's gate reads the claim it fetched: the time gate is closed until the next period.
    assert not Consolidator(mb.config, mb.vault, mb.ledger, mb.repo).gate().time_ok


def test_the_round_asks_git_only_through_vcs() -> None:
    """door/sync.py and door/synctree.py keep the round and the screen; every git command they
    need is a typed call of vcs/ (vcs/merge.py): no subprocess, no raw ``repo.run`` plumbing,
    and the merge rules live in wiki/syncmerge.py (old code ran cat-file, hash-object and
    update-index through subprocess and merge-base, ls-tree, read-tree, write-tree, update-ref
    through repo.run here)."""
    import ast

    import wikiwright.door.sync as sync_module
    import wikiwright.door.synctree as synctree_module

    for module in (sync_module, synctree_module):
        tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        assert "subprocess" not in imported, module.__name__
        runs = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute) and node.func.attr in ("run", "_run", "_with_lock_retry")
                and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "repo"]
        assert not runs, f"{module.__name__}: repo.run at lines {runs}"
    merge_rules = {name for name in dir(sync_module) if name.startswith("_merge_")}
    assert not merge_rules, merge_rules
