"""Each check before writing: the operation is held for REVIEW.md with a reason, never written."""

from __future__ import annotations

from typing import Any

import pytest
from wikiwright.wiki.pages import parse_claims, parse_page

from tests.conftest import Services
from tests.helpers import git, ingest_commits, killed_in_child
from tests.llm_server import ScriptedServer, truncated
from tests.model_helpers import page, reply, use_model
from tests.story import REPLIES, SOURCES

SOURCE = "# Notes\n\nThe billing API now uses API keys. Alice Chen wrote the client SDK.\n" \
         "![diagram](https://example.com/arch.png)\n<iframe src=\"https://example.com/embed\"></iframe>\n"
GOOD = {"op": "add_to_section", "page": "billing-api", "heading": "Auth", "text": "Uses API keys."}


def seeded(services: Services, replies: list[Any], **llm: Any) -> ScriptedServer:
    """A server that first answers the design doc (seeding billing-api etc.), then ``replies``."""
    server = ScriptedServer([REPLIES["design-doc.md"], *replies])
    server.__enter__()
    use_model(services, server, **llm)
    services.drop(*SOURCES[0])
    assert [r.state for r in services.drain()] == ["ingested"]
    return server


def review(services: Services) -> str:
    return services.vault.review_file.read_text(encoding="utf-8")


def held_lines(services: Services) -> list[str]:
    return [line for line in review(services).splitlines() if line.startswith("- [ ] ") and " ^held-back-" in line]


BAD_OPS = [
    ({"op": "add_claim", "page": "billing-api", "key": "billing-api.auth", "value": "OAuth", "as_of": "2026-05-01",
      "quote": "The billing API uses OAuth.", "replaces": False}, "not found verbatim"),
    # A title for a page name is normalised now (issue 22); a dotted name is not a page name.
    ({"op": "create_page", "page": "client.sdk", "type": "entity", "title": "SDK", "summary": "", "body": "x"},
     "naming rule"),
    ({"op": "add_to_section", "page": "sources/src-x", "heading": "A", "text": "b"}, "folder"),
    ({"op": "add_to_section", "page": "index", "heading": "A", "text": "b"}, "built by code"),
    ({"op": "replace_section", "page": "billing-api", "heading": "Limits", "text": "Limits exist."},
     "drop links"),
    ({"op": "replace_section", "page": "billing-api", "heading": "Limits",
      "text": "[[rate-limiting]]"}, "of its text"),
    ({"op": "add_to_section", "page": "billing-api", "heading": "Claims",
      "text": "- `billing-api.auth`: keys (as of 2026-05-01, [[src-notes]])"}, "rendered by code"),
    ({"op": "add_to_section", "page": "billing-api", "heading": "Diagram",
      "text": "![x](https://evil.example/track.png)"}, "remote image"),
    ({"op": "add_to_section", "page": "billing-api", "heading": "Embed",
      "text": "<script src=\"https://evil.example/x.js\"></script>"}, "`<script>` element"),
    ({"op": "add_to_section", "page": "billing-api", "heading": "Embed",
      "text": "<iframe src=\"https://evil.example/other\"></iframe>"}, "`<iframe>` element"),
    ({"op": "add_to_section", "page": "billing-api", "heading": "Code", "text": "<object data=x>"},
     "`<object>` element"),
    ({"op": "close_question", "page": "billing-api", "question": "Is there a question?", "answer": "no"},
     "no open question"),
]


@pytest.mark.parametrize(("bad", "reason"), BAD_OPS, ids=[r for _, r in BAD_OPS])
def test_a_failing_operation_is_held_with_its_reason_and_the_rest_applies(
    services: Services, bad: dict[str, Any], reason: str
) -> None:
    before = page(services, "billing-api") if (services.vault.wiki / "billing-api.md").exists() else None
    assert before is None
    server = seeded(services, [reply(bad, GOOD)])
    try:
        seeded_text = page(services, "billing-api")
        services.drop("notes.md", SOURCE)
        assert [r.state for r in services.drain()] == ["ingested"]
    finally:
        server.close()
    text = page(services, "billing-api")
    assert "Uses API keys." in text  # the good operation applied
    lines = held_lines(services)
    assert len(lines) == 1 and reason in lines[0], lines
    assert "`raw/notes.md`" in lines[0]
    assert "## Held back by ingest checks" in review(services)
    # Nothing of the held operation reached a page.
    assert "OAuth" not in text and "evil.example" not in text and "client.sdk" not in str(
        list(services.vault.wiki.rglob("*.md")))
    assert seeded_text.split("## Limits")[1].split("##")[0] in text  # Limits section untouched
    # REVIEW.md is committed with the ingest; the full proposal is kept in .wikiwright/held/.
    assert git(services.vault.root, "status", "--porcelain", "--", "REVIEW.md").strip() == ""
    assert list((services.vault.state / "held").glob("*.json"))


def test_remote_markup_is_held_even_when_the_source_has_it(services: Services) -> None:
    # Issue 10: Obsidian fetches a remote image when the page opens (the reader's address leaks),
    # and an iframe is never allowed: being in the source does not make either safe.
    op = {"op": "add_to_section", "page": "billing-api", "heading": "Architecture",
          "text": "![diagram](https://example.com/arch.png)\n<iframe src=\"https://example.com/embed\"></iframe>"}
    server = seeded(services, [reply(op)])
    try:
        services.drop("notes.md", SOURCE + "\n![diagram](https://example.com/arch.png)\n"
                      "<iframe src=\"https://example.com/embed\"></iframe>\n")
        services.drain()
    finally:
        server.close()
    assert "https://example.com/arch.png" not in page(services, "billing-api")
    lines = held_lines(services)
    assert len(lines) == 1 and "remote image" in lines[0] and "`<iframe>` element" in lines[0], lines


def test_more_pages_than_the_limit_holds_the_whole_reply(services: Services) -> None:
    ops = [{"op": "create_page", "page": f"page-{n}", "type": "concept", "title": f"Page {n}", "summary": "s",
            "body": "text"} for n in range(5)]
    server = seeded(services, [reply(*ops)], max_pages_per_ingest=4)
    try:
        services.drop("notes.md", SOURCE)
        assert [r.state for r in services.drain()] == ["ingested"]
    finally:
        server.close()
    assert not any((services.vault.wiki / f"page-{n}.md").exists() for n in range(5))
    lines = held_lines(services)
    assert len(lines) == 5 and all("max_pages_per_ingest" in line for line in lines)
    assert (services.vault.wiki / "sources" / "src-notes.md").exists()  # the source page is still written


@pytest.mark.parametrize("bad", [
    "{\"title\": \"x\", \"summary\": \"y\", \"operations\": [",  # not JSON
    # No operations array: the one shape a reply must have (an odd operation costs only itself).
    {"title": "x", "summary": "y", "ops": [{"op": "delete_page", "page": "billing-api"}]},
    truncated(reply(GOOD)),  # finish_reason=length
], ids=["invalid-json", "off-schema", "truncated"])
def test_a_bad_reply_is_retried_once_then_the_source_is_quarantined(services: Services, bad: Any) -> None:
    server = seeded(services, [bad, bad])
    try:
        before = {p: p.read_text() for p in services.vault.wiki.rglob("*.md")}
        services.drop("notes.md", SOURCE)
        results = services.drain()
    finally:
        server.close()
    assert [r.state for r in results] == ["quarantined"]
    assert "model-reply" in results[0].detail
    assert len(server.requests) == 3  # seed + the reply + one retry
    assert "rejected" in str(server.requests[2]["messages"][-1]["content"])
    assert {p: p.read_text() for p in services.vault.wiki.rglob("*.md")} == before  # nothing partial
    assert len(ingest_commits(services.vault.root)) == 1


def test_a_truncated_reply_then_a_good_one_is_ingested(services: Services) -> None:
    server = seeded(services, [truncated(reply(GOOD)), reply(GOOD)])
    try:
        services.drop("notes.md", SOURCE)
        assert [r.state for r in services.drain()] == ["ingested"]
    finally:
        server.close()
    assert "Uses API keys." in page(services, "billing-api")


def test_a_claim_with_a_verbatim_quote_across_line_breaks_is_accepted(services: Services) -> None:
    op = {"op": "add_claim", "page": "billing-api", "key": "billing-api.auth", "value": "API keys",
          "as_of": "2026-05-01", "quote": "The billing API now uses API keys.", "replaces": False}
    server = seeded(services, [reply(op)])
    try:
        services.drop("notes.md", SOURCE.replace("now uses", "now\nuses"))
        services.drain()
    finally:
        server.close()
    claims, _ = parse_claims(parse_page(page(services, "billing-api")).body)
    assert [c.value for c in claims if c.key == "billing-api.auth"] == ["API keys"]


def test_a_plan_that_never_committed_leaves_no_held_operation_behind(services: Services) -> None:
    """Planning writes nothing of its own: the held operation's JSON under .wikiwright/held/
    is written once the ingest's commit exists. Here the repository enters a merge between
    the plan and the commit, so the plan is set aside (old code: its held JSON stayed, for an
    ingest that had not happened); planned again once the merge is over, it is written."""
    bad = {"op": "add_to_section", "page": "billing-api", "heading": "Embed",
           "text": "<script src=\"https://evil.example/x.js\"></script>"}
    server = seeded(services, [reply(bad, GOOD), reply(bad, GOOD)])
    try:
        planner = services.pipeline.planner
        plan = planner.plan
        merge_head = services.vault.root / ".git" / "MERGE_HEAD"
        merged: list[bool] = []

        def then_a_merge_starts(*args: Any, **kwargs: Any) -> Any:
            planned = plan(*args, **kwargs)
            if not merged:  # the first plan only
                merged.append(True)
                merge_head.write_text(git(services.vault.root, "rev-parse", "HEAD"))
            return planned

        planner.plan = then_a_merge_starts  # type: ignore[method-assign]
        services.drop("notes.md", SOURCE)
        assert [r.state for r in services.drain()] == ["pending"]
        assert not list((services.vault.state / "held").glob("*.json"))
        merge_head.unlink()
        record = services.ledger.get_file("raw/notes.md")
        assert record is not None and services.ledger.wake(record.path, record.sha256, "the merge is over")
        assert [r.state for r in services.drain()] == ["ingested"]
    finally:
        server.close()
    assert list((services.vault.state / "held").glob("*.json"))


def test_a_model_ingest_killed_after_its_commit_keeps_its_held_operation(services: Services) -> None:
    """The held operation's JSON is part of the ingest's journal (a notes delta), so a kill
    right after the commit leaves it to the restart's recovery. Old code wrote it from a
    callback after the commit, not journaled: the commit said "held", the file never came."""
    from wikiwright.core.vault import Vault
    from wikiwright.runtime.context import VaultContext

    bad = {"op": "add_to_section", "page": "billing-api", "heading": "Embed",
           "text": "<script src=\"https://evil.example/x.js\"></script>"}
    server = seeded(services, [reply(bad, GOOD)])
    try:
        config, root = services.config, services.vault.root
        services.close()  # the child is the process now; the parent holds nothing open
        (root / "raw" / "notes.md").write_text(SOURCE, encoding="utf-8")
        def drain() -> None:
            with VaultContext(config, Vault(root)) as ctx:
                wired = ctx.ingest_services()
                wired.registrar.register(root / "raw" / "notes.md")
                while wired.pipeline.drain_once() is not None:
                    pass

        assert killed_in_child(drain, "door-after-commit")
        assert git(root, "log", "-1", "--format=%(trailers:key=Wikiwright-Held,valueonly)").strip() == "1"
        assert not list((root / ".wikiwright" / "held").glob("*.json"))  # killed before it was written
        with VaultContext(config, Vault(root)) as ctx:
            ctx.door  # noqa: B018 - the restart: opening the door runs the recovery
        held = list((root / ".wikiwright" / "held").glob("*.json"))
        assert len(held) == 1 and "evil.example" in held[0].read_text(encoding="utf-8"), held
        assert not (root / ".wikiwright" / "journal.json").exists()
    finally:
        server.close()


def test_a_journaled_note_is_written_only_where_notes_are(tmp_path: Any) -> None:
    """A journal names the note files it makes; one from elsewhere naming another file
    (``../config.toml``, a page) is refused whole, nothing written."""
    from wikiwright.ingest.notes import StateNotes

    notes = StateNotes(tmp_path / ".wikiwright")
    for rel in ("../config.toml", "held/../../wiki/x.md", "held/x.json", "journal.json", "held/0123456789abcdef.txt"):
        with pytest.raises(ValueError):
            notes.apply_journaled({"files": {"held/0123456789abcdef.json": "{}", rel: "x"}})
    assert not (tmp_path / ".wikiwright").exists()
    notes.apply_journaled({"files": {"normalised/0123456789abcdef.json": "{}"}})
    assert (tmp_path / ".wikiwright" / "normalised" / "0123456789abcdef.json").read_text() == "{}"
