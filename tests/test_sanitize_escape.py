"""Issue 18 (the sanitizer bullet): never delete a person's or a source's text.

What only looks like a tag — an address in angle brackets, a placeholder, a generic, a repr —
is escaped so it shows as written, and is not listed under "Cleaned"; dangerous HTML is still
removed, with a note.
"""

from __future__ import annotations

import html
import re

import pytest
from wikiwright.wiki.pages import parse_page
from wikiwright.wiki.sanitize import clean_line, clean_markdown

from tests.conftest import Services
from tests.llm_server import ScriptedServer
from tests.model_helpers import page, reply, use_model
from tests.story import REPLIES, SOURCES

LOOKS_LIKE_A_TAG = [
    ("Linus Torvalds <torvalds@linux-foundation.org>", "<torvalds@linux-foundation.org>"),
    ("git rebase [--onto <newbase> | --keep-base] [<upstream>]", "<newbase>"),
    ("Returns a List<T> of <test_class_demo.TestClassDemoInstance> objects.",
     "<test_class_demo.TestClassDemoInstance>"),
    ("Map<String, List<Integer>> counts", "<String, List<Integer>>"),
    ("Press <Ctrl-C> to stop, or <Enter>.", "<Ctrl-C>"),
    ("See <https://example.com/docs> for more.", "<https://example.com/docs>"),
    ("The template uses <my-widget> and </my-widget>.", "</my-widget>"),
    ("<?xml version='1.0'?> starts the file", "<?xml version='1.0'?>"),
]


def shown(text: str) -> str:
    """What a reader sees: entities decoded (markdown renders ``&lt;`` as ``<``)."""
    return html.unescape(text)


@pytest.mark.parametrize(("text", "kept"), LOOKS_LIKE_A_TAG, ids=[k for _, k in LOOKS_LIKE_A_TAG])
def test_text_that_only_looks_like_a_tag_is_escaped_not_removed(text: str, kept: str) -> None:
    for cleaned in (clean_markdown(text), clean_line(text)):
        assert cleaned.notes == []  # an escape is no cleaning: nothing is listed under "Cleaned"
        assert shown(cleaned.text) == text  # shown as written
        assert not re.search(r"<[A-Za-z/?]", cleaned.text.replace("<br>", ""))  # and never a tag


def test_dangerous_html_is_still_removed_beside_escaped_text() -> None:
    cleaned = clean_markdown("Mail <bob@example.com> <script>alert(1)</script> or <b>bold</b> <img src=x onerror=y>")
    assert "&lt;bob@example.com>" in cleaned.text and "<b>bold</b>" in cleaned.text
    assert "script" not in cleaned.text and "onerror" not in cleaned.text
    assert any("`<script>` element" in n for n in cleaned.notes) and any("onerror=" in n for n in cleaned.notes)
    # An unknown element with a handler is escaped whole: text, not markup.
    unknown = clean_markdown("<foo onmouseover=alert(1)>x</foo>")
    assert unknown.text.startswith("&lt;foo") and "<foo" not in unknown.text
    # Code is left byte for byte, beside escaped prose.
    text = "Use `List<T>` or List<T>.\n\n```java\nMap<String, T> m;\n```\n"
    assert clean_markdown(text).text == text.replace("or List<T>", "or List&lt;T>")


def test_an_offline_source_page_keeps_addresses_and_placeholders(services: Services) -> None:
    services.drop("git-notes.md", "# Git notes\n\nLinus Torvalds <torvalds@linux-foundation.org> wrote the first "
                  "version of Git.\n\nUse git rebase --onto <newbase> to move a branch onto another base.\n")
    assert [r.state for r in services.drain()] == ["ingested"]
    text = page(services, "sources/src-git-notes")
    assert "Linus Torvalds &lt;torvalds@linux-foundation.org>" in text
    assert "Linus Torvalds ," not in text and "## Cleaned" not in text


def test_a_model_text_with_a_placeholder_lands_escaped_and_is_not_held(services: Services) -> None:
    op = {"op": "add_to_section", "page": "billing-api", "heading": "Usage",
          "text": "Call `charge()` with <customer-id> and mail <billing@example.com>."}
    with ScriptedServer([REPLIES["design-doc.md"], reply(op)]) as server:
        use_model(services, server)
        services.drop(*SOURCES[0])
        services.drop("usage.md", "# Usage\n\nCall charge with a customer id.\n")
        assert [r.state for r in services.drain()] == ["ingested", "ingested"]
    body = parse_page(page(services, "billing-api")).body
    assert "Call `charge()` with &lt;customer-id> and mail &lt;billing@example.com>." in body
    review = services.vault.review_file.read_text() if services.vault.review_file.exists() else ""
    assert "held-back" not in review
