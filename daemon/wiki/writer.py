"""Apply page changes to disk: atomic, compare-and-swap, never dropping a person's words.

For every page the writer knows the text the change was based on (``PageChange.base``: the
text the model or engine saw, else what the daemon last wrote there). If the page on disk
still equals it, the new text replaces it atomically. If a person changed it meanwhile, the
change is re-applied on top of their text with a three-way merge; if that does not merge
cleanly the person's version stays and the proposal is kept as a conflict record for
REVIEW.md. Nothing here commits: the caller does, once per operation.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from ..core.fsutil import atomic_write_text
from ..core.vault import Vault
from ..intake.ledger import Ledger
from ..vcs.repo import GitRepo, git_blob_id, merge_texts

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PageChange:
    page: str  # name under wiki/ without .md, e.g. "sources/src-notes"
    text: str  # the full text the daemon wants the page to have
    base: str | None = None  # text the change was computed from; None: what the daemon last wrote
    reason: str = ""


@dataclass(frozen=True)
class Conflict:
    page: str
    proposal_file: str  # vault-relative path of the kept proposal
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


class PageWriter:
    def __init__(
        self,
        vault: Vault,
        ledger: Ledger,
        repo: GitRepo,
    ) -> None:
        self.vault = vault
        self.ledger = ledger
        self.repo = repo

    def _read(self, page: str) -> str | None:
        path = self.vault.wiki_path(f"{page}.md")
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def _base(self, change: PageChange) -> str | None:
        if change.base is not None:
            return change.base
        blob = self.ledger.page_blob(change.page)
        return self.repo.blob_text(blob) if blob else None

    def _not_ours(self, page: str, disk: str) -> bool:
        """The page on disk is not what the daemon last wrote: a person's text (maybe uncommitted).

        A planner that re-read the page just before planning passes that text as the base, so
        disk == base; a person's uncommitted edits in it still get their own commit first.
        """
        return self.ledger.page_blob(page) != git_blob_id(disk.encode("utf-8"))

    def write(self, changes: list[PageChange]) -> WriteOutcome:
        outcome = WriteOutcome()
        # Check every target before touching any file.
        targets = {change.page: self.vault.wiki_path(f"{change.page}.md") for change in changes}
        plans: list[tuple[PageChange, str | None, str | None]] = []
        person_edited: list[str] = []
        for change in changes:
            disk = self._read(change.page)
            base = self._base(change)
            plans.append((change, disk, base))
            if disk is not None and disk != change.text and (
                (disk != base and base is not None) or self._not_ours(change.page, disk)
            ):
                person_edited.append(change.page)
        if person_edited:
            # History should show who wrote what: the person's edits get their own commit first.
            self.repo.commit_person_edits([f"wiki/{page}.md" for page in person_edited])
        for change, disk, base in plans:
            path = targets[change.page]
            if disk == change.text:
                outcome.unchanged.append(change.page)
                outcome.texts[change.page] = change.text
                continue
            if disk is None or disk == base:
                atomic_write_text(path, change.text)
                outcome.written.append(change.page)
                outcome.texts[change.page] = change.text
                continue
            if base is not None:
                merged, clean = merge_texts(self.repo, base, disk, change.text)
                # Re-read: if the person typed again while we merged, do not write over it.
                if clean and self._read(change.page) == disk:
                    atomic_write_text(path, merged)
                    outcome.written.append(change.page)
                    outcome.merged.append(change.page)
                    outcome.texts[change.page] = merged
                    continue
            outcome.conflicts.append(self._keep_proposal(change, disk))
        return outcome

    def _keep_proposal(self, change: PageChange, disk: str | None) -> Conflict:
        """The person's page stays; the daemon's version is saved for a person to look at."""
        stamp = time.strftime("%Y%m%dT%H%M%S")
        rel = f".wikiwright/conflicts/{change.page.replace('/', '__')}-{stamp}.md"
        atomic_write_text(self.vault.root / rel, change.text)
        reason = (
            f"wiki/{change.page}.md changed on disk while wikiwright worked on it and the change did not "
            f"merge cleanly; your version was kept, wikiwright's proposal is in {rel}"
        )
        log.warning("%s", reason)
        return Conflict(change.page, rel, reason)

    def remember(self, outcome: WriteOutcome) -> None:
        """After the commit: record what the daemon wrote, the base of the next change."""
        self.ledger.set_page_blobs(
            {page: git_blob_id(text.encode("utf-8")) for page, text in outcome.texts.items()}
        )
