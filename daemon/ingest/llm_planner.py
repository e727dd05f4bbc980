"""The model engine: route → prompt → validated JSON operations → checked page changes.

Routing is code: pages whose title or alias the source mentions, then full-text search (FTS5),
and only those pages' text — capped by ``llm.prompt_budget_chars`` — goes to the model, with a
short list of other page names for linking. Prompt size therefore stays flat as the wiki
grows. A source longer than its share of the budget is split into parts ingested in order,
each part seeing the pages as the earlier parts left them.

The reply's operations are checked and applied by :mod:`operations`; whatever fails a check
is held for REVIEW.md (:func:`held_proposals`, written at commit time). A reply that
stays truncated or invalid after one retry quarantines the source: nothing of it is applied.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections import Counter
from datetime import date
from pathlib import Path
from string import Template
from typing import Any

from ..core.config import Config
from ..core.errors import LLMAuthError, LLMReplyError, LLMTransientError, SourceRejected
from ..core.fsutil import atomic_write_text
from ..core.resources import read_shipped_text
from ..core.vault import Vault
from ..ingest.llm import LLMClient
from ..ingest.offline import _STOPWORDS, SourceDigest, find_dates, render_source_page
from ..ingest.operations import REPLY_SCHEMA, Held, Workspace, summarize_op
from ..ingest.plan import IngestPlan, source_page_name
from ..intake.extract import SourceText
from ..intake.ledger import FileRecord, Ledger
from ..wiki.catalog import Catalog
from ..wiki.pages import SPECIAL_PAGES, parse_page, render_page
from ..wiki.reviewfile import HELD_BACK, Proposal, proposal
from ..wiki.writer import PageChange

log = logging.getLogger(__name__)

MAX_CANDIDATES = 8  # pages whose text is sent
MAX_OTHER_NAMES = 30  # page names listed for linking
SEARCH_TERMS = 12
SCHEMA_MD_LIMIT = 6000
_WORD_RE = re.compile(r"[^\W\d_][\w'-]{2,}", re.UNICODE)


# -- routing ----------------------------------------------------------------------------------

def search_terms(text: str, limit: int = SEARCH_TERMS) -> list[str]:
    """The source's most frequent content words (first occurrence breaks ties)."""
    words = [w.casefold().strip("'-") for w in _WORD_RE.findall(text)]
    counts = Counter(w for w in words if len(w) > 3 and w not in _STOPWORDS)
    first = {w: i for i, w in reversed(list(enumerate(words)))}
    return sorted(counts, key=lambda w: (-counts[w], first[w]))[:limit]


def route(catalog: Catalog, text: str, exclude: set[str]) -> tuple[list[str], list[str]]:
    """(candidate pages, other names): title/alias mentions first, then full-text hits."""
    ordered: list[str] = []
    for name in catalog.mentioned_pages(text, exclude=exclude):
        if name not in ordered and not name.startswith("sources/"):
            ordered.append(name)
    terms = search_terms(text)
    if terms:
        for hit in catalog.search(" ".join(terms), limit=MAX_CANDIDATES + MAX_OTHER_NAMES):
            if hit.name not in exclude and hit.name not in ordered and not hit.name.startswith("sources/"):
                ordered.append(hit.name)
    ordered = [n for n in ordered if n not in ("index", "log")]
    return ordered[:MAX_CANDIDATES], ordered[MAX_CANDIDATES : MAX_CANDIDATES + MAX_OTHER_NAMES]


def split_source(text: str, budget: int) -> list[str]:
    """Parts of at most ``budget`` characters, cut at paragraph (else line, else char) bounds."""
    if len(text) <= budget:
        return [text]
    parts: list[str] = []
    current = ""
    for block in re.split(r"(?<=\n\n)", text):
        pieces = [block]
        if len(block) > budget:
            pieces = re.split(r"(?<=\n)", block)
        for piece in pieces:
            while len(piece) > budget:
                parts.extend([current] if current else [])
                current = ""
                parts.append(piece[:budget])
                piece = piece[budget:]
            if len(current) + len(piece) > budget and current:
                parts.append(current)
                current = ""
            current += piece
    if current.strip():
        parts.append(current)
    return [p for p in parts if p.strip()]


# -- REVIEW.md --------------------------------------------------------------------------------

def held_proposals(record: FileRecord, source_page: str, held: list[Held]) -> list[Proposal]:
    """Operations held back by the checks, as tickable REVIEW.md proposals: approving one
    applies it (upkeep/review.py, ``apply-op``). The id hashes the source version and the
    operation, so a retried ingest never proposes the same operation twice."""
    stem = source_page.rsplit("/", 1)[-1]
    return [
        proposal(HELD_BACK, f"`{record.path}` → {h.line()}", [h.page] if h.page else [],
                 {"action": "apply-op", "op": h.op, "source_page": stem, "reason": h.reason},
                 facts={"source": record.sha256, "op": h.op})
        for h in held
    ]


# -- prompts ----------------------------------------------------------------------------------

def load_prompt(name: str) -> Template:
    return Template(read_shipped_text("config", "prompts", name))


class ModelPlanner:
    """Plans an ingest with the configured model (same protocol as ``OfflinePlanner``)."""

    def __init__(self, config: Config, vault: Vault, ledger: Ledger, catalog: Catalog,
                 client: LLMClient | None = None, check: bool = True) -> None:
        self.config = config
        self.vault = vault
        self.ledger = ledger
        self.catalog = catalog
        self.client = client or LLMClient(config, vault, ledger)
        self.engine = f"model:{config.llm.model}"
        self.system_template = load_prompt("ingest-system.md")
        self.user_template = load_prompt("ingest-user.md")
        self._paused_until = 0.0
        self._pause_reason = ""
        self._auth_error = ""
        self.calls = 0  # model calls made (benchmarks read it)
        self.last_prompt_chars: list[int] = []
        if check:
            # A bad model string or a missing key is a clear error at start, not at the first source.
            self.client.check_setup()

    # -- the protocol ----------------------------------------------------------------------

    def plan(self, record: FileRecord, source: SourceText, data: bytes, today: date) -> IngestPlan:
        if self._auth_error:
            raise LLMAuthError(self._auth_error)
        wait = self._paused_until - time.time()
        if wait > 0:
            raise LLMTransientError(f"model calls paused {wait:.0f}s more: {self._pause_reason}", retry_after=wait)
        page = source_page_name(self.ledger, self.vault, record.path)
        stem = page.rsplit("/", 1)[-1]
        text = source.text
        budget = self.config.llm.prompt_budget_chars
        parts = split_source(text, max(500, budget // 2))
        workspace = Workspace(
            self.vault, stem, text, today, self.config.llm.max_section_shrink,
            find_claim_pages=lambda key: self.catalog.phrase_pages(key),
        )
        exclude = {page, *SPECIAL_PAGES} - {"overview"}
        candidates, others = route(self.catalog, text, exclude)
        replies: list[dict[str, Any]] = []
        usage_in = usage_out = 0
        cost = 0.0
        self.last_prompt_chars = []
        for index, part in enumerate(parts):
            system, user = self._prompt(record, page, part, index, len(parts), candidates, others, workspace, today)
            self.last_prompt_chars.append(len(system) + len(user))
            reply = self._call(system, user)
            usage_in += reply[1].tokens_in
            usage_out += reply[1].tokens_out
            cost += reply[1].cost_usd
            replies.append(reply[0])
            moved = workspace.reload_untouched()
            if moved:
                log.info("%s: re-applying the model's operations to pages edited meanwhile: %s",
                         record.path, ", ".join(moved))
            self._apply(reply[0], workspace)
        first = replies[0]
        title = str(first.get("title") or Path(record.path).stem).strip()[:120]
        summary = " ".join(str(r.get("summary") or "") for r in replies).strip()
        key_points = [str(p) for r in replies for p in r.get("key_points") or []][:12]
        # The base is the text the operations were applied to (read after the model replied):
        # the writer merges any edit landing after it, and commits a person's earlier edits first.
        changes = [
            PageChange(state.name, state.render(), base=state.original, reason="model ingest")
            for state in workspace.changed_pages()
        ]
        touched = [c.page for c in changes]
        statements = [op for r in replies for op in r.get("operations") or []
                      if isinstance(op, dict) and op.get("op") == "add_claim"
                      and not any(h.op is op for h in workspace.held)]
        source_text = self._source_page(record, source, data, title, summary, key_points, touched,
                                        statements, today, page)
        changes.insert(0, PageChange(page, source_text, base=self._read(page), reason="source page"))
        held = held_proposals(record, page, workspace.held)
        if workspace.held:
            self._keep_held_json(record, workspace.held)
        self.ledger.clear_notice("llm")
        return IngestPlan(
            record=record, title=title, source_page=page, changes=changes, engine=self.engine,
            links=touched, claims_added=workspace.claims_added, claims_superseded=workspace.claims_superseded,
            tokens_in=usage_in, tokens_out=usage_out, cost_usd=cost, held_for_review=held,
        )

    # -- steps -----------------------------------------------------------------------------

    def _prompt(self, record: FileRecord, page: str, part: str, index: int, total: int,
                candidates: list[str], others: list[str], workspace: Workspace, today: date) -> tuple[str, str]:
        budget = self.config.llm.prompt_budget_chars
        remaining = max(0, budget - len(part))
        per_page = max(800, budget // 4)
        shown: list[str] = []
        blocks: list[str] = []
        for name in candidates:
            if remaining < 400:
                break
            state = workspace.read(name)
            if state is None:
                continue
            text = state.render()
            cap = min(per_page, remaining)
            if len(text) > cap:
                text = text[:cap].rsplit("\n", 1)[0] + f"\n[… {len(text) - cap} more characters not shown]\n"
            blocks.append(f"=== page: {name} ===\n{text.rstrip()}\n=== end of {name} ===")
            remaining -= len(text)
            shown.append(name)
        names = [n for n in [*candidates, *others] if n not in shown][:MAX_OTHER_NAMES]
        schema_md = self._schema_md()
        system = self.system_template.safe_substitute(schema_md=schema_md)
        part_note = f"This is part {index + 1} of {total} of the source (ingest parts in order).\n" if total > 1 else ""
        user = self.user_template.safe_substitute(
            today=today.isoformat(), source_path=record.path, source_page=page.rsplit("/", 1)[-1],
            part_note=part_note, source_text=part.strip(),
            pages="\n\n".join(blocks) if blocks else "(none found)",
            other_names=", ".join(names) if names else "(none)",
        )
        return system, user

    def _schema_md(self) -> str:
        try:
            text = self.vault.schema_file.read_text(encoding="utf-8")
        except OSError:
            return "(no SCHEMA.md in this vault)"
        return text if len(text) <= SCHEMA_MD_LIMIT else text[:SCHEMA_MD_LIMIT] + "\n[… cut]"

    def _call(self, system: str, user: str) -> tuple[dict[str, Any], Any]:
        self.calls += 1
        try:
            return self.client.complete_json(purpose="ingest", system=system, user=user, schema=REPLY_SCHEMA)
        except LLMAuthError as exc:
            self._auth_error = str(exc)
            raise
        except LLMTransientError as exc:
            delay = exc.retry_after if exc.retry_after is not None else 30.0
            self._paused_until = time.time() + delay
            self._pause_reason = str(exc)
            raise
        except LLMReplyError as exc:
            raise SourceRejected("model-reply", f"the model's reply could not be used: {exc}") from None

    def _apply(self, reply: dict[str, Any], workspace: Workspace) -> None:
        operations = [op for op in reply.get("operations") or [] if isinstance(op, dict)]
        named = {str(op.get("page", "")) for op in operations}
        limit = self.config.llm.max_pages_per_ingest
        if len(named) > limit:
            for op in operations:
                workspace.hold(op, f"the reply touches {len(named)} pages, over llm.max_pages_per_ingest ({limit})")
            return
        for op in operations:
            workspace.apply(op)

    def _read(self, name: str) -> str | None:
        try:
            return self.vault.wiki_path(f"{name}.md").read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def _source_page(self, record: FileRecord, source: SourceText, data: bytes, title: str, summary: str,
                     key_points: list[str], touched: list[str], statements: list[dict[str, Any]],
                     today: date, page: str) -> str:
        digest = SourceDigest(title, summary, key_points, find_dates(source.text), [])
        links = []
        for name in touched:
            entry = self.catalog.get(name)
            links.append((name, entry.title if entry else name))
        text = render_source_page(
            digest_=digest, source_path=record.path, sha256=record.sha256, encoding=source.encoding,
            kind=source.kind, links=links, today=today, size=len(data),
        )
        parsed = parse_page(text)
        parsed.meta["engine"] = self.engine
        body = parsed.body
        if statements:
            lines = ["## Statements", ""]
            for op in statements:
                quote = " ".join(str(op.get("quote", "")).split())
                lines.append(f"- `{op.get('key')}`: {op.get('value')} (as of {op.get('as_of')}) — “{quote}”")
            body = body.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n"
        parsed.body = body
        return render_page(parsed)

    def _keep_held_json(self, record: FileRecord, held: list[Held]) -> None:
        """The full proposals, for a person (or review.py) to apply by hand later."""
        folder = self.vault.state / "held"
        folder.mkdir(parents=True, exist_ok=True)
        data = [{"page": h.page, "reason": h.reason, "op": h.op, "summary": summarize_op(h.op)} for h in held]
        atomic_write_text(folder / f"{record.sha256[:16]}.json",
                          json.dumps({"source": record.path, "held": data}, indent=2, ensure_ascii=False))
