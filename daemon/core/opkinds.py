"""The one vocabulary of operation kinds.

Every commit wikiwright makes carries ``Wikiwright-Operation: <kind>`` with a kind from this
list, ``history`` prints these names, and ``history --kind`` accepts exactly them (plus
``manual`` for commits a person made without trailers). Add a kind here, nowhere else.
"""

from __future__ import annotations

from enum import StrEnum


class OpKind(StrEnum):
    INIT = "init"
    INGEST = "ingest"
    LOGS = "logs"  # daily-log session blocks committed in a batch
    LINT = "lint"  # lint findings added to REVIEW.md
    LINT_FIX = "lint-fix"  # a ticked lint proposal applied
    REVIEW_APPROVAL = "review-approval"  # a ticked proposal other than a lint fix applied
    REVIEW_REJECTION = "review-rejection"  # a proposal marked [-] or deleted
    REVIEW_REQUEST = "review-request"  # a proposal added to REVIEW.md by an ingest (a costly source waits)
    CONSOLIDATE = "consolidate"
    REVERT = "revert"
    RETRACT = "retract"
    ANSWER = "answer"  # ask --save
    USER_EDIT = "user-edit"  # a person's uncommitted edits, committed under their name first
    SYNC = "sync"  # integrating another machine's history
    MANUAL = "manual"  # a person's own commit (no trailers); never written by wikiwright


# Names people used before the vocabulary was fixed; history --kind still accepts them.
ALIASES = {"consolidation": OpKind.CONSOLIDATE, "rejection": OpKind.REVIEW_REJECTION,
           "approval": OpKind.REVIEW_APPROVAL, "user": OpKind.USER_EDIT}


def parse_kind(name: str) -> OpKind:
    """The kind a name stands for; ValueError naming every valid kind otherwise."""
    key = name.strip().lower()
    if key in ALIASES:
        return ALIASES[key]
    try:
        return OpKind(key)
    except ValueError:
        raise ValueError(f"unknown operation kind {name!r}; one of: {', '.join(k.value for k in OpKind)}") from None
