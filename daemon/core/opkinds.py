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


class FixAction(StrEnum):
    """What a ticked REVIEW.md item does (its ``fix["action"]``): one name each, produced by the
    modules that propose and dispatched by ``upkeep/review.py``'s table, nowhere else."""

    RESOLVE_CONFLICT = "resolve-conflict"  # a claim-key question: the values the person ticked stand
    APPLY_OP = "apply-op"  # a model operation held back by a check, applied as it was
    INGEST_SOURCE = "ingest-source"  # a source over its budget, ingested at full size
    DISPUTE_CLAIM = "dispute-claim"
    SUPERSEDE_CLAIM = "supersede-claim"
    CREATE_STUB = "create-stub"  # a page many pages link to but nobody wrote
    LINK_FROM_OVERVIEW = "link-from-overview"  # an orphan page linked from overview.md
    REBUILD_INDEX = "rebuild-index"
    WRITE_PAGE = "write-page"  # a page text set aside (an edit conflict, a consolidation), written as it was


# Fixes acting on what only this machine holds (a page text, a held operation, a costly source):
# answered only here; another machine's tick on one is undone by sync.
MACHINE_LOCAL_FIXES = frozenset({FixAction.APPLY_OP, FixAction.WRITE_PAGE, FixAction.INGEST_SOURCE})
