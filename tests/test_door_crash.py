"""Crash-point sweep over the door (issue 15): every crash point × every operation kind, then a
second crash during recovery; afterwards doctor is clean, nothing is uncommitted, every
wikiwright commit has exactly one log.md entry (all or nothing), and no commit made under the
person's name holds a line the person did not write.

Each crash is a real SIGKILL (``WIKIWRIGHT_CRASH_AT``, core/crashpoints.py) of a forked copy of
this process running the real operation on a real vault and repository: forking skips the
interpreter start, which keeps 160 crashes inside the time budget. The vault for each kind is
built once and copied for every crash point.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from wikiwright.core.config import load_config
from wikiwright.core.crashpoints import DOOR_POINTS
from wikiwright.core.crashpoints import POINTS as CORE_POINTS
from wikiwright.core.vault import Vault
from wikiwright.door import Door, PageChange
from wikiwright.door.init import init_vault
from wikiwright.door.sync import Syncer
from wikiwright.history.retract import retract_source
from wikiwright.history.revert import revert_ingest
from wikiwright.ingest.pipeline import Pipeline
from wikiwright.intake.watch import Registrar
from wikiwright.memory.consolidate import Consolidator
from wikiwright.memory.dailylog import append_session
from wikiwright.memory.logcommit import commit_quiet_logs
from wikiwright.query.query import Answer, save_answer
from wikiwright.runtime.context import VaultContext
from wikiwright.upkeep.doctor import run_doctor
from wikiwright.upkeep.review import ReviewQueue, ReviewStore

from tests.helpers import git, killed_in_child

# The door's own points and the ones every write and commit pass (fsutil, vcs, ledger).
POINTS = tuple(p for p in (*CORE_POINTS, *DOOR_POINTS) if p != "door-recovered")
# Where a second crash lands while the first one is recovered.
RECOVERY_POINTS = ("after-rename", "door-recovered")
KINDS = ("ingest", "lint", "lint-fix", "review-approval", "review-rejection", "review-request", "consolidate",
         "revert", "retract", "answer", "init", "logs", "sync", "sync-conflict", "user-edit")
# A kind of the sweep that is an operation kind's case: its commits bear that kind's name (a
# person's uncommitted edit is committed under their name by the ingest that finds it).
OP_KIND = {"sync-conflict": "sync", "user-edit": "ingest"}
CONFLICTED = "wiki/sources/src-src.md"
PERSON = "Test Person"
PERSONS_LINE = "A person's note, not yet committed."
SOURCE = "# Billing\n\nThe billing API answers within 200 ms. Billing runs nightly.\n"


# -- one operation of each kind -------------------------------------------------------------

@contextmanager
def _context(root: Path) -> Iterator[VaultContext]:
    """What a process opens on the vault (its one term index among the parts its door makes
    journaled changes in)."""
    with VaultContext(load_config(root), Vault(root)) as ctx:
        yield ctx


@contextmanager
def _door(root: Path) -> Iterator[Door]:
    with _context(root) as ctx:
        yield ctx.door


def _drain(root: Path) -> None:
    with _context(root) as ctx:
        ctx.door.ledger.reset_running()  # what a start does: work cut by a crash is pending again
        pipeline = ctx.ingest_services().pipeline
        while pipeline.drain_once() is not None:
            pass


def _review(root: Path) -> None:
    with _context(root) as ctx:
        queue = ReviewQueue(ctx.config, ctx.vault, ctx.door, ctx.llm_client)
        try:
            queue.process()
        finally:
            queue.close()


def _consolidate(root: Path) -> None:
    with _context(root) as ctx:
        Consolidator(ctx.config, ctx.vault, ctx.ledger, ctx.repo, door=ctx.door).run(force=True)


def _revert(root: Path) -> None:
    with _context(root) as ctx:
        if not ctx.door.repo.log("-F", "--grep=Wikiwright-Operation: revert", limit=1):
            revert_ingest(ctx.door, ctx.terms, "raw/src.md")


def _retract(root: Path) -> None:
    with _door(root) as door:
        if (source := door.ledger.sources()[0]).state != "retracted":
            retract_source(door, source.path, reason="a crash test")


def _answer(root: Path) -> None:
    with _door(root) as door:
        if not door.repo.log("-F", "--grep=Wikiwright-Operation: answer", limit=1):
            page = door.ledger.sources()[0].page
            answer = Answer("How fast is billing?", "Within 200 ms [[src-src]].", True, "model", [page])
            save_answer(door, answer, date(2026, 5, 1))


def _init(root: Path) -> None:
    init_vault(root, "wikiwright", "wikiwright@localhost")


def _sync(root: Path) -> None:
    """One sync round: a merge of the other machine's ingest with this machine's, then the push."""
    with _door(root) as door:
        report = Syncer(door.config, door.vault, door.ledger, door.catalog, door.repo, door=door).round()
        assert report.state in ("pushed", "up-to-date", "integrated"), report


def _two_machines(root: Path, conflict: bool = False) -> None:
    """``root`` a clone of a remote kept inside its own .wikiwright/ (so a copy of the vault is a
    copy of its remote too), with an ingest of its own; the remote one ingest ahead of it (with
    ``conflict``, the person also changed the same line of one page on both machines)."""
    remote = root.parent / f"{root.name}-remote.git"
    other = root.parent / f"{root.name}-other"
    git(root.parent, "init", "-q", "--bare", str(remote))
    other.mkdir()
    git(other, "init", "-q")
    git(other, "remote", "add", "origin", str(remote))
    _ingested(other)
    (other / ".wikiwright" / "config.toml").write_text('[git]\nremote = "origin"\n', encoding="utf-8")
    _sync(other)
    subprocess.run(["git", "clone", "-q", str(remote), str(root)], check=True, capture_output=True)
    init_vault(root, "wikiwright", "wikiwright@localhost")
    (root / ".wikiwright" / "config.toml").write_text('[git]\nremote = "origin"\n', encoding="utf-8")
    _sync(root)  # the ledger learns the other machine's ingest
    (root / "raw" / "mine.md").write_text("# Exports\n\nThe export runs hourly and keeps a week of files.\n")
    with _door(root) as door:
        Registrar(door.vault, door.ledger, 10**7, threading.Event()).register(root / "raw" / "mine.md")
    _drain(root)
    if conflict:
        for machine, where in ((root, "here"), (other, "there")):
            page = machine / CONFLICTED
            page.write_text(page.read_text().replace("# ", f"# (edited {where}) ", 1))
            git(machine, "commit", "-qam", f"edited {where}")
    (other / "raw" / "theirs.md").write_text("# Invoices\n\nInvoices are sent on the first of the month.\n")
    with _door(other) as door:
        Registrar(door.vault, door.ledger, 10**7, threading.Event()).register(other / "raw" / "theirs.md")
    _drain(other)
    _sync(other)
    shutil.move(str(remote), root / ".wikiwright" / "remote.git")
    git(root, "remote", "set-url", "origin", ".wikiwright/remote.git")
    git(root, "fetch", "-q", "origin")
    shutil.rmtree(other)


def _logs(root: Path) -> None:
    with _door(root) as door:
        commit_quiet_logs(door, 0)


def _lint(root: Path) -> None:
    with _context(root) as ctx:
        queue = ReviewQueue(ctx.config, ctx.vault, ctx.door, ctx.llm_client)
        try:
            queue.run_lint_and_sync()
        finally:
            queue.close()


# A source over this bound waits for a person in REVIEW.md: the model planner refuses it on its
# estimate, before any call (so no model server is needed; the address below is never reached).
_COSTLY = '''[llm]
model = "openai/crash-test"
api_base = "http://127.0.0.1:9/v1"
api_key_env = "WIKIWRIGHT_CRASH_TEST_KEY"
max_tokens_per_source = 20
'''


def _drain_with_model(root: Path) -> None:
    from wikiwright.ingest.llm_planner import ModelPlanner

    os.environ["WIKIWRIGHT_CRASH_TEST_KEY"] = "unused"
    with _context(root) as ctx:
        door = ctx.door
        door.ledger.reset_running()
        planner = ModelPlanner(door.config, door.vault, door.ledger, door.catalog, client=ctx.llm_client())
        pipeline = Pipeline(door, planner=planner)
        while pipeline.drain_once() is not None:
            pass


OPERATIONS: dict[str, Callable[[Path], None]] = {
    "ingest": _drain, "lint-fix": _review, "review-approval": _review, "review-rejection": _review,
    "consolidate": _consolidate, "revert": _revert, "retract": _retract, "answer": _answer, "init": _init,
    "logs": _logs, "sync": _sync, "sync-conflict": _sync, "lint": _lint, "review-request": _drain_with_model,
    "user-edit": _drain,
}


# -- the vault each kind starts from ------------------------------------------------------------

def _ingested(root: Path) -> None:
    init_vault(root, "wikiwright", "wikiwright@localhost")
    (root / "raw" / "src.md").write_text(SOURCE)
    _register(root)
    _drain(root)


def _register(root: Path) -> None:
    with _door(root) as door:
        Registrar(door.vault, door.ledger, 10**7, threading.Event()).register(root / "raw" / "src.md")


def _proposed(root: Path, kind: str, fix: dict[str, object], mark: str) -> None:
    _ingested(root)
    with _door(root) as door, door.operation("lint", "a proposal") as op:
        op.propose(kind, [{"description": f"a {kind} proposal for the crash test", "fix": fix}])
    review = root / "REVIEW.md"
    text = review.read_text()
    review.write_text(text.replace("- [ ] a ", f"- [{mark}] a "))  # the person answers


def _base(kind: str, root: Path) -> None:
    if kind == "init":
        root.mkdir(parents=True)
    elif kind == "ingest":
        init_vault(root, "wikiwright", "wikiwright@localhost")
        (root / "raw" / "src.md").write_text(SOURCE)
        _register(root)
    elif kind == "lint-fix":
        _proposed(root, "orphan", {"action": "link-from-overview", "page": "sources/src-src"}, "x")
    elif kind == "review-approval":
        _proposed(root, "held-back", {"action": "write-page", "page": "topics/nightly",
                                      "text": "---\ntype: topic\ntitle: Nightly\n---\n# Nightly\n\nRuns.\n",
                                      "base": None}, "x")
    elif kind == "review-rejection":
        _proposed(root, "held-back", {"action": "write-page", "page": "topics/other", "text": "# Other\n",
                                      "base": None}, "-")
    elif kind in ("sync", "sync-conflict"):
        _two_machines(root, conflict=kind == "sync-conflict")
    elif kind == "lint":
        _ingested(root)
        lonely = "---\ntype: topic\ntitle: Lonely\n---\n# Lonely\n\nNobody links here.\n"
        (root / "wiki" / "lonely.md").write_text(lonely)
        git(root, "add", "wiki/lonely.md")
        git(root, "commit", "-q", "-m", "a page nobody links to")
    elif kind == "review-request":
        init_vault(root, "wikiwright", "wikiwright@localhost")
        (root / ".wikiwright" / "config.toml").write_text(_COSTLY, encoding="utf-8")
        (root / "raw" / "src.md").write_text(SOURCE)
        _register(root)
    elif kind == "user-edit":
        _ingested(root)
        page = root / "wiki" / "overview.md"  # every offline ingest writes its generated block
        page.write_text(page.read_text() + f"\n{PERSONS_LINE}\n")
        (root / "raw" / "more.md").write_text("# Exports\n\nThe export runs hourly.\n")
        with _door(root) as door:
            Registrar(door.vault, door.ledger, 10**7, threading.Event()).register(root / "raw" / "more.md")
    elif kind == "logs":
        _ingested(root)
        when = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
        for n in range(3):
            append_session(root / "logs", [f"- Session note {n}: the export ran"], section="Notes", label="test",
                           when=when + timedelta(minutes=10 * n))
    elif kind == "consolidate":
        _ingested(root)
        when = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
        for n in range(5):
            append_session(root / "logs", [f"- 🔴 Rule number {n}: keep the export idempotent"],
                           section="Decisions", label="test", when=when + timedelta(minutes=10 * n))
    else:
        _ingested(root)


# -- crashing --------------------------------------------------------------------------------

def _run(operation: Callable[[Path], None], root: Path, crash_at: str) -> bool:
    """Run ``operation`` in a forked child that dies at ``crash_at``; True if it was killed."""
    return killed_in_child(lambda: operation(root), crash_at)


def _recover(root: Path) -> None:
    if (root / ".wikiwright" / "state.db").exists():
        with _door(root):
            pass


def _person_lines(root: Path, *refs: str) -> set[str]:
    """Lines added by commits made under the person's name (in HEAD's history, or ``refs``')."""
    out = git(root, "log", f"--author={PERSON}", "-p", "--format=", "--no-renames", *refs)
    return {line[1:].strip() for line in out.splitlines() if line.startswith("+") and not line.startswith("+++")}


def _audit(root: Path, kind: str, allowed_person_lines: set[str], already: int = 0) -> None:
    """``already``: commits of ``kind`` the starting vault had (a synced vault's earlier rounds)."""
    case, kind = kind, OP_KIND.get(kind, kind)
    committed = ("wiki", "REVIEW.md", "SCHEMA.md", ".gitignore", *(("logs",) if kind == "logs" else ()))
    assert git(root, "status", "--porcelain", "--untracked-files=all", "--", *committed).strip() == ""
    ours = [s for s in git(root, "log", "--author=wikiwright", "--format=%s").splitlines() if s]
    entries = (root / "wiki" / "log.md").read_text().count("\n## [")
    logged = [s for s in ours if not s.startswith("sync:")]  # a merge commit adds no entry of its own
    assert entries == len(logged), f"{entries} log.md entries for {len(logged)} wikiwright commits: {ours}"
    if kind == "sync":  # the round ended with its push
        assert git(root, "rev-parse", "HEAD") == git(root, "rev-parse", "origin/main")
        assert len(git(root, "rev-list", "--parents", "-n1", "HEAD").split()) == 3  # a two-parent commit
        assert git(root, "ls-tree", "--name-only", "HEAD", "raw/").split() == ["raw/mine.md", "raw/src.md",
                                                                              "raw/theirs.md"]
        # The merge brought the other machine's ingest into this vault's ledger.
        with _door(root) as door:
            assert {s.path for s in door.ledger.sources()} >= {"raw/mine.md", "raw/theirs.md"}
    if case == "sync-conflict":  # the conflict is proposed once, this machine's line quoted
        review = (root / "REVIEW.md").read_text()
        assert review.count("sync-conflict-") == 1 and "(edited here)" in review, review
        assert "(edited there)" in (root / CONFLICTED).read_text()
        store = ReviewStore(Vault(root).db_path)
        try:
            assert [item.kind for item in store.items("open")] == ["sync-conflict"]
        finally:
            store.close()
    # The operation happened, once, when it was retried.
    assert len([s for s in ours if s.startswith(f"{kind}:")]) == already + 1, ours
    stray = {line for line in _person_lines(root) - allowed_person_lines if line}
    assert not stray, f"lines committed under the person's name that they did not write: {sorted(stray)[:5]}"
    with _context(root) as ctx:
        report = run_doctor(ctx.config, ctx.vault, ctx.ledger, ctx.repo, repair=False)
    assert report.ok, [c for c in report.checks if not c.ok]
    assert not (root / ".wikiwright" / "journal.json").exists()
    _audit_terms(root, kind)


def _audit_terms(root: Path, kind: str) -> None:
    """The term index holds the sources the history has, and no other: a source whose ingest
    never committed (or was reverted) has no terms there; one this machine ingested has them."""
    path = root / ".wikiwright" / "terms.db"
    if not path.exists():
        return
    db = sqlite3.connect(path)
    try:
        recorded = {str(row[0]) for row in db.execute("SELECT source FROM sources")}
        mentioned = {str(row[0]) for row in db.execute("SELECT DISTINCT source FROM mentions")}
    finally:
        db.close()
    with _door(root) as door:
        sources = door.ledger.sources()
    # Sources the wiki has (a retracted one keeps its page and its terms: nothing is deleted).
    kept = {s.page.rsplit("/", 1)[-1]: s.engine for s in sources if s.state in ("ingested", "retracted")}
    assert mentioned <= recorded <= set(kept), (recorded, sources)
    if kind != "sync":  # a source another machine ingested arrives by sync, never recorded here
        assert recorded == {stem for stem, engine in kept.items() if engine == "offline"}, (recorded, sources)


def _audit_persons_edit(root: Path, kind: str) -> None:
    """user-edit: the person's line committed once, under their name, and still on the page."""
    if kind != "user-edit":
        return
    theirs = git(root, "log", f"--author={PERSON}", "--format=%H", "--", "wiki/overview.md").split()
    assert len(theirs) == 1, theirs
    assert PERSONS_LINE in git(root, "show", theirs[0])
    assert PERSONS_LINE in (root / "wiki" / "overview.md").read_text()


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """Vaults in memory when the machine has a tmpfs: 160 crashes cost fsyncs, not what is tested."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="wikiwright-crash-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("kind", KINDS)
def test_every_crash_point_then_a_second_crash_in_recovery(scratch: Path, kind: str) -> None:
    base = scratch / "base"
    _base(kind, base)
    review = base / "REVIEW.md"
    allowed = {line.strip() for line in review.read_text().splitlines()} if review.exists() else set()
    if kind == "user-edit":
        allowed.add(PERSONS_LINE)
    # Commits of this kind already in the history the operation builds on (a synced vault's
    # earlier rounds, here and on the remote as fetched).
    subjects = git(base, "log", "--author=wikiwright", "--format=%s", "--all").splitlines() if kind != "init" else []
    already = sum(subject.startswith(f"{OP_KIND.get(kind, kind)}:") for subject in subjects)
    if kind != "init":  # what the person committed themselves, on either machine, before the operation
        allowed |= _person_lines(base, "--all")
    operation = OPERATIONS[kind]
    reached = []
    # Every point once; the second crash (during recovery) after the crash that leaves the most
    # to recover: everything written, nothing committed.
    syncing = OP_KIND.get(kind, kind) == "sync"
    points = (*POINTS, "sync-files-written") if syncing else POINTS
    # A sync round's second crash also lands after its merged files are written, before the commit.
    firsts = ("before-commit", "sync-files-written") if syncing else ("before-commit",)
    runs = [(point, "") for point in points] + [(first, again) for first in firsts for again in RECOVERY_POINTS]
    for point, again in runs:
        root = scratch / f"{point}-{again or 'once'}"
        shutil.copytree(base, root, symlinks=True)
        if not _run(operation, root, point):
            assert not again, f"{kind} never reached {point}"
            _audit(root, kind, allowed, already)  # ran to the end: the plain operation is audited the same way
            _audit_persons_edit(root, kind)
            continue
        reached.append(point)
        if again:
            _run(_recover, root, again)  # a second crash while recovering (or none if not reached)
        _recover(root)
        _audit_terms(root, kind)  # recovered: terms only of what the history has, before anything runs again
        operation(root)  # the restart: recovery, then the operation again
        _audit(root, kind, allowed, already)
        _audit_persons_edit(root, kind)
        shutil.rmtree(root)
    # Every operation passes the journal, a file write and the commit (a sync round its merged
    # files too: it is an ordinary door operation).
    passed = {"door-journal-saved", "after-rename", "before-commit", "after-commit"}
    if syncing:
        passed.add("sync-files-written")
    assert passed <= set(reached), reached
    print(f"{kind}: {len(reached)} crashes at {len(set(reached))} points, all recovered")


def test_the_sweep_checks_would_catch_a_half_operation(tmp_path: Path) -> None:
    """The audit is not vacuous: a page written without its commit fails it."""
    root = tmp_path / "v"
    _ingested(root)
    (root / "wiki" / "stray.md").write_text("# Stray\n")
    with pytest.raises(AssertionError):
        _audit(root, "ingest", set())
    # A page committed under the person's name with our text fails it too.
    with _door(root) as door, door.operation("lint", "x") as op:
        op.write([PageChange("stray", "# Stray\n\nmore\n")])
    with pytest.raises(AssertionError, match="did not write"):
        _audit(root, "ingest", set())


def test_the_sweep_covers_every_operation_kind() -> None:
    from wikiwright.core.opkinds import OpKind

    # Every kind wikiwright writes (not a person's own commit); a person's uncommitted edit is
    # committed by the operation that finds it: the user-edit case of an ingest.
    assert {OP_KIND.get(kind, kind) for kind in KINDS} | {"user-edit"} == {k.value for k in OpKind} - {"manual"}
    assert set(OPERATIONS) == set(KINDS)


def test_one_journal_names_the_head_move_and_the_persons_index(scratch: Path) -> None:
    """A crash between moving HEAD and updating the person's git index: the door's journal (its
    only record) names the move and the index entries, and its recovery finishes them — no
    second file (old code: ``git-index.pending`` beside the journal, read by its own recovery)."""
    import json

    root = scratch / "v"
    _base("ingest", root)
    assert _run(_drain, root, "after-commit")
    state = root / ".wikiwright"
    assert not (state / "git-index.pending").exists()
    entry = json.loads((state / "journal.json").read_text(encoding="utf-8"))
    head = git(root, "rev-parse", "HEAD").strip()
    assert entry["head"][1] == head and entry["head"][0] == git(root, "rev-parse", "HEAD^").strip()
    assert "raw/src.md" in entry["index"] and "wiki/log.md" in entry["index"]
    staged = git(root, "diff", "--cached", "--name-only")
    assert "wiki/log.md" in staged  # the person's index has not caught up yet
    _recover(root)
    assert git(root, "diff", "--cached", "--name-only") == ""
    assert not (state / "journal.json").exists()
    _audit(root, "ingest", set())


def test_an_ingest_killed_after_its_commit_is_recorded_by_the_doors_recovery_alone(tmp_path: Path) -> None:
    """The ledger's record of an ingest is the door's journaled call: a kill right after the
    commit is finished by opening the door (no history search by the source's sha256, no second
    plan). Old code: the file stayed 'running' until a worker grepped the history for it."""
    root = tmp_path / "v"
    init_vault(root, "wikiwright", "wikiwright@localhost")
    (root / "raw" / "src.md").write_text(SOURCE)
    _register(root)
    assert _run(_drain, root, "after-commit")
    commit = git(root, "log", "-1", "--format=%H").strip()
    assert "Wikiwright-Source: raw/src.md" in git(root, "log", "-1", "--format=%B")
    with _door(root) as door:  # the restart: recovery only
        record = door.ledger.get_file("raw/src.md")
        assert record is not None and (record.state, record.commit_sha) == ("ingested", commit), record
        assert [s.commit_sha for s in door.ledger.sources()] == [commit]


# -- a person types in a file the crashed operation wrote ---------------------------------------

OVERVIEW = "wiki/overview.md"


def _with_line(text: str, line: str) -> str:
    """overview.md with a person's line under its title (away from the generated block every
    offline ingest and every merge of two machines' ingests write)."""
    assert "\n# Overview\n" in text
    return text.replace("\n# Overview\n", f"\n# Overview\n\n{line}\n", 1)


@pytest.mark.parametrize("kind", ["ingest", "sync"])
def test_every_write_killed_then_a_persons_line_keeps_the_operation_out_of_their_commit(
        scratch: Path, kind: str) -> None:
    """Every write of an ingest and of a sync round, killed once with the temp file written and
    not yet in place (``after-temp-write:n``) and once just after it landed (``after-rename:n``);
    before the restart the person adds a line to overview.md, away from its block. Recovery must put back every file
    the operation wrote — also one it writes twice (a merge writes index.md, then the round
    rebuilds it), and also overview.md under the person's new line (only the operation's change
    taken out) — so the restart commits exactly the person's line under their name, and doctor
    is green. Old code: the journal forgot the first of two writes of a file (index.md left as
    the merge wrote it) and the bytes an ingest wrote were not in the object store (overview.md
    left with the ingest's uncommitted block): "changed after an interrupted operation wrote it;
    left as it is", and the next round committed that text as the person's."""
    base = scratch / "base"
    _base(kind, base)
    allowed = {line.strip() for line in (base / "REVIEW.md").read_text().splitlines()}
    allowed |= _person_lines(base, "--all")
    subjects = git(base, "log", "--author=wikiwright", "--format=%s", "--all").splitlines()
    already = sum(subject.startswith(f"{kind}:") for subject in subjects)
    operation = OPERATIONS[kind]
    crashes = 0
    for point in ("after-temp-write", "after-rename"):
        for n in range(1, 60):
            root = scratch / f"{point}-{n}"
            shutil.copytree(base, root, symlinks=True)
            if not _run(operation, root, f"{point}:{n}"):
                shutil.rmtree(root)
                break
            crashes += 1
            line = f"A person's line number {n}, typed while the daemon was down."
            page = root / OVERVIEW
            page.write_text(_with_line(page.read_text(encoding="utf-8"), line), encoding="utf-8")
            _recover(root)
            committed = {rel: git(root, "show", f"HEAD:{rel}") for rel in ("wiki/index.md", "REVIEW.md", OVERVIEW)}
            for rel in ("wiki/index.md", "REVIEW.md"):  # the operation's files back as committed
                assert (root / rel).read_text(encoding="utf-8") == committed[rel], \
                    f"{point}:{n}: {rel} kept the crashed write"
            assert page.read_text(encoding="utf-8") == _with_line(committed[OVERVIEW], line), \
                f"{point}:{n}: overview.md kept the crashed operation's change under the person's line"
            assert not list(root.rglob("*.wikiwright-kept-*")), f"{point}:{n}: a write of ours taken for a save"
            operation(root)  # the restart
            assert line in page.read_text(encoding="utf-8"), f"{point}:{n}: the person's line lost"
            _audit(root, kind, allowed | {line}, already)
            shutil.rmtree(root)
    assert crashes >= 10, crashes
