"""A person edits a page while the model is thinking: no word of theirs is lost."""

from __future__ import annotations

from typing import Any

from tests.conftest import Services
from tests.helpers import git
from tests.llm_server import ScriptedServer
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
