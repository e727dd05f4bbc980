"""route → plan → check for one source. Produces page changes; never writes or commits.

The offline engine plans here directly; the model path (``llm.py``) plugs in as another
planner with the same result type, and its output passes through the same checks.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from ..core.config import Config
from ..core.errors import SourceNotReady
from ..core.fsutil import sha256_bytes
from ..core.secrets import scan
from ..core.vault import Vault
from ..door.deltas import StateDelta
from ..ingest.concepts import ConceptKeeper
from ..ingest.offline import (
    ENGINE_NAME,
    SourceDigest,
    digest,
    humanize_file_name,
    project_of,
    qualify_title,
    render_source_page,
)
from ..ingest.terms import TermIndex, extract_terms, source_keyphrases
from ..intake.extract import Limits, SourceText, extract_source
from ..intake.ledger import FileRecord, Ledger
from ..intake.names import disk_path, shown_name
from ..intake.safeopen import read_inside
from ..wiki.catalog import Catalog
from ..wiki.pages import slugify
from ..wiki.reviewfile import Proposal
from ..wiki.sanitize import clean_line, file_name_text
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
    trailers: dict[str, str] = field(default_factory=dict)  # more commit trailers (the model's Wikiwright-Ops)
    # State the commit changes outside its files (the offline engine's terms: a TermsDelta; a
    # model ingest's notes under .wikiwright/: a NotesDelta), journaled and made by the door once
    # the commit exists; a plan set aside changes nothing.
    deltas: list[StateDelta] = field(default_factory=list)

    @property
    def pages(self) -> list[str]:
        return [change.page for change in self.changes]


def read_source_bytes(vault: Vault, record: FileRecord, max_bytes: int, *, allow_hard_links: bool = False) -> bytes:
    """Read a queued file safely: reached without following a link anywhere on its path, a
    regular file inside raw/ (checked on the open descriptor), size limit, content unchanged."""
    top = vault.raw if record.kind == "raw" else vault.logs
    data = read_inside(top, disk_path(vault.root, record.path), max_bytes, allow_hard_links=allow_hard_links)
    if sha256_bytes(data) != record.sha256:
        raise SourceNotReady(f"{record.path} changed since it was queued (still being written?)")
    return data


def _redact_value(value: Any) -> tuple[Any, set[str]]:
    """A field of a SourceText with its secrets replaced: text, or lists and maps of text."""
    if isinstance(value, str):
        text, kinds = scan(value)
        return text, set(kinds)
    if isinstance(value, (list, tuple)):
        parts = [_redact_value(item) for item in value]
        return type(value)(part for part, _ in parts), {k for _, found in parts for k in found}
    if isinstance(value, dict):
        pairs = {key: _redact_value(item) for key, item in value.items()}
        return {key: part for key, (part, _) in pairs.items()}, {k for _, found in pairs.values() for k in found}
    return value, set()


# Fields that describe the file's format, never its content.
_FORMAT_FIELDS = frozenset({"encoding", "kind"})


def redact_source(config: Config, source: SourceText, ledger: Ledger | None = None,
                  path: str = "") -> tuple[SourceText, list[str]]:
    """The source with its secrets replaced (``llm.redact_secrets``), and the kinds found.

    Every field the extractor filled is scanned: the text (front matter included), the
    document's title and any other metadata (PDF/Office properties), so both engines plan from
    text that holds no secret, and a secret reaches neither a prompt nor a page. The source page
    names the kinds, and ``status`` shows a notice (kinds only, never a value).
    """
    if not config.llm.redact_secrets:
        return source, []
    changes: dict[str, Any] = {}
    found: set[str] = set()
    for item in dataclasses.fields(source):
        if item.name in _FORMAT_FIELDS:
            continue
        value, kinds = _redact_value(getattr(source, item.name))
        if kinds:
            changes[item.name] = value
            found |= kinds
    kinds_list = sorted(found)
    if kinds_list:
        shown = shown_name(path) if path else "a source"
        log.info("%s held secrets (%s); they are redacted before planning", shown, ", ".join(kinds_list))
        if ledger is not None:
            ledger.set_notice("secrets-redacted", f"{shown} contained secrets ({', '.join(kinds_list)}); they were "
                              "redacted before planning: no model, page, commit or log holds the values")
        source = dataclasses.replace(source, **changes)
    return source, kinds_list


def source_page_name(ledger: Ledger, vault: Vault, source_path: str) -> str:
    """The page of a raw/ path: the one bound to it, or the name a new binding would get,
    ``sources/src-<slug>`` suffixed on collisions (the slug of the name as shown: a secret in
    the name never becomes a page's file name).

    Reads only: planning binds nothing. The binding is recorded by the ingest's operation once
    its commit exists (``Ledger.bind_page``, journaled), after the operation checked this name
    again under the vault's write lock (``Pipeline._apply``), so a plan set aside leaves no
    binding and two sources whose names slug the same never commit to one page.
    """
    bound = ledger.bound_page(source_path)
    if bound is not None:
        return bound
    shown = shown_name(source_path)
    stem = Path(shown).stem or Path(shown).name
    # Candidates in turn (``-2``, ``-3``…) against the bindings and the files there, one key
    # and one file looked up per candidate rather than the table read or the folder listed: a
    # bulk import's cost does not grow with its sources.
    base = f"sources/src-{slugify(stem)}"
    n = 1
    while True:
        candidate = base if n == 1 else f"{base}-{n}"
        if not ledger.page_is_bound(candidate) and not (vault.wiki / f"{candidate}.md").exists():
            return candidate
        n += 1


@dataclass(frozen=True)
class SourceReading:
    """What the offline engine reads from one source by itself: its text with secrets redacted,
    its summary and sentences, its keyphrases. Nothing another source or a page changes goes
    into it, so it is read outside the planner's lock (:meth:`OfflinePlanner.read`)."""

    source: SourceText
    secrets: list[str]
    summary: SourceDigest
    keyphrases: list[str]
    size: int


class OfflinePlanner:
    """Plans an ingest with no model: the source page, the concept and entity pages it shares
    with other sources (ingest/concepts.py), and overview.md's generated block.

    In two steps: :meth:`read` (the source alone: redaction, summary, keyphrases; most of the
    planner's own work) runs in parallel on the workers; :meth:`plan_read` (the title against
    the other sources', the term index, concept pages, overview.md) runs under :attr:`serial`
    with the commit, one source at a time, so no change is computed from a stale page or index.
    Planning changes no state: the term index sees the source's terms inside a trial that is
    undone (:meth:`TermIndex.trial`), and the plan carries them as a delta the door makes once
    the commit exists.
    """

    engine = ENGINE_NAME

    def __init__(self, config: Config, vault: Vault, ledger: Ledger, catalog: Catalog, terms: TermIndex) -> None:
        self.config = config
        self.vault = vault
        self.ledger = ledger
        self.catalog = catalog
        self.terms = terms  # the process's term index (its VaultContext's)
        self.concepts = ConceptKeeper(vault, catalog, self.terms)
        # Concept pages, overview.md and the term index are shared by sources: the pipeline
        # runs plan_read and the commit one source at a time through this lock, so no change is
        # computed from a stale page; read() needs no lock (several workers read at once).
        self.serial = threading.Lock()

    def plan(self, record: FileRecord, source: SourceText, data: bytes, today: date) -> IngestPlan:
        return self.plan_read(record, self.read(record, source, data), today)

    def read(self, record: FileRecord, source: SourceText, data: bytes) -> SourceReading:
        """The part of planning that depends on the source alone (no lock needed)."""
        source, secrets = redact_source(self.config, source, self.ledger, record.path)
        summary = digest(
            source.text, source.kind, source.doc_title, file_name_text(humanize_file_name(shown_name(record.path))),
            self.config.ingest.summary_sentences, self.config.ingest.key_points,
        )
        return SourceReading(source, secrets, summary, source_keyphrases(summary.sentences), len(data))

    def plan_read(self, record: FileRecord, reading: SourceReading, today: date) -> IngestPlan:
        """The plan from a source already read: call under :attr:`serial` (shared pages and index)."""
        source, secrets, summary = reading.source, reading.secrets, reading.summary
        page = source_page_name(self.ledger, self.vault, record.path)
        stem = page.rsplit("/", 1)[-1]
        shown = shown_name(record.path)
        # No two source pages share a title: a generic or taken one gets its project (issue 18).
        title = qualify_title(clean_line(summary.title).text or "untitled", record.path,
                              lambda candidate: self.terms.title_taken(candidate, stem))
        summary = dataclasses.replace(summary, title=title)
        terms = extract_terms(summary.body, summary.title, summary.sentences, known=self.terms.known,
                              project=project_of(record.path), keyphrases=reading.keyphrases)
        mentioned = self.catalog.mentioned_pages(summary.body, exclude={page})[:40]
        # The source's terms as if recorded, for the concept pages and overview.md to count it,
        # and undone after: recorded for good by the door once the commit exists (the delta).
        with self.terms.trial() as terms_seen:
            shared = self.concepts.plan(stem, title, terms, summary.sentences, today, mentioned)
            overview = self.concepts.overview_change(today, stem)
        text = render_source_page(
            digest_=summary, source_path=shown, sha256=record.sha256, encoding=source.encoding,
            kind=source.kind, links=shared.links, today=today, size=reading.size,
            allow_remote_images=self.config.pages.allow_remote_images, secrets=secrets,
        )
        changes = [PageChange(page, text, reason="source page"), *shared.changes]
        if overview is not None:
            changes.append(overview)
        return IngestPlan(
            record=record, title=title, source_page=page, changes=changes, engine=self.engine,
            links=[link for link, _ in shared.links], deltas=[terms_seen],
        )


def prepare(config: Config, vault: Vault, record: FileRecord) -> tuple[SourceText, bytes]:
    data = read_source_bytes(vault, record, config.ingest.max_source_bytes,
                             allow_hard_links=config.ingest.allow_hard_links)
    # Read in a worker process, bounded (intake/extract/bounds.py, sandbox.py).
    return extract_source(disk_path(vault.root, record.path), data, Limits.from_config(config.ingest)), data
