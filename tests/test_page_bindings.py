"""A source's page is bound when its ingest commits, never while it is planned (issue 24).

Planning only looks the name up (the bound page, or the name a new binding would get: ``-2``,
``-3``… against the bindings and the files there); the ingest's operation checks the name again
under the vault's write lock and records the binding as a journaled ledger call, made in the
same state.db transaction as the commit's other ledger calls, so a crash after the commit
still records it and a crash in the middle leaves all of them or none.

Real vaults, real git, real SQLite files; a crash is a real SIGKILL of a forked child at a
named point (``WIKIWRIGHT_CRASH_AT``, core/crashpoints.py).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from wikiwright.core.config import load_config
from wikiwright.core.vault import Vault
from wikiwright.door.init import init_vault
from wikiwright.ingest.plan import IngestPlan
from wikiwright.runtime.context import VaultContext

from tests.conftest import Services
from tests.helpers import drain_in_workers, git, ingest_commits, plans_set_aside
from tests.llm_server import ScriptedServer, user_prompt
from tests.model_helpers import reply, use_model
from tests.test_terms_delta import drain, in_child

FIRST = "# Harbour ferries\n\nThe ferry to the island leaves the harbour at nine every morning.\n"
SECOND = "# Ferry timetable\n\nThe winter timetable moves the island ferry to ten o'clock.\n"


def bindings(root: Path) -> dict[str, str]:
    """raw/ path -> bound page, read from state.db as another process would (its own connection)."""
    db = sqlite3.connect(root / ".wikiwright" / "state.db")
    try:
        return {str(path): str(page) for page, path in db.execute("SELECT page, path FROM page_bindings")}
    finally:
        db.close()


def state_rows(root: Path, path: str) -> tuple[bool, bool, bool]:
    """Whether state.db holds ``path``'s binding, its ingest (sources) and its page's blob."""
    db = sqlite3.connect(root / ".wikiwright" / "state.db")
    try:
        bound = db.execute("SELECT page FROM page_bindings WHERE path=?", (path,)).fetchone()
        ingested = db.execute("SELECT page FROM sources WHERE path=?", (path,)).fetchone()
        page = (bound or ingested or ("sources/src-a-b",))[0]
        blob = db.execute("SELECT blob FROM page_blobs WHERE page=?", (page,)).fetchone()
        return bound is not None, ingested is not None, blob is not None
    finally:
        db.close()


# -- a plan that never commits ------------------------------------------------------------------

def test_a_plan_set_aside_binds_no_page_and_the_next_plan_gets_the_same_name(
        services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    plans: list[IngestPlan] = plans_set_aside(services, monkeypatch)  # a shutdown asked for while planned
    services.drop("a b.md", FIRST)
    result = services.pipeline.drain_once()
    assert result is not None and result.state == "pending", result
    assert plans[0].source_page == "sources/src-a-b"  # the name it would get...
    assert bindings(services.vault.root) == {}  # ... and no binding (old code: bound while planned)
    assert services.ledger.bound_page("raw/a b.md") is None

    monkeypatch.undo()
    services.pipeline.stop.clear()
    assert [r.state for r in services.drain()] == ["ingested"]
    assert bindings(services.vault.root) == {"raw/a b.md": "sources/src-a-b"}
    assert (services.vault.wiki / "sources" / "src-a-b.md").exists()


def test_a_quarantined_source_leaves_no_binding(services: Services) -> None:
    """The model's reply cannot be used (twice): the source is quarantined before any commit."""
    with ScriptedServer(["{\"title\": \"x\", \"operations\": [", "{\"title\": \"x\", \"operations\": ["]) as server:
        use_model(services, server)
        services.drop("a b.md", FIRST)
        assert [r.state for r in services.drain()] == ["quarantined"]
    assert bindings(services.vault.root) == {}  # old code: bound by the planner before its model call
    assert not (services.vault.wiki / "sources" / "src-a-b.md").exists()


# -- crashes ------------------------------------------------------------------------------------

def one_source_queued(root: Path) -> None:
    init_vault(root, "wikiwright", "wikiwright@localhost")
    (root / "raw" / "a b.md").write_text(FIRST)
    with VaultContext(load_config(root), Vault(root)) as ctx:
        ctx.ingest_services().registrar.register(root / "raw" / "a b.md")


@pytest.mark.parametrize("point", [
    "door-after-commit",  # committed, no ledger call made yet: recovery makes them all
    "after-ledger-update",  # inside the after-commit transaction (the ingest recorded, not committed)
])
def test_a_crash_after_the_commit_records_the_binding_with_the_ingest_in_recovery(tmp_path: Path,
                                                                                 point: str) -> None:
    root = tmp_path / "vault"
    one_source_queued(root)
    assert in_child(root, drain, point)
    assert len(ingest_commits(root)) == 1  # the commit landed
    # None of what the commit changes in state.db yet: not the binding (old code: bound while
    # planned), not the ingest, not the page's blob (old code: the calls before the crash made).
    assert state_rows(root, "raw/a b.md") == (False, False, False)
    assert (root / ".wikiwright" / "journal.json").exists()
    with VaultContext(load_config(root), Vault(root)) as ctx:
        ctx.door  # noqa: B018 - opening it runs the recovery
        record = ctx.ledger.get_file("raw/a b.md")
        assert record is not None and record.state == "ingested" and record.page == "sources/src-a-b"
    assert not (root / ".wikiwright" / "journal.json").exists()
    assert state_rows(root, "raw/a b.md") == (True, True, True)
    assert bindings(root) == {"raw/a b.md": "sources/src-a-b"}
    with VaultContext(load_config(root), Vault(root)) as ctx:  # the restart: nothing left to ingest
        drain(ctx)
    assert len(ingest_commits(root)) == 1


def test_a_crash_before_the_commit_leaves_no_binding(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    one_source_queued(root)
    assert in_child(root, drain, "before-commit")
    assert bindings(root) == {}  # old code: bound while planned, though nothing was committed
    with VaultContext(load_config(root), Vault(root)) as ctx:
        drain(ctx)  # the restart: the recovery puts the wiki back, the queue runs again
    assert bindings(root) == {"raw/a b.md": "sources/src-a-b"}
    assert len(ingest_commits(root)) == 1


# -- two sources whose names slug the same --------------------------------------------------------

def source_page_of(services: Services, path: str) -> str:
    record = services.ledger.get_file(path)
    assert record is not None and record.state == "ingested", record
    return record.page


def test_two_workers_draining_two_sources_whose_names_slug_the_same_make_two_pages(services: Services) -> None:
    services.drop("a b.md", FIRST)
    services.drop("a-b.md", SECOND)
    drain_in_workers(services.pipeline, 2)
    found = bindings(services.vault.root)
    assert sorted(found.values()) == ["sources/src-a-b", "sources/src-a-b-2"], found
    for path, name in (("raw/a b.md", "a b.md"), ("raw/a-b.md", "a-b.md")):
        assert source_page_of(services, path) == found[path]
        text = (services.vault.wiki / f"{found[path]}.md").read_text(encoding="utf-8")
        assert f"`{name}`" in text or f"raw/{name}" in text, text[:400]  # each page is its own source's
    assert "changed while wikiwright worked on it" not in services.vault.review_file.read_text(encoding="utf-8")


def test_a_source_planned_on_a_name_another_source_took_meanwhile_is_planned_again_as_the_next_name(
        services: Services) -> None:
    """The model's planner, two sources whose names slug the same: ``a b.md`` is planned on
    ``src-a-b``; before its worker commits, another worker ingests ``a-b.md`` all the way, on
    the same name (nothing bound it yet). The first one's operation finds the name taken under
    the write lock and plans again as ``src-a-b-2`` (asking the model again: its first prompt
    named the other source's page); neither page is written over by the other source."""
    def script(request: dict[str, Any]) -> Any:
        first = "`raw/a b.md`" in user_prompt(request)
        return reply(title="Harbour ferries" if first else "Ferry timetable",
                     summary="The nine o'clock ferry." if first else "The winter timetable.")

    with ScriptedServer(script) as server:
        planner = use_model(services, server)
        plan = planner.plan
        interleaved: list[str] = []

        def plan_then_let_the_other_worker_in(record: Any, *args: Any, **_page_locks: Any) -> Any:
            # Planned without the per-page locks (another process's worker has none of this
            # one's): the operation's check of the name, not the locks, is under test.
            planned = plan(record, *args)
            if record.path == "raw/a b.md" and not interleaved:
                interleaved.append(planned.source_page)
                assert [r.state for r in services.drain()] == ["ingested"]  # a-b.md, all the way
            return planned

        planner.plan = plan_then_let_the_other_worker_in  # type: ignore[method-assign]
        services.drop("a b.md", FIRST)
        services.drop("a-b.md", SECOND)
        results = services.drain()
        first_calls = [r for r in server.requests if "`raw/a b.md`" in user_prompt(r)]
    assert interleaved == ["sources/src-a-b"]
    assert results and results[-1].state == "ingested", results
    assert bindings(services.vault.root) == {"raw/a-b.md": "sources/src-a-b", "raw/a b.md": "sources/src-a-b-2"}
    assert source_page_of(services, "raw/a b.md") == "sources/src-a-b-2"
    assert ["[[src-a-b]]" in user_prompt(r) for r in first_calls] == [True, False]
    assert "its page is [[src-a-b-2]]" in user_prompt(first_calls[1])  # not the reply naming the taken page
    assert services.ledger.get_file("raw/a b.md").attempts == 2
    taken = (services.vault.wiki / "sources" / "src-a-b.md").read_text(encoding="utf-8")
    assert "Ferry timetable" in taken and "Harbour ferries" not in taken
    assert "Harbour ferries" in (services.vault.wiki / "sources" / "src-a-b-2.md").read_text(encoding="utf-8")
    assert "changed while wikiwright worked on it" not in services.vault.review_file.read_text(encoding="utf-8")


def test_a_new_version_of_a_source_keeps_its_page(services: Services) -> None:
    services.drop("a b.md", FIRST)
    assert [r.state for r in services.drain()] == ["ingested"]
    services.drop("a-b.md", SECOND)
    assert [r.state for r in services.drain()] == ["ingested"]
    services.drop("a b.md", FIRST + "\nFrom May the ferry also stops at the lighthouse pier.\n")
    assert [r.state for r in services.drain()] == ["ingested"]
    assert bindings(services.vault.root) == {"raw/a b.md": "sources/src-a-b", "raw/a-b.md": "sources/src-a-b-2"}
    assert source_page_of(services, "raw/a b.md") == "sources/src-a-b"
    assert "lighthouse pier" in (services.vault.wiki / "sources" / "src-a-b.md").read_text(encoding="utf-8")
    changed = git(services.vault.root, "show", "--name-only", "--format=", "HEAD").split()
    assert "wiki/sources/src-a-b.md" in changed and "wiki/sources/src-a-b-2.md" not in changed


def test_a_worker_waiting_for_a_source_page_name_another_worker_holds_plans_once_on_the_next_name(
        services: Services) -> None:
    """Two real worker threads on the model's planner: ``a b.md``'s worker holds
    ``sources/src-a-b`` (the name it plans on) until its commit, its model call slow;
    ``a-b.md``'s worker chose the same name (nothing bound yet), so it waits for it, then
    chooses again as that commit left the ledger: ``src-a-b-2``, planned once, one model call,
    its prompt naming its own page (without choosing again: planned on ``src-a-b``, found taken
    at its commit and planned a second time)."""
    release_first = threading.Event()

    def script(request: dict[str, Any]) -> Any:
        if "`raw/a b.md`" in user_prompt(request):
            assert release_first.wait(60), "the test never let the first model call return"
            return reply(title="Harbour ferries", summary="The nine o'clock ferry.")
        return reply(title="Ferry timetable", summary="The winter timetable.")

    with ScriptedServer(script) as server:
        use_model(services, server)
        locks = services.pipeline.page_locks
        results: dict[str, Any] = {}

        def work(name: str) -> None:
            results[name] = services.pipeline.drain_once()

        services.drop("a b.md", FIRST)
        first = threading.Thread(target=work, args=("first",))
        first.start()
        until(lambda: "sources/src-a-b" in locks.held(), "the first worker to hold its source page")
        services.drop("a-b.md", SECOND)
        second = threading.Thread(target=work, args=("second",))
        second.start()
        until(lambda: locks.waiting() == 1, "the second worker to wait for that page")
        release_first.set()
        first.join(60)
        second.join(60)
        second_prompts = [user_prompt(r) for r in server.requests if "`raw/a-b.md`" in user_prompt(r)]
    assert results["first"].state == results["second"].state == "ingested", results
    assert bindings(services.vault.root) == {"raw/a b.md": "sources/src-a-b", "raw/a-b.md": "sources/src-a-b-2"}
    assert len(second_prompts) == 1 and "its page is [[src-a-b-2]]" in second_prompts[0]
    for path in ("raw/a b.md", "raw/a-b.md"):
        assert services.ledger.get_file(path).attempts == 1, path  # planned once
    assert not locks.held()


def until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)
