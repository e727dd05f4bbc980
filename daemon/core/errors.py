"""One exception tree for the whole package.

Every error a user can meet derives from :class:`WikiwrightError` and carries a message
written for that user; the CLI prints it without a traceback.
"""

from __future__ import annotations


class WikiwrightError(Exception):
    """Base of every error wikiwright raises on purpose."""

    exit_code = 2


class ConfigError(WikiwrightError):
    """The configuration is invalid (bad value, unknown key, unreadable file)."""


class VaultError(WikiwrightError):
    """The vault is missing, malformed, or cannot be found."""


class SchemaTooNew(VaultError):
    """A database in the vault was written by a newer release; it is left exactly as it is."""


class VaultMoved(VaultError):
    """The vault folder was moved, renamed or replaced while a process worked in it."""

    exit_code = 4


class VaultLockedError(VaultError):
    """Another wikiwright process already holds the vault's writer lock."""

    exit_code = 3


class UnsafePathError(WikiwrightError):
    """A write target resolved outside the folders wikiwright may write."""


class SourceRejected(WikiwrightError):
    """A source cannot be ingested; it is quarantined with this reason.

    ``code`` is a short stable identifier (``binary``, ``empty``, ``too-large``...) and the
    message is the human reason shown by ``wikiwright status``.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class SourceAwaitsApproval(WikiwrightError):
    """A source's estimated cost is over ``llm.max_tokens_per_source``: it waits, pending, for a
    person to tick it in REVIEW.md (nothing is spent before)."""

    def __init__(self, message: str, *, tokens: int, calls: int) -> None:
        super().__init__(message)
        self.tokens = tokens
        self.calls = calls


class SourceNotReady(WikiwrightError):
    """A source changed while it was read (still being written); try again later."""


class CommitPaused(WikiwrightError):
    """Commits cannot be made right now (merge in progress, detached HEAD, held lock)."""

    def __init__(self, reason: str, *, transient: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.transient = transient


class ServiceError(WikiwrightError):
    """Installing, removing or querying the background service failed (systemctl/launchctl)."""


class PageConflict(WikiwrightError):
    """A page changed on disk after it was read and the change could not be merged."""


class PlanOutdated(WikiwrightError):
    """A page changed since the plan read it, by another of wikiwright's own operations (another
    worker's ingest), and the plan's change does not merge with it: plan again on the new text."""

    def __init__(self, page: str) -> None:
        super().__init__(f"wiki/{page}.md was changed by another ingest while this one was planned")
        self.page = page


class FixNotApplicable(WikiwrightError):
    """An approved REVIEW.md proposal no longer fits the wiki (claim gone, page exists now)."""


class LLMError(WikiwrightError):
    """Base of every failure of a model call."""


class LLMTransientError(LLMError):
    """Timeouts, rate limits, 5xx, outages: the source stays pending and is retried."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class LLMAuthError(LLMError):
    """401/403 or a missing key: stop calling the model until the user fixes it."""


class LLMReplyError(LLMError):
    """The reply was truncated, not JSON, or off-schema."""


class BudgetExceeded(LLMError):
    """A spend cap is reached: the queue pauses, nothing is lost."""


class ConsolidationBusy(WikiwrightError):
    """Another consolidation holds .wikiwright/consolidation-lock (and it is not stale yet)."""

    exit_code = 3


class NotFound(WikiwrightError):
    """A page, commit or source named on the command line does not exist."""


class RevertBlocked(WikiwrightError):
    """Undoing an ingest would need a guess (a later change depends on it); nothing was changed."""

    exit_code = 1
