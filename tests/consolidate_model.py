"""A scripted "model" for consolidation, served by tests/llm_server.py (tests and bench/).

It answers the consolidation prompt the way a careful model would, from the prompt alone:
keeps groups marked 🔴 or seen in 2+ sessions (it copies the text: making relative dates
absolute is left to code); it also slips in two items code must
reject (a log it was not given, a pasted secret) so the checks are exercised.
"""

from __future__ import annotations

import json
import re
from typing import Any

_LINE = re.compile(
    r"^- \[(?P<kind>[a-z\-]+)\] (?P<text>.+) \(sessions (?P<n>\d+); logs (?P<logs>[\d\-, ]+)"
    r"(?:; under [^)]+)?\)(?P<mark> 🔴)?$"
)


def reply_for(request: dict[str, Any]) -> dict[str, Any]:
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    entries: list[dict[str, Any]] = []
    for line in user.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        keep = match.group("mark") or int(match.group("n")) >= 2
        if keep:
            logs = [d.strip() for d in match.group("logs").split(",")]
            entries.append({"kind": match.group("kind"), "text": match.group("text"), "logs": logs})
    entries.append({"kind": "pattern", "text": "A fact from a log that was never read", "logs": ["1999-01-01"]})
    entries.append({"kind": "gotcha", "text": "Use key sk-proj-Abc123Def456Ghi789Jkl012 for staging",
                    "logs": [entries[0]["logs"][0]] if entries else ["1999-01-01"]})
    return {"entries": entries, "claims": []}


def script(request: dict[str, Any]) -> str:
    return json.dumps(reply_for(request), ensure_ascii=False)
