"""State kept outside state.db that an operation changes (the offline engine's term index).

A planner never writes it while it plans: it hands the operation a typed delta
(:class:`StateDelta`); the door journals it with the operation's files and ledger calls, makes
it through the sink of that name right after the commit and before the journal is cleared, and
a recovery that finds the commit landed makes it again. A sink's changes are idempotent, so
making a delta twice (a crash after it was made, before the journal went) leaves what once did.

The door knows sinks by name only, given by whoever owns them (the vault context owns the one
term index): it imports nothing of the rooms downstream of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class StateDelta(Protocol):
    """What an operation changes in one sink's state, made once its commit exists."""

    @property
    def sink(self) -> str: ...  # the name of the sink that makes it ("terms")

    def to_json(self) -> dict[str, Any]: ...  # as the journal keeps it


class DeltaSink(Protocol):
    """Where deltas of one name are made (the term index)."""

    def apply_journaled(self, payload: Mapping[str, Any]) -> None:
        """Make a delta as the journal holds it (idempotent; ValueError: not one of its deltas)."""
        ...
