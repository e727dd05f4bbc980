"""route → plan → check for one source. Produces page changes; never writes or commits.

The offline engine plans here directly; the model path (``llm.py``) plugs in as another
planner with the same result type, and its output passes through the same checks.
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from ..core.config import Config
from ..core.errors import SourceNotReady, SourceRejected
from ..core.fsutil import sha256_bytes
from ..core.vault import Vault
from ..ingest.offline import ENGINE_NAME, digest, render_source_page
from ..intake.extract import SourceText, read_source
from ..intake.ledger import FileRecord, Ledger
from ..wiki.catalog import Catalog
from ..wiki.pages import slugify, unique_name
from ..wiki.reviewfile import Proposal
from ..wiki.writer import PageChange

log = logging.getLogger(__name__)


@dataclass
class IngestPlan:
    record: FileRecord
    title: str
    source_page: str  # e.g. "sources/src-notes"
    changes: list[PageChange]
    engine: str
    links: list[str] = field(default_factory=list)
    claims_added: int = 0
    claims_superseded: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    held_for_review: list[Proposal] = field(default_factory=list)  # REVIEW.md proposals, added at commit

    @property
    def pages(self) -> list[str]:
        return [change.page for change in self.changes]


def read_source_bytes(vault: Vault, record: FileRecord, max_bytes: int) -> bytes:
    """Read a queued file safely: regular file inside raw/, size limit, content unchanged."""
    path = vault.root / record.path
    try:
        st = path.lstat()
    except FileNotFoundError:
        raise SourceRejected("missing", "was removed from raw/ before it could be ingested") from None
    if stat.S_ISLNK(st.st_mode):
        raise SourceRejected("symlink", "is a symbolic link; links are never followed")
    if not stat.S_ISREG(st.st_mode):
        raise SourceRejected("not-a-file", "is not a regular file (FIFO, socket or device)")
    if st.st_size > max_bytes:
        raise SourceRejected(
            "too-large", f"is {st.st_size} bytes, over the limit of {max_bytes} (ingest.max_source_bytes); "
            "split it or raise the limit",
        )
    # O_NOFOLLOW|O_NONBLOCK: a file swapped for a link or FIFO after lstat can neither
    # redirect the read nor block it.
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise SourceRejected("too-large", f"grew past the limit of {max_bytes} bytes while being read")
    if sha256_bytes(data) != record.sha256:
        raise SourceNotReady(f"{record.path} changed since it was queued (still being written?)")
    return data


def source_page_name(ledger: Ledger, vault: Vault, source_path: str) -> str:
    """The page bound to a raw/ path: ``sources/src-<slug>``, suffixed on collisions."""
    stem = Path(source_path).stem or Path(source_path).name

    def make(taken: list[str]) -> str:
        existing = [f"sources/{p.stem}" for p in vault.sources_dir.glob("*.md")]
        return unique_name(f"sources/src-{slugify(stem)}", [*taken, *existing])

    return ledger.bind_page(source_path, make)


class OfflinePlanner:
    """Plans an ingest with no model: one source page, linked to pages it mentions."""

    engine = ENGINE_NAME

    def __init__(self, config: Config, vault: Vault, ledger: Ledger, catalog: Catalog) -> None:
        self.config = config
        self.vault = vault
        self.ledger = ledger
        self.catalog = catalog

    def plan(self, record: FileRecord, source: SourceText, data: bytes, today: date) -> IngestPlan:
        page = source_page_name(self.ledger, self.vault, record.path)
        fallback = Path(record.path).stem.replace("_", " ").replace("-", " ").strip() or Path(record.path).name
        summary = digest(
            source.text, source.kind, source.html_title, fallback,
            self.config.ingest.summary_sentences, self.config.ingest.key_points,
        )
        mentioned = self.catalog.mentioned_pages(source.text, exclude={page})[:25]
        links = []
        for name in mentioned:
            entry = self.catalog.get(name)
            if entry is not None:
                links.append((entry.stem, entry.title))
        text = render_source_page(
            digest_=summary, source_path=record.path, sha256=record.sha256, encoding=source.encoding,
            kind=source.kind, links=links, today=today, size=len(data),
        )
        return IngestPlan(
            record=record, title=summary.title, source_page=page,
            changes=[PageChange(page, text, reason="source page")], engine=self.engine,
            links=[stem for stem, _ in links],
        )


def prepare(config: Config, vault: Vault, record: FileRecord) -> tuple[SourceText, bytes]:
    data = read_source_bytes(vault, record, config.ingest.max_source_bytes)
    return read_source(vault.root / record.path, data), data
