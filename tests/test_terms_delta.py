"""The offline planner writes no state while it plans (issue 24): a source's terms reach terms.db
only once its ingest commits, made by the door from the delta the plan carries (journaled, so
recovery makes them after a crash), and a plan set aside leaves nothing there.

Real vaults, real git, real SQLite files; a crash is a real SIGKILL of a forked child at a
named point (``WIKIWRIGHT_CRASH_AT``, core/crashpoints.py).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from wikiwright.core.config import load_config
from wikiwright.core.errors import WikiwrightError
from wikiwright.core.vault import Vault
from wikiwright.door import Door
from wikiwright.door.init import init_vault
from wikiwright.door.journal import JournalEntry, entry_problem
from wikiwright.history.revert import revert_ingest
from wikiwright.ingest.plan import IngestPlan
from wikiwright.ingest.terms import SourceRecorded, Term, TermIndex, TermsDelta, forget_source
from wikiwright.runtime.context import VaultContext

from tests.conftest import Services
from tests.helpers import drain_in_workers, killed_in_child, plans_set_aside
from tests.test_offline_wiki import VALGRIND_A, VALGRIND_B


def rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of a term index, read as another process would (its own connection)."""
    db = sqlite3.connect(path)
    try:
        return {table: sorted(db.execute(f"SELECT * FROM {table}").fetchall())
                for table in ("terms", "mentions", "sources", "totals")}
    finally:
        db.close()


def terms_rows(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    return rows(root / ".wikiwright" / "terms.db")


def recorded_sources(root: Path) -> set[str]:
    return {str(row[0]) for row in terms_rows(root)["sources"]}


# -- a plan set aside -------------------------------------------------------------------------

def test_a_plan_set_aside_leaves_no_terms_and_its_source_counts_once_it_commits(
        services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    services.drop("a.md", VALGRIND_A)
    assert [r.state for r in services.drain()] == ["ingested"]
    before = terms_rows(services.vault.root)
    planner = services.pipeline.planner
    plans: list[IngestPlan] = plans_set_aside(services, monkeypatch)  # a shutdown asked for while planned
    services.drop("b.md", VALGRIND_B)
    result = services.pipeline.drain_once()
    assert result is not None and result.state == "pending", result
    # The plan counted its own source (the second to mention Valgrind: the term gets its page)...
    assert "valgrind" in plans[0].pages
    # ... and left nothing of it: not in the file, not in the process's own connection.
    assert terms_rows(services.vault.root) == before
    terms: TermIndex = planner.terms  # type: ignore[attr-defined]
    assert terms.source_count("valgrind") == 1 and terms.page_of("valgrind") == ""
    assert not (services.vault.wiki / "valgrind.md").exists()

    monkeypatch.undo()
    services.pipeline.stop.clear()
    assert [r.state for r in services.drain()] == ["ingested"]
    assert terms.source_count("valgrind") == 2 and terms.page_of("valgrind") == "valgrind"
    assert [m.source for m in terms.mentions("valgrind")] == ["src-a", "src-b"]
    assert terms.source_total() == 2 and recorded_sources(services.vault.root) == {"src-a", "src-b"}


# -- crashes ----------------------------------------------------------------------------------

def in_child(root: Path, work: Callable[[VaultContext], None], crash_at: str) -> bool:
    """``work`` on the vault's context in a forked child that dies at ``crash_at``; True if killed."""

    def on_context() -> None:
        with VaultContext(load_config(root), Vault(root)) as ctx:
            work(ctx)

    return killed_in_child(on_context, crash_at)


def drain(ctx: VaultContext) -> None:
    ctx.ledger.reset_running()  # what a start does: work a crash cut is pending again
    pipeline = ctx.ingest_services().pipeline
    while pipeline.drain_once() is not None:
        pass


def two_sources(root: Path) -> None:
    """A vault with one source ingested and a second one queued (it gives Valgrind its page)."""
    init_vault(root, "wikiwright", "wikiwright@localhost")
    (root / "raw" / "a.md").write_text(VALGRIND_A)
    with VaultContext(load_config(root), Vault(root)) as ctx:
        ctx.ingest_services().registrar.register(root / "raw" / "a.md")
        drain(ctx)
        (root / "raw" / "b.md").write_text(VALGRIND_B)
        ctx.ingest_services().registrar.register(root / "raw" / "b.md")


def ingest_commits(root: Path) -> int:
    with VaultContext(load_config(root), Vault(root)) as ctx:
        return len(ctx.repo.log("-F", "--grep=Wikiwright-Operation: ingest"))


@pytest.mark.parametrize(("point", "committed"), [
    ("before-commit", False),  # the plan is set aside: the wiki and terms.db as before it
    ("door-after-commit", True),  # committed, terms not yet made: recovery makes them
    ("door-before-journal-clear", True),  # made, the journal not yet cleared: made again, once
])
def test_a_crash_around_the_commit_leaves_terms_as_the_history_has_it(tmp_path: Path, point: str,
                                                                      committed: bool) -> None:
    reference = tmp_path / "reference"  # the same two ingests, no crash
    two_sources(reference)
    with VaultContext(load_config(reference), Vault(reference)) as ctx:
        drain(ctx)
    root = tmp_path / "vault"
    two_sources(root)
    one_source = terms_rows(root)
    assert in_child(root, drain, point)
    if point != "door-before-journal-clear":  # nothing of the second source before the door makes it
        assert terms_rows(root) == one_source
    # A door that cannot make the journaled terms does not open (the journal waits for one that can).
    if committed:
        with VaultContext(load_config(root), Vault(root)) as bare, pytest.raises(WikiwrightError, match="terms"):
            Door.open(bare.config, bare.vault, ledger=bare.ledger, catalog=bare.catalog, repo=bare.repo)
        assert (root / ".wikiwright" / "journal.json").exists()
    with VaultContext(load_config(root), Vault(root)) as ctx:
        ctx.door  # noqa: B018 - opening it runs the recovery
    assert not (root / ".wikiwright" / "journal.json").exists()
    assert ingest_commits(root) == (2 if committed else 1)
    assert recorded_sources(root) == ({"src-a", "src-b"} if committed else {"src-a"})
    if committed:
        assert terms_rows(root) == terms_rows(reference)
    else:
        assert terms_rows(root) == one_source
    with VaultContext(load_config(root), Vault(root)) as ctx:  # the restart: the queue runs again
        drain(ctx)
    assert ingest_commits(root) == 2
    assert terms_rows(root) == terms_rows(reference)


def test_a_revert_that_never_commits_keeps_the_source_in_the_term_index(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    two_sources(root)
    with VaultContext(load_config(root), Vault(root)) as ctx:
        drain(ctx)
    both = terms_rows(root)
    assert recorded_sources(root) == {"src-a", "src-b"}

    def revert(ctx: VaultContext) -> None:
        revert_ingest(ctx.door, ctx.terms, "raw/b.md")

    assert in_child(root, revert, "before-commit")
    assert terms_rows(root) == both  # not reverted: the index still has the source
    with VaultContext(load_config(root), Vault(root)) as ctx:
        ctx.door  # noqa: B018 - the recovery puts the wiki back
        assert terms_rows(root) == both
        revert(ctx)
        assert ctx.terms.source_count("valgrind") == 1 and ctx.terms.page_of("valgrind") == ""
    assert recorded_sources(root) == {"src-a"}
    assert not (root / "wiki" / "valgrind.md").exists()


# -- the trial and the delta ------------------------------------------------------------------

def memcheck(score: float = 3.0) -> Term:
    return Term("memcheck", "Memcheck", "entity", "Memcheck is a memory error detector.", score)


def test_a_trial_is_seen_inside_it_only_and_its_delta_made_twice_is_made_once(tmp_path: Path) -> None:
    path = tmp_path / "terms.db"
    mine, other = TermIndex(path), TermIndex(path)  # this process's index, another process's
    try:
        mine.record("src-a", "A", [memcheck()])
        with mine.trial() as delta:
            mine.record("src-b", "B", [memcheck(1.0)])
            mine.set_page("memcheck", "memcheck")
            assert mine.source_count("memcheck") == 2 and mine.page_of("memcheck") == "memcheck"
            assert other.source_count("memcheck") == 1 and other.page_of("memcheck") == ""
            # Another thread of this process waits for the trial: it cannot take the index.
            took: list[bool] = []
            thread = threading.Thread(target=lambda: took.append(mine._lock.acquire(blocking=False)))
            thread.start()
            thread.join()
            assert took == [False]
        assert mine.source_count("memcheck") == 1 and other.source_count("memcheck") == 1
        assert [type(step).__name__ for step in delta.steps] == ["SourceRecorded", "PageBound"]
        journaled = json.loads(json.dumps(delta.to_json()))
        mine.apply_journaled(journaled)
        once = rows(path)
        mine.apply_journaled(journaled)  # a recovery making it again
        assert rows(path) == once
        assert other.source_count("memcheck") == 2 and other.page_of("memcheck") == "memcheck"
        assert other.source_total() == 2 and other.paged_count() == 1
        assert [s for s, _ in other.newest_sources()] == ["src-b", "src-a"]
        # Forgetting a source is a delta too; forgetting one never recorded changes nothing.
        with mine.trial() as gone:
            forget_source(mine, "src-b")
            forget_source(mine, "src-never")
            assert mine.source_count("memcheck") == 1
        assert other.source_count("memcheck") == 2
        assert [type(step).__name__ for step in gone.steps] == ["SourceForgotten"]
        mine.apply(gone)
        mine.apply(gone)
        assert other.source_count("memcheck") == 1 and other.source_total() == 1
    finally:
        mine.close()
        other.close()


def test_a_journaled_delta_that_is_not_one_is_refused(tmp_path: Path) -> None:
    delta = TermsDelta([SourceRecorded("src-a", "A", (memcheck(),))])
    entry = JournalEntry("op", "ingest", "t", deltas=[[delta.sink, delta.to_json()]])
    again = JournalEntry.from_json(entry.to_json())
    assert TermsDelta.from_json(again.deltas[0][1]) == delta
    assert entry_problem(tmp_path, again) == ""
    assert entry_problem(tmp_path, JournalEntry("op", "ingest", "t", deltas=[["terms", "DROP TABLE"]]))
    with pytest.raises(ValueError, match="not a term index"):
        TermsDelta.from_json({"steps": [["drop", "terms"]]})
    with pytest.raises(ValueError, match="not a term index"):
        TermsDelta.from_json({"steps": [["recorded", "src-a", 3, [], []]]})


# -- two workers --------------------------------------------------------------------------------

MEMORY_NOTES = [VALGRIND_A, VALGRIND_B] + [
    f"# Leak hunt {n}\n\nValgrind is a tool that finds leaks in service {n}. Memcheck ran on the "
    f"Heron Gateway for a morning.\nThe Heron Gateway is the edge proxy of service {n}.\n" for n in range(6)]


def counts(index: TermIndex, keys: list[str]) -> dict[str, tuple[int, str, list[str]]]:
    """Per term: how many sources mention it, its page, and its "Related" (order-free answers)."""
    return {key: (index.source_count(key), index.page_of(key), [p for _, p, _ in index.related(key)])
            for key in keys}


def test_two_workers_planning_in_trials_count_what_one_worker_counts(services: Services, tmp_path: Path) -> None:
    """Each worker's plan sees its own source's terms and the committed ones, never another's
    uncommitted plan; at the end the index is what one worker ingesting the same sources makes."""
    for n, text in enumerate(MEMORY_NOTES):
        services.drop(f"note-{n}.md", text)
    drain_in_workers(services.pipeline, 2)
    done = sorted(services.ledger.sources(), key=lambda r: r.ingested_at)
    assert [r.state for r in done] == ["ingested"] * len(MEMORY_NOTES)
    # One worker, the sources in the order the two committed them (what a term is can depend on
    # the order: a capitalised word only opening sentences is a name once an earlier source said so).
    root = tmp_path / "one-worker"
    init_vault(root, "wikiwright", "wikiwright@localhost")
    keys = ["valgrind", "memcheck", "heron gateway"]
    with VaultContext(load_config(root), Vault(root)) as ctx:
        for record in done:
            name = record.path.removeprefix("raw/")
            (root / "raw" / name).write_text((services.vault.raw / name).read_text())
            ctx.ingest_services().registrar.register(root / "raw" / name)
            drain(ctx)
        expected = counts(ctx.terms, keys)
        assert expected["valgrind"] == (len(MEMORY_NOTES), "valgrind", expected["valgrind"][2])
    assert services.ctx is not None
    assert counts(services.ctx.terms, keys) == expected
    assert services.ctx.terms.source_total() == len(MEMORY_NOTES)
