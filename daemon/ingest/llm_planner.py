"""The model engine: route → prompt → validated JSON operations → checked page changes.

Routing and what the model sees of each routed page are code (:mod:`context`): pages holding
claims the source speaks about, pages it names, full-text hits and the overview, each shown as
its outline, current claims and the paragraphs matching the source, within the ceiling
``llm.prompt_budget_chars``, plus a short list of other page names for linking. Prompt size
therefore stays flat as the wiki grows. A source longer than its share of the budget is split
into parts ingested in order, each part seeing the pages as the earlier parts left them.

The reply's operations are checked and applied by :mod:`operations`; whatever fails a check
is held for REVIEW.md (:func:`held_proposals`, written at commit time). A reply that
stays truncated or invalid after one retry quarantines the source: nothing of it is applied.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from string import Template
from typing import Any

from ..core.config import Config
from ..core.errors import (
    LLMAuthError,
    LLMReplyError,
    LLMTransientError,
    SourceAwaitsApproval,
    SourceRejected,
    UnsafePathError,
)
from ..core.opkinds import FixAction
from ..core.resources import read_shipped_text
from ..core.vault import Vault
from ..ingest.context import Routing, page_context, route
from ..ingest.cost import (
    CHARS_PER_TOKEN,
    CostEstimate,
    estimate,
    expected_reply_tokens,
    is_approved,
    outline_plan,
    waiting_reason,
)
from ..ingest.llm import LLMClient, Tolerance
from ..ingest.normalize import Normaliser, PageNames, source_date
from ..ingest.notes import HELD, NORMALISED, NotesDelta, note_path
from ..ingest.offline import SourceDigest, find_dates, render_source_page
from ..ingest.operations import (
    MAX_OPERATIONS,
    OPERATION_SCHEMAS,
    REPLY_ENVELOPE,
    REPLY_SCHEMA,
    Held,
    Workspace,
    summarize_op,
)
from ..ingest.plan import IngestPlan, redact_source, source_page_name
from ..intake.extract import SourceText
from ..intake.ledger import FileRecord, Ledger
from ..intake.names import shown_name
from ..wiki.catalog import Catalog
from ..wiki.pages import SPECIAL_PAGES, Page, get_section, parse_page, render_page, set_section
from ..wiki.reviewfile import HELD_BACK, Proposal, proposal
from ..wiki.sanitize import clean_line, code_span, file_name_text
from ..wiki.writer import PageChange

log = logging.getLogger(__name__)

SCHEMA_MD_LIMIT = 6000
SCHEMA_SECTIONS_NOT_FOR_INGEST = ("Daily logs",)
# Room for page views even when the source part fills the budget: claims the source speaks
# about are worth sending over a slightly larger prompt.
MIN_PAGES_CHARS = 1500
ROUTE_AGAIN = 3  # routings after waiting for another worker, before the door's check takes over


# -- routing ----------------------------------------------------------------------------------

def split_source(text: str, budget: int) -> list[str]:
    """Parts of at most ``budget`` characters, cut along the source's own structure: at its
    headings (chapters, sections) where a part can hold whole sections, else at paragraph
    (else line, else character) bounds inside a section too long for one part. Nothing is cut
    away: the parts joined are the text."""
    if len(text) <= budget:
        return [text]
    parts: list[str] = []
    current = ""
    for section in _sections(text):
        if len(current) + len(section) <= budget:
            current += section
            continue
        if current.strip():
            parts.append(current)
        current = ""
        if len(section) <= budget:
            current = section
            continue
        for piece in _paragraph_parts(section, budget):
            if len(current) + len(piece) > budget and current:
                parts.append(current)
                current = ""
            current += piece
    if current.strip():
        parts.append(current)
    return [p for p in parts if p.strip()]


def _sections(text: str) -> list[str]:
    """The text cut before each heading (``#`` to ``###``) outside code fences."""
    sections: list[str] = []
    current: list[str] = []
    in_fence = False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        if not in_fence and re.match(r"#{1,3}\s", line) and current:
            sections.append("".join(current))
            current = []
        current.append(line)
    if current:
        sections.append("".join(current))
    return sections


def _paragraph_parts(text: str, budget: int) -> list[str]:
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
    if current:
        parts.append(current)
    return parts


def _one_text(value: Any) -> str:
    """A reply-level value as one text: a string as it is, a list joined, anything else ''."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(v for v in value if isinstance(v, str))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return ""


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value] if isinstance(value, str) else []


# -- REVIEW.md --------------------------------------------------------------------------------

def held_proposals(record: FileRecord, source_page: str, held: list[Held]) -> list[Proposal]:
    """Operations held back by the checks, as tickable REVIEW.md proposals: approving one
    applies it (upkeep/review.py, ``apply-op``). The id hashes the source version and the
    operation, so a retried ingest never proposes the same operation twice."""
    stem = source_page.rsplit("/", 1)[-1]
    return [
        proposal(HELD_BACK, f"{code_span(shown_name(record.path))} → {h.line()}", [h.page] if h.page else [],
                 {"action": FixAction.APPLY_OP, "op": h.op, "source_page": stem, "reason": h.reason},
                 facts={"source": record.sha256, "op": h.op})
        for h in held
    ]


# -- prompts ----------------------------------------------------------------------------------

def load_prompt(name: str) -> Template:
    return Template(read_shipped_text("config", "prompts", name))


# How many sources' replies a planner keeps for a plan found outdated (one per worker is enough).
KEPT_REPLIES = 16


@dataclass
class _KeptReplies:
    replies: dict[int, tuple[dict[str, Any], Any]] = field(default_factory=dict)  # by part
    reuse: bool = False  # set when the door found the plan outdated
    # The source page the prompts named: a plan whose page name another source took meanwhile
    # (it is planned again on the next name) asks again, so no reply cites the other's page.
    page: str = ""


class ModelPlanner:
    """Plans an ingest with the configured model (same protocol as ``OfflinePlanner``)."""

    def __init__(self, config: Config, vault: Vault, ledger: Ledger, catalog: Catalog,
                 client: LLMClient, check: bool = True) -> None:
        self.config = config
        self.vault = vault
        self.ledger = ledger
        self.catalog = catalog
        self.client = client  # the process's (on its cost ledger)
        self.engine = f"model:{config.llm.model}"
        self.system_template = load_prompt("ingest-system.md")
        self.user_template = load_prompt("ingest-user.md")
        self._paused_until = 0.0
        self._pause_reason = ""
        self._auth_error = ""
        self.calls = 0  # model calls made (benchmarks read it)
        self.last_estimate: CostEstimate | None = None  # the last source's estimate (eval reads it)
        self.last_prompt_chars: list[int] = []
        self.last_tolerance: Tolerance | None = None  # how the last source's operations were taken
        # The replies of the last few plans, by source sha256 and part: a plan the door found
        # outdated (another worker changed a page it read, PlanOutdated) is applied again to the
        # pages as they are now from the same replies, without paying the model twice.
        self._replies: OrderedDict[str, _KeptReplies] = OrderedDict()
        self._replies_lock = threading.Lock()
        if check:
            # A bad model string or a missing key is a clear error at start, not at the first source.
            self.client.check_setup()

    # -- the protocol ----------------------------------------------------------------------

    holds_pages = True  # takes the pipeline's per-page locks on the pages it routes to

    def plan(self, record: FileRecord, source: SourceText, data: bytes, today: date,
             hold: Callable[[Iterable[str]], bool] | None = None) -> IngestPlan:
        """``hold``: takes the pages this plan reads and may write until the pipeline's commit
        (True when it had to wait for another worker's commit to them)."""
        if self._auth_error:
            raise LLMAuthError(self._auth_error)
        wait = self._paused_until - time.time()
        if wait > 0:
            raise LLMTransientError(f"model calls paused {wait:.0f}s more: {self._pause_reason}", retry_after=wait)
        # Secrets are replaced before anything is planned: the model never sees them.
        source, secrets = redact_source(self.config, source, self.ledger, record.path)
        text = source.text

        def choose() -> tuple[str, Routing]:
            # The source's page (read only: bound once the ingest commits) and the pages it routes to.
            page = source_page_name(self.ledger, self.vault, record.path)
            return page, route(self.catalog, text, {page, *SPECIAL_PAGES} - {"overview"})

        page, routing = choose()
        if hold is not None:
            page, routing = self._hold_routed(page, routing, hold, choose)
        stem = page.rsplit("/", 1)[-1]
        exclude = {page, *SPECIAL_PAGES} - {"overview"}
        budget = self.config.llm.prompt_budget_chars
        parts = split_source(text, max(500, budget // 2))
        workspace = Workspace(
            self.vault, stem, text, today, self.config.llm.max_section_shrink,
            find_claim_pages=lambda key: self.catalog.phrase_pages(key),
            allow_remote_images=self.config.pages.allow_remote_images,
            normaliser=self._normaliser(text, today),
        )
        parts, routing = self._bound_cost(record, page, text, parts, routing, exclude, workspace, today)
        replies: list[dict[str, Any]] = []
        usage_in = usage_out = 0
        cost = 0.0
        self.last_prompt_chars = []
        for index, part in enumerate(parts):
            if len(parts) > 1:  # a long source: `status` says how far it is (a stale "waiting" is replaced)
                self.ledger.note_progress(record, f"model call {index + 1} of {len(parts)}")
            system, user = self._prompt(record, page, part, index, len(parts), routing, workspace, today)
            self.last_prompt_chars.append(len(system) + len(user))
            reply = self._kept_reply(record.sha256, index, page) or self._call(system, user)
            self._keep_reply(record.sha256, index, reply, page)
            usage_in += reply[1].tokens_in
            usage_out += reply[1].tokens_out
            cost += reply[1].cost_usd
            workspace.kinds.update(reply[1].notes)
            replies.append(reply[0])
            moved = workspace.reload_untouched()
            if moved:
                log.info("%s: re-applying the model's operations to pages edited meanwhile: %s",
                         record.path, ", ".join(moved))
            self._apply(reply[0], workspace)
        self._replies_used(record.sha256)
        first = replies[0]
        # The source page gets the reply's title as it came (its sanitizer notes what it cleaned);
        # the commit subject and log.md get the cleaned one. A reply without a title (or with a
        # list for one) is read, not refused: the file's name stands in.
        reply_title = _one_text(first.get("title")) or file_name_text(Path(shown_name(record.path)).stem)
        reply_title = reply_title.strip()[:120]
        title = clean_line(reply_title).text or "untitled"
        summary = " ".join(_one_text(r.get("summary")) for r in replies).strip()[:2400]
        key_points = [_one_text(p) for r in replies for p in _as_list(r.get("key_points"))][:12]
        key_points = [p[:400] for p in key_points if p.strip()]
        # The base is the text the operations were applied to (read after the model replied):
        # the writer merges any edit landing after it, and commits a person's earlier edits first.
        changes = [
            PageChange(state.name, state.render(), base=state.original, reason="model ingest")
            for state in workspace.changed_pages()
        ]
        touched = [c.page for c in changes]
        statements = [op for op in workspace.applied if op.get("op") == "add_claim"]
        source_text = self._source_page(record, source, data, reply_title, summary, key_points, touched,
                                        statements, today, page, secrets)
        changes.insert(0, PageChange(page, source_text, base=self._read(page), reason="source page"))
        held = held_proposals(record, page, workspace.held)
        notes = NotesDelta()  # written once the commit exists (ingest/notes.py): planning writes nothing
        if workspace.held:
            notes.files[note_path(HELD, record.sha256)] = _held_json(record, workspace.held)
        if workspace.normalised_records:
            # What was taken after normalising, as the model sent it (its extra fields included).
            notes.files[note_path(NORMALISED, record.sha256)] = json.dumps(
                {"source": record.path, "operations": workspace.normalised_records}, indent=2, ensure_ascii=False,
                default=str)
        tolerance = Tolerance(workspace.as_sent, workspace.normalised, len(workspace.held), Counter(workspace.kinds),
                              Counter(h.kind for h in workspace.held))
        self.last_tolerance = tolerance
        self.client.costs.record_tolerance(sha256=record.sha256, model=self.config.llm.model, source=record.path,
                                           tolerance=tolerance)
        trailers = {"Wikiwright-Ops": tolerance.line()}
        self.ledger.clear_notice("llm")
        return IngestPlan(
            record=record, title=title, source_page=page, changes=changes, engine=self.engine,
            links=touched, claims_added=workspace.claims_added, claims_superseded=workspace.claims_superseded,
            tokens_in=usage_in, tokens_out=usage_out, cost_usd=cost, held_for_review=held, trailers=trailers,
            deltas=[notes] if notes else [],
        )

    @staticmethod
    def _hold_routed(page: str, routing: Routing, hold: Callable[[Iterable[str]], bool],
                     again: Callable[[], tuple[str, Routing]]) -> tuple[str, Routing]:
        """The source's page and the routed pages held before any is read: a worker that waited
        for another's commit chooses again on the ledger and catalogue as that commit left it
        (its source page too: the commit may have bound that name to a source whose name slugs
        the same, and this one's is then ``-2``), at most a few times; a page still moving after
        that is caught by the door's check and planned again."""
        for _ in range(ROUTE_AGAIN):
            if not hold([page, *routing.candidates, *routing.claim_keys]):
                return page, routing
            page, routing = again()
        return page, routing

    def _normaliser(self, text: str, today: date) -> Normaliser:
        """What resolves the model's page names, claim keys and dates for this ingest."""
        def exists(name: str) -> bool:
            try:
                return self.vault.wiki_path(f"{name}.md").exists()
            except (UnsafePathError, OSError, ValueError):  # an unsafe name: no page (the checks hold it)
                return False

        def labels() -> list[tuple[str, str, tuple[str, ...], bool]]:
            return [(e.stem, e.title, e.aliases, e.name.startswith("sources/")) for e in self.catalog.entries()
                    if not e.error]

        return Normaliser(PageNames(exists, labels), self.catalog.claim_keys, source_date(text, today),
                          OPERATION_SCHEMAS)

    # -- steps -----------------------------------------------------------------------------

    def _estimate(self, record: FileRecord, page: str, parts: list[str], routing: Routing,
                  workspace: Workspace, today: date) -> CostEstimate:
        """Tokens and calls before the first call: the first prompt is built for real (code only);
        the other parts' prompts differ from it by their text."""
        system, user = self._prompt(record, page, parts[0], 0, len(parts), routing, workspace, today)
        overhead = len(system) + len(user) - len(parts[0].strip())
        return estimate([overhead + len(part.strip()) for part in parts],
                        expected_reply_tokens(self.config.llm.reply_budget_tokens))

    def _bound_cost(self, record: FileRecord, page: str, text: str, parts: list[str], routing: Routing,
                    exclude: set[str], workspace: Workspace, today: date) -> tuple[list[str], Routing]:
        """Parts and routing within ``llm.max_tokens_per_source``, or SourceAwaitsApproval."""
        llm = self.config.llm
        est = self._estimate(record, page, parts, routing, workspace, today)
        self.last_estimate = est
        bound = llm.max_tokens_per_source
        if not bound or est.tokens <= bound or is_approved(self.ledger, record.sha256):
            return parts, routing
        if llm.over_cost != "outline":
            raise SourceAwaitsApproval(waiting_reason(est, bound), tokens=est.tokens, calls=est.calls)
        # The cheaper plan: the outline and the sections that concern the wiki, within the bound.
        per_call = est.tokens_in // max(1, est.calls) - len(parts[0]) // CHARS_PER_TOKEN
        reply = expected_reply_tokens(llm.reply_budget_tokens)
        room_chars = max(2000, (bound - 2 * (per_call + reply)) * CHARS_PER_TOKEN // 2)
        reduced = outline_plan(text, self.catalog, room_chars)
        parts = split_source(reduced, max(500, llm.prompt_budget_chars // 2))
        routing = route(self.catalog, reduced, exclude)
        cheaper = self._estimate(record, page, parts, routing, workspace, today)
        while len(parts) > 1 and cheaper.tokens > bound:
            parts = parts[:-1]
            cheaper = self._estimate(record, page, parts, routing, workspace, today)
        log.info("%s: estimated %d tokens in %d calls, over llm.max_tokens_per_source (%d); ingesting its "
                 "outline and matching sections instead (about %d tokens in %d calls)",
                 record.path, est.tokens, est.calls, bound, cheaper.tokens, cheaper.calls)
        self.last_estimate = cheaper
        return parts, routing

    def _prompt(self, record: FileRecord, page: str, part: str, index: int, total: int,
                routing: Routing, workspace: Workspace, today: date) -> tuple[str, str]:
        """The prompt for one part: the pages block is cut to what is left of the ceiling
        (``llm.prompt_budget_chars``) after the fixed text and the source part."""
        schema_md = self._schema_md()
        system = self.system_template.safe_substitute(schema_md=schema_md)
        part_note = f"This is part {index + 1} of {total} of the source (ingest parts in order).\n" if total > 1 else ""
        fields = {
            "today": today.isoformat(), "source_path": shown_name(record.path), "source_page": page.rsplit("/", 1)[-1],
            "part_note": part_note, "source_text": part.strip(),
        }
        fixed = len(system) + len(self.user_template.safe_substitute(**fields, pages="", other_names=""))
        available = max(MIN_PAGES_CHARS, self.config.llm.prompt_budget_chars - fixed)

        def read(name: str) -> Page | None:
            state = workspace.read(name)
            return state.page if state is not None else None

        block, _, names = page_context(routing, read, part, available)
        user = self.user_template.safe_substitute(
            **fields, pages=block or "(none found)", other_names=", ".join(names) if names else "(none)",
        )
        return system, user

    def _schema_md(self) -> str:
        """The vault's SCHEMA.md, less the sections about the daily logs (consolidation's rules,
        not an ingest's): every other rule a person wrote there is sent."""
        try:
            text = self.vault.schema_file.read_text(encoding="utf-8")
        except OSError:
            return "(no SCHEMA.md in this vault)"
        for heading in SCHEMA_SECTIONS_NOT_FOR_INGEST:
            if get_section(text, heading) is not None:
                text = set_section(text, heading, "")
        return text if len(text) <= SCHEMA_MD_LIMIT else text[:SCHEMA_MD_LIMIT] + "\n[… cut]"

    def replan_from_replies(self, sha256: str) -> None:
        """The next plan of these bytes re-applies the replies kept from this one (the door
        found the plan outdated: a page it read changed under another worker's operation)."""
        with self._replies_lock:
            kept = self._replies.get(sha256)
            if kept is not None:
                kept.reuse = True

    def _kept_reply(self, sha256: str, index: int, page: str) -> tuple[dict[str, Any], Any] | None:
        with self._replies_lock:
            kept = self._replies.get(sha256)
            usable = kept is not None and kept.reuse and kept.page == page
            return kept.replies.get(index) if kept is not None and usable else None

    def _keep_reply(self, sha256: str, index: int, reply: tuple[dict[str, Any], Any], page: str) -> None:
        with self._replies_lock:
            kept = self._replies.get(sha256)
            if kept is None or kept.page != page:
                kept = self._replies[sha256] = _KeptReplies(page=page)
            kept.replies[index] = reply
            self._replies.move_to_end(sha256)
            while len(self._replies) > KEPT_REPLIES:
                self._replies.popitem(last=False)

    def _replies_used(self, sha256: str) -> None:
        with self._replies_lock:
            kept = self._replies.get(sha256)
            if kept is not None:
                kept.reuse = False

    def _call(self, system: str, user: str) -> tuple[dict[str, Any], Any]:
        self.calls += 1
        try:
            return self.client.complete_json(purpose="ingest", system=system, user=user, schema=REPLY_SCHEMA,
                                             accept=REPLY_ENVELOPE)
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
        """Each operation on its own: normalised, checked, applied or held with its reason."""
        operations = list(reply.get("operations") or [])
        for op in operations[MAX_OPERATIONS:]:
            workspace.hold(op, f"the reply holds {len(operations)} operations, over {MAX_OPERATIONS} in one reply")
        prepared = [workspace.prepare(op) for op in operations[:MAX_OPERATIONS]]
        named = {p.page for p in prepared if p.page}
        limit = self.config.llm.max_pages_per_ingest
        if len(named) > limit:
            for p in prepared:
                workspace.hold(p.op, f"the reply touches {len(named)} pages, over llm.max_pages_per_ingest ({limit})",
                               p.sent)
            return
        for p in prepared:
            workspace.apply_prepared(p)

    def _read(self, name: str) -> str | None:
        try:
            return self.vault.wiki_path(f"{name}.md").read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def _source_page(self, record: FileRecord, source: SourceText, data: bytes, title: str, summary: str,
                     key_points: list[str], touched: list[str], statements: list[dict[str, Any]],
                     today: date, page: str, secrets: list[str] | None = None) -> str:
        digest = SourceDigest(title, summary, key_points, find_dates(source.text), [])
        links = []
        for name in touched:
            entry = self.catalog.get(name)
            links.append((name, entry.title if entry else name))
        text = render_source_page(
            digest_=digest, source_path=shown_name(record.path), sha256=record.sha256, encoding=source.encoding,
            kind=source.kind, links=links, today=today, size=len(data),
            allow_remote_images=self.config.pages.allow_remote_images, secrets=secrets,
        )
        parsed = parse_page(text)
        parsed.meta["engine"] = self.engine
        body = parsed.body
        if statements:
            lines = ["## Statements", ""]
            for op in statements:
                # The quote is the source's own text: it goes through the sanitizer like the rest.
                quote = clean_line(str(op.get("quote", ""))).text
                value = clean_line(str(op.get("value", ""))).text
                lines.append(f"- `{op.get('key')}`: {value} (as of {op.get('as_of')}) — “{quote}”")
            body = body.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n"
        parsed.body = body
        return render_page(parsed)


def _held_json(record: FileRecord, held: list[Held]) -> str:
    """The full proposals held back, for a person (or review.py) to apply by hand later."""
    data = [{"page": h.page, "reason": h.reason, "op": h.op, "summary": summarize_op(h.op),
             **({"sent": h.sent} if h.sent is not None else {})} for h in held]
    return json.dumps({"source": record.path, "held": data}, indent=2, ensure_ascii=False, default=str)
