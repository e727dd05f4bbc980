"""The five-source story, as reusable data: sources and the scripted model's replies.

1. ``design-doc.md``   sets the billing API limit (100/s) and log retention (30 days)
2. ``runbook.md``      restates the 100/s limit on its own page; opens a question
3. ``inc-482.md``      lowers the limit "from 100 to 50" → the old claim is struck on every page
4. ``chat-thread.md``  splits the 30-day retention into two scoped values; answers the question
5. ``draft-faq.md``    states 200/s without claiming to replace anything → two current claims

Use :func:`story_script` as the ``ScriptedServer`` script: it answers each ingest prompt with
the reply for the source named in it (so sources may be ingested in any order or re-run).
Other tests (search, ask, revert) can reuse ``SOURCES`` and ``REPLIES`` as they are.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from wikiwright.core.resources import read_shipped_text

# The story ships in the package (``wikiwright eval`` runs it): config/eval/story.json.
STORY: dict[str, Any] = json.loads(read_shipped_text("config", "eval", "story.json"))
_TEXTS = {step["source"]: step["text"] for step in STORY["steps"] if "source" in step}

DESIGN_DOC = _TEXTS["design-doc.md"]
RUNBOOK = _TEXTS["runbook.md"]
INCIDENT = _TEXTS["inc-482.md"]
CHAT = _TEXTS["chat-thread.md"]
DRAFT_FAQ = _TEXTS["draft-faq.md"]

SOURCES: list[tuple[str, str]] = list(_TEXTS.items())

REPLIES: dict[str, dict[str, Any]] = STORY["replies"]


def source_named_in(request: dict[str, Any]) -> str | None:
    """The raw/ file name an ingest prompt is about (from its user message)."""
    for message in request.get("messages") or []:
        if message.get("role") != "user":
            continue
        content = str(message.get("content") or "")
        for name, _ in SOURCES:
            if f"`raw/{name}`" in content:
                return name
    return None


def story_script(request: dict[str, Any]) -> dict[str, Any]:
    name = source_named_in(request)
    if name is None:
        return {"title": "unknown", "summary": "", "operations": []}
    return copy.deepcopy(REPLIES[name])
