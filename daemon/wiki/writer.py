"""Page changes and what became of them: the vocabulary of writes through the door.

A change carries the text it was based on (``PageChange.base``: the text the model or engine
saw, else what the daemon last wrote there). The door (daemon/door) writes it: replaced when
the page still holds that text, three-way merged with a person's edits, or, when that does not
merge, the person's version kept and the change proposed in REVIEW.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PageChange:
    page: str  # name under wiki/ without .md, e.g. "sources/src-notes"
    text: str  # the full text the daemon wants the page to have
    base: str | None = None  # text the change was computed from; None: what the daemon last wrote
    reason: str = ""


@dataclass(frozen=True)
class Conflict:
    page: str
    proposal_file: str  # where wikiwright's version waits for the person (REVIEW.md)
    reason: str


@dataclass
class WriteOutcome:
    written: list[str] = field(default_factory=list)  # pages whose file now holds new text
    merged: list[str] = field(default_factory=list)  # of those, merged with a person's edits
    unchanged: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)  # page -> text now on disk (ours)

    @property
    def paths(self) -> list[str]:
        return [f"wiki/{page}.md" for page in [*self.written, *self.unchanged]]
