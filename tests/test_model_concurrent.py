"""A person edits a page while the model is thinking: no word of theirs is lost."""

from __future__ import annotations

from typing import Any

from tests.conftest import Services
from tests.helpers import git
from tests.llm_server import ScriptedServer, user_prompt
from tests.model_helpers import page, use_model
from tests.story import REPLIES, SOURCES, source_named_in, story_script

PERSON = "Alice's note: the SDK retries with jitter, please keep it that way."


def test_an_edit_landing_while_the_model_thinks_is_kept_and_committed_as_the_persons(services: Services) -> None:
    path = services.vault.wiki / "billing-api.md"

    def script(request: dict[str, Any]) -> Any:
        if source_named_in(request) == "inc-482.md":
            # The person types into the page the model is reading, before the reply arrives.
            text = path.read_text()
            path.write_text(text.replace("## Limits\n", f"## Limits\n\n{PERSON}\n", 1))
        return story_script(request)

    with ScriptedServer(script) as server:
        use_model(services, server)
        for name, text in SOURCES[:3]:
            services.drop(name, text)
            assert [r.state for r in services.drain()] == ["ingested"]
    text = page(services, "billing-api")
    assert PERSON in text  # the person's words
    assert "`billing-api.rate-limit`: 50 requests per second per client" in text  # and the model's change
    assert "~~`billing-api.rate-limit`: 100" in text
    assert "<<<<<<<" not in text
    # History shows who wrote what: the person's edit is its own commit, before the ingest.
    log = git(services.vault.root, "log", "--format=%an|%s", "-3").splitlines()
    assert log[0].startswith("wikiwright|ingest: INC-482")
    assert log[1].startswith("Test Person|edit: your changes to wiki/billing-api.md")
    assert git(services.vault.root, "status", "--porcelain", "--", "wiki").strip() == ""


def test_uncommitted_edits_made_before_the_ingest_are_committed_as_the_persons_first(services: Services) -> None:
    with ScriptedServer(story_script) as server:
        use_model(services, server)
        services.drop(*SOURCES[0])
        services.drain()
        path = services.vault.wiki / "rate-limiting.md"
        path.write_text(path.read_text() + "\nA person's paragraph about token buckets.\n")
        services.drop(*SOURCES[2])  # strikes the 100/s claim on rate-limiting too
        assert [r.state for r in services.drain()] == ["ingested"]
    text = page(services, "rate-limiting")
    assert "token buckets" in text and "superseded by [[src-inc-482]]" in text
    authors = git(services.vault.root, "log", "--format=%an", "--", "wiki/rate-limiting.md").splitlines()
    assert authors[:2] == ["wikiwright", "Test Person"]
    assert REPLIES  # the story data is shared with other tests


HUB = "harbour"


def _harbour_made() -> dict[str, Any]:
    return {"title": "Harbour", "summary": "The harbour.", "key_points": [],
            "operations": [{"op": "create_page", "page": HUB, "type": "entity", "title": "Harbour",
                            "summary": "The harbour.", "body": "## Schedule\n\nThe ferry leaves at nine.\n"}]}


def _hub_reply(hour: str, source: str) -> dict[str, Any]:
    return {"title": f"Ferry at {hour}", "summary": f"The ferry leaves at {hour}.", "key_points": [],
            "operations": [{"op": "replace_section", "page": HUB, "heading": "Schedule",
                            "text": f"The ferry leaves at {hour}."}]}


def test_two_workers_updating_one_page_never_make_a_conflict_for_a_person(services: Services) -> None:
    """Two workers: source B's plan changes the harbour page; before B's worker applies it,
    another worker ingests source A, which changes the same lines. B's plan is built on an old
    page: B is planned again on A's text (the model's reply applied again, no second call); no
    "changed while wikiwright worked on it" item reaches REVIEW.md, since nobody but wikiwright
    touched the page (old code: an edit-conflict proposal, B's update set aside)."""

    def script(request: dict[str, Any]) -> Any:
        prompt = user_prompt(request)
        if "`raw/hub.md`" in prompt:
            return _harbour_made()
        return _hub_reply("eleven" if "`raw/a.md`" in prompt else "ten", "")

    with ScriptedServer(script) as server:
        planner = use_model(services, server)
        services.drop("hub.md", "# Harbour\n\nThe ferry leaves at nine.\n")
        assert [r.state for r in services.drain()] == ["ingested"]
        plan = planner.plan
        interleaved = []

        def plan_then_let_the_other_worker_in(record: Any, *args: Any, **_page_locks: Any) -> Any:
            # Planned without the per-page locks (as a page the model writes but was not routed
            # to): the door's check, not the locks, is what this test is about.
            planned = plan(record, *args)
            if record.path == "raw/b.md" and not interleaved:
                interleaved.append(True)
                # The other worker: A goes all the way through between B's plan and B's write.
                assert [r.state for r in services.drain()] == ["ingested"]
            return planned

        planner.plan = plan_then_let_the_other_worker_in  # type: ignore[method-assign]
        services.drop("b.md", "# Ferry\n\nThe ferry leaves at ten.\n")
        services.drop("a.md", "# Ferry\n\nThe ferry leaves at eleven.\n")
        results = services.drain()
    assert interleaved and results and results[-1].state == "ingested", results
    for name in ("raw/a.md", "raw/b.md"):
        record = services.ledger.get_file(name)
        assert record is not None and record.state == "ingested", record
    review = (services.vault.root / "REVIEW.md").read_text(encoding="utf-8")
    assert "changed while wikiwright worked on it" not in review, review
    assert "The ferry leaves at ten." in page(services, HUB)  # B's change, planned on A's page
    b_calls = [r for r in server.requests if "`raw/b.md`" in user_prompt(r)]
    assert len(b_calls) == 1, len(b_calls)  # the model's reply applied again, not paid for twice
    assert services.ledger.get_file("raw/b.md").attempts == 2  # planned once more, on A's page


def test_a_second_worker_routed_to_a_page_another_is_planning_on_waits_and_plans_on_its_text(
        services: Services) -> None:
    """Two real worker threads, both sources routed to the harbour page: B's worker holds the
    page from routing until its commit (its model call is slow); A's worker, routed to the same
    page, waits instead of planning on the text B is about to change, then reads B's text. Each
    source is planned once (no plan redone), one model call each, no conflict for a person (old
    code: A planned on the old page, its commit found it outdated and planned it again)."""
    import threading

    release_b = threading.Event()

    def script(request: dict[str, Any]) -> Any:
        prompt = user_prompt(request)
        if "`raw/hub.md`" in prompt:
            return _harbour_made()
        if "`raw/b.md`" in prompt:
            assert release_b.wait(60), "the test never let B's model call return"
            return _hub_reply("ten", "")
        return _hub_reply("eleven", "")

    with ScriptedServer(script) as server:
        use_model(services, server)
        services.drop("hub.md", "# Harbour\n\nThe harbour's ferry leaves at nine.\n")
        assert [r.state for r in services.drain()] == ["ingested"]
        locks = services.pipeline.page_locks
        results: dict[str, Any] = {}

        def work(name: str) -> None:
            results[name] = services.pipeline.drain_once()

        services.drop("b.md", "# Ferry\n\nThe harbour's ferry leaves at ten.\n")
        worker_b = threading.Thread(target=work, args=("b",))
        worker_b.start()
        _until(lambda: HUB in locks.held(), "B's worker to hold the harbour page")
        services.drop("a.md", "# Ferry\n\nThe harbour's ferry leaves at eleven.\n")
        worker_a = threading.Thread(target=work, args=("a",))
        worker_a.start()
        _until(lambda: locks.waiting() == 1, "A's worker to wait for the harbour page")
        assert not [r for r in server.requests if "`raw/a.md`" in user_prompt(r)]  # A has not planned yet
        release_b.set()
        worker_b.join(60)
        worker_a.join(60)
        a_prompts = [user_prompt(r) for r in server.requests if "`raw/a.md`" in user_prompt(r)]
    assert results["a"].state == results["b"].state == "ingested", results
    assert len(a_prompts) == 1 and "The ferry leaves at ten." in a_prompts[0]  # planned on B's text
    for name in ("raw/a.md", "raw/b.md"):
        assert services.ledger.get_file(name).attempts == 1, name  # planned once
    review = (services.vault.root / "REVIEW.md").read_text(encoding="utf-8")
    assert "changed while wikiwright worked on it" not in review, review
    assert "The ferry leaves at eleven." in page(services, HUB)
    assert not locks.held()


def _until(condition: Any, what: str) -> None:
    import time

    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_two_holders_taking_each_others_pages_do_not_deadlock() -> None:
    """Holder 1 holds x and wants y; holder 2 holds y and wants x. Taken naively (wait while
    holding) that is a deadlock; a holder that has to wait gives back what it holds first."""
    import threading

    from wikiwright.core.locks import PageLocks

    locks = PageLocks()
    with locks.holder() as one, locks.holder() as two:
        assert one.hold(["x"]) is False and two.hold(["y"]) is False
        waited: list[bool] = []
        first = threading.Thread(target=lambda: waited.append(one.hold(["y"])))
        first.start()
        _until(lambda: locks.waiting() == 1, "holder 1 to wait for y")
        assert locks.held() == {"y": id(two)}  # holder 1 gave x back while it waits
        assert two.hold(["x"]) is False  # so holder 2 takes it without waiting
        two.release()
        first.join(10)
        assert waited == [True] and set(locks.held()) == {"x", "y"} and one.pages == {"x", "y"}
    assert locks.held() == {}
