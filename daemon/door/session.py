"""A one-shot writing session for commands that change pages outside an ingest.

``revert``, ``retract`` and ``ask --save`` change pages and commit, so they follow the same
rules as the worker: they hold the vault's write lock (the one the daemon's workers take to
apply and commit, so they run beside a running daemon instead of racing it), write through :class:`PageWriter`
(compare-and-swap), rebuild index.md, append one log.md entry and make one commit with
trailers. A person's uncommitted edits to the pages touched are committed first, under the
person's own name, so the operation's commit holds only the operation's change.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date

from ..core.config import Config
from ..core.locks import vault_write_lock
from ..core.vault import Vault
from ..intake.ledger import Ledger
from ..vcs.repo import GitRepo
from ..wiki.catalog import Catalog
from ..wiki.index import append_log, rebuild_index
from ..wiki.writer import PageChange, PageWriter, WriteOutcome

log = logging.getLogger(__name__)


@dataclass
class Session:
    config: Config
    vault: Vault
    ledger: Ledger
    catalog: Catalog
    repo: GitRepo
    writer: PageWriter = field(init=False)

    def __post_init__(self) -> None:
        self.writer = PageWriter(self.vault, self.ledger, self.repo)

    def read(self, page: str) -> str | None:
        try:
            return self.vault.wiki_path(f"{page}.md").read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def settle_pages(self, pages: list[str]) -> None:
        """Before reading pages to change them: their uncommitted edits become the person's commit."""
        self.repo.commit_person_edits([f"wiki/{page}.md" for page in pages])

    def write(self, changes: list[PageChange]) -> WriteOutcome:
        return self.writer.write(changes)

    def commit(
        self,
        *,
        kind: str,
        title: str,
        details: list[str],
        outcome: WriteOutcome,
        trailers: Mapping[str, str],
        deleted: list[str] | None = None,
        today: date | None = None,
    ) -> str | None:
        """index.md, one log.md entry, one commit of exactly the pages touched; returns the sha."""
        deleted = deleted or []
        touched = [*outcome.written, *outcome.unchanged]
        self.catalog.refresh([*touched, *deleted])
        rebuild_index(self.vault, self.catalog)
        append_log(self.vault, kind, title, details, today)
        paths = [*outcome.paths, *(f"wiki/{page}.md" for page in deleted), "wiki/index.md", "wiki/log.md"]
        all_trailers = {"Wikiwright-Operation": kind, **trailers}
        if touched or deleted:
            all_trailers.setdefault(
                "Wikiwright-Pages", ", ".join(f"wiki/{p}.md" for p in sorted({*touched, *deleted}))
            )
        sha = self.repo.commit_paths(paths, f"{kind}: {title}", all_trailers)
        self.writer.remember(outcome)
        return sha

    def delete_page(self, page: str, expected: str) -> bool:
        """Remove a page only if it still holds ``expected`` (compare-and-swap); True if removed."""
        path = self.vault.wiki_path(f"{page}.md")
        try:
            if path.read_text(encoding="utf-8") != expected:
                return False
        except FileNotFoundError:
            return True
        path.unlink()
        return True


@contextmanager
def writing_session(config: Config, vault: Vault, purpose: str) -> Iterator[Session]:
    """Hold the vault's write lock and open the ledger, catalogue and repository.

    The lock is the one the daemon's workers take around writing and committing, so the
    operation runs beside a running daemon: its ingests wait for this commit, then go on.
    """
    log.debug("%s: waiting for the vault's write lock", purpose)
    with vault_write_lock(vault.state):
        ledger = Ledger(vault.db_path)
        catalog = Catalog(vault)
        try:
            catalog.refresh()
            repo = GitRepo(vault.root, config.git.author_name, config.git.author_email,
                           config.git.lock_retry_seconds)
            yield Session(config, vault, ledger, catalog, repo)
        finally:
            ledger.close()
            catalog.close()
