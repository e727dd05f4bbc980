"""``wikiwright mcp``: the wiki as a Model Context Protocol server over stdio.

Agents read the wiki (search, read_page, list_pages, history, ask, status, and the resources
``wiki://PAGE``) and write to its memory the way everything else does: ``log`` appends an
observation to today's daily log through the hooks' appender (same redaction), and
``ingest_text`` drops a note into raw/ for the ingest pipeline. No tool writes a wiki page.

With a daemon running, a dropped note is the daemon's to ingest (the tool waits a little for
it and reports the state it reached); without one, the note is ingested here, through the same
door and pipeline as the one-shot ``wikiwright ingest``, holding the vault's lock the same way.

:class:`WikiTools` is the plain logic (no MCP import); :func:`serve` wraps it in the official
SDK's server, imported only when ``wikiwright mcp`` runs.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from ..core.config import Config
from ..core.errors import WikiwrightError
from ..core.vault import Vault, VaultLock
from ..memory.dailylog import MARKERS, PRIORITY_MARKER, append_session, canonical_section
from .context import VaultContext

log = logging.getLogger(__name__)

SERVER_NAME = "wikiwright"
INSTRUCTIONS = (
    "A markdown wiki kept by wikiwright. Read it with search, read_page, list_pages, history "
    "(and ask when a model is configured). Write to it only through log (an observation for "
    "today's daily log: 🔴 durable rule or decision, 🟡 working context, 🟢 ephemeral) and "
    "ingest_text (a note for the wiki to ingest); pages are never written directly."
)
Priority = Literal["durable", "context", "ephemeral", "🔴", "🟡", "🟢"]
MAX_LOG_CHARS = 8000
MAX_PAGE_NAME_CHARS = 1000  # a path, folders included; file systems stop at 255 bytes a component
DEFAULT_INGEST_WAIT = 30.0


class ToolInputError(WikiwrightError):
    """A tool was called with arguments it cannot use (reported to the client as a tool error)."""


def _plain(data: Any) -> Any:
    """JSON-safe copy (dates, paths and other objects as strings)."""
    return json.loads(json.dumps(data, default=str))


class WikiTools:
    """What the MCP tools do, callable without MCP (one instance per server process)."""

    def __init__(self, config: Config, vault: Vault, *, label: str | None = None,
                 clock: Callable[[], float] = time.time, ctx: VaultContext | None = None) -> None:
        self.config = config
        self.vault = vault
        # The server process's vault context (`wikiwright mcp` opens it); else one of its own.
        self.ctx = ctx or VaultContext(config, vault)
        self.label = label or f"mcp: {Path.cwd().name or 'agent'}"
        self.clock = clock
        self._logged = False  # the first observation opens this connection's session block
        self._lock = threading.Lock()

    # -- reading -------------------------------------------------------------------------

    def _catalog(self) -> Any:
        """The context's catalogue, brought up to date (a person or the daemon may have written)."""
        catalog = self.ctx.catalog
        catalog.refresh()
        return catalog

    def close(self) -> None:
        self.ctx.close()

    def search(self, query: str, limit: int = 10) -> dict[str, Any]:
        from ..query.query import search

        if not query.strip():
            raise ToolInputError("search needs words to look for")
        if not 1 <= limit <= 100:
            raise ToolInputError("limit must be between 1 and 100")
        results = search(self.vault, self._catalog(), query, limit)
        return {"query": query, "results": _plain([r.to_json() for r in results])}

    def page_name(self, page: str) -> str:
        """``billing-api``, ``[[Billing API]]``, ``wiki/sources/src-x.md`` → the page's name."""
        raw = page.strip()
        if raw.startswith("[[") and raw.endswith("]]"):
            raw = raw[2:-2].split("|", 1)[0].split("#", 1)[0]
        raw = raw.removeprefix("wiki://").removeprefix("./").removeprefix("wiki/").removesuffix(".md").strip()
        if not raw:
            raise ToolInputError("name a page, e.g. billing-api or [[Billing API]]")
        if len(raw) > MAX_PAGE_NAME_CHARS:
            raise ToolInputError(f"a page name is at most {MAX_PAGE_NAME_CHARS} characters (got {len(raw)})")
        if "\x00" in raw or raw.startswith("/") or ".." in raw.split("/"):
            raise ToolInputError(f"{page!r} is not a page name")
        try:
            if self.vault.wiki_path(f"{raw}.md").is_file():
                return raw
        except WikiwrightError as exc:
            raise ToolInputError(f"{page!r} is not a page name: {exc}") from None
        except OSError as exc:  # a name the file system refuses (too long a component, ...)
            raise ToolInputError(f"{page!r} is not a page name: {exc.strerror}") from None
        catalog = self._catalog()
        # By name, title or alias; a slug is also tried as words ("billing-export" → "billing export").
        found = catalog.resolve(raw) or catalog.resolve(raw.replace("-", " "))
        if found is None:  # the stem of a page in a folder: "src-x" or "x" for sources/src-x
            stems = {e.stem: e.name for e in catalog.entries()}
            found = stems.get(raw) or stems.get(f"src-{raw}")
        if found is None:
            raise ToolInputError(f"no page {page!r} in the wiki (list_pages shows them, search finds them)")
        return str(found)

    def read_text(self, page: str) -> tuple[str, str]:
        name = self.page_name(page)
        try:
            return name, self.vault.wiki_path(f"{name}.md").read_text(encoding="utf-8", errors="replace")
        except WikiwrightError as exc:
            raise ToolInputError(str(exc)) from None
        except FileNotFoundError:
            raise ToolInputError(f"no page {page!r} in the wiki") from None

    def read_page(self, page: str) -> dict[str, Any]:
        name, text = self.read_text(page)
        return {"page": name, "path": f"wiki/{name}.md", "uri": f"wiki://{name}", "text": text}

    def list_pages(self, type: str | None = None) -> dict[str, Any]:
        entries = self._catalog().entries()
        types = sorted({e.type for e in entries if e.type})
        if type:
            if type not in types:
                raise ToolInputError(f"no page has type {type!r}; the types in this wiki: {', '.join(types)}")
            entries = [e for e in entries if e.type == type]
        return {"count": len(entries), "types": types,
                "pages": [{"page": e.name, "type": e.type, "title": e.title, "summary": e.summary}
                          for e in sorted(entries, key=lambda e: e.name)]}

    def history(self, page: str | None = None, source: str | None = None, kind: str | None = None,
                limit: int = 20) -> dict[str, Any]:
        from ..history.view import KINDS, operations, page_path

        if not 1 <= limit <= 200:
            raise ToolInputError("limit must be between 1 and 200")
        if kind is not None and kind not in KINDS:
            raise ToolInputError(f"unknown kind {kind!r}; one of: {', '.join(KINDS)}")
        repo = self.ctx.repo
        path = None
        if page:
            try:
                path = page_path(self.vault, self._catalog(), repo, page)
            except WikiwrightError as exc:
                raise ToolInputError(str(exc)) from None
        ops = operations(repo, path=path, source=source, kind=kind, limit=limit)
        return {"page": path, "operations": _plain([op.to_json() for op in ops])}

    def ask(self, question: str) -> dict[str, Any]:
        from ..query.query import ask

        if not question.strip():
            raise ToolInputError("ask needs a question")
        answer = ask(self.config, self.vault, self._catalog(), self.ctx.ledger, question, costs=lambda: self.ctx.costs)
        return _plain(answer.to_json())

    def status(self) -> dict[str, Any]:
        from .status import gather

        return _plain(gather(self.ctx))

    # -- writing (daily logs and raw/, never pages) ------------------------------------------

    def log(self, text: str, priority: str = "context", section: str | None = None) -> dict[str, Any]:
        """One observation for today's daily log; this connection's first one opens a session."""
        marker = priority if priority in MARKERS else PRIORITY_MARKER.get(priority)
        if marker is None:
            raise ToolInputError("priority is one of durable 🔴, context 🟡, ephemeral 🟢")
        flat = " ".join(text.split())
        if not flat:
            raise ToolInputError("log needs the observation's text")
        if len(flat) > MAX_LOG_CHARS:
            raise ToolInputError(f"an observation is at most {MAX_LOG_CHARS} characters (got {len(flat)})")
        if section is not None and not section.strip():
            section = None
        with self._lock:
            first = not self._logged
            result = append_session(self.vault.logs, f"- {marker} {flat}", section=section, label=self.label,
                                    counted=first, continue_label=not first)
            self._logged = True
        if result is None:
            raise ToolInputError("nothing to log")
        return {"logged": True, "path": self.vault.rel(result.path), "priority": MARKERS[marker],
                "section": canonical_section(section) if section else None,
                "new_block": result.new_session, "counts_as_session": first,
                "note": "consolidation folds it into the wiki's topic pages once its gate opens "
                        "(`wikiwright consolidate --check`)"}

    def ingest_text(self, text: str, title: str = "", wait_seconds: float = DEFAULT_INGEST_WAIT) -> dict[str, Any]:
        """Drop a note into raw/; ingest it here when no daemon runs; report the state reached."""
        from ..intake.drop import note_body, note_into_raw

        if not text.strip():
            raise ToolInputError("ingest_text needs the note's text")
        if not 0 <= wait_seconds <= 300:
            raise ToolInputError("wait_seconds must be between 0 and 300")
        size = len(note_body(title, text).encode("utf-8"))
        if size > self.config.ingest.max_source_bytes:
            raise ToolInputError(f"the note is {size} bytes, over ingest.max_source_bytes "
                                 f"({self.config.ingest.max_source_bytes})")
        with self._lock:
            target = note_into_raw(self.vault, title, text)
        rel = self.vault.rel(target)
        lock = VaultLock(self.vault, "mcp")
        try:
            lock.acquire()
        except WikiwrightError:
            return self._await_daemon(rel, lock.holder(), wait_seconds)
        try:
            return self._ingest_here(rel)
        finally:
            lock.release()

    def _source_state(self, rel: str, how: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        record = self.ctx.ledger.get_file(rel)
        state = record.state if record else "pending"
        out = {"path": rel, "state": state, "reason": record.reason if record else "",
               "page": (record.page or None) if record else None,
               "commit": (record.commit_sha or None) if record else None, "ingested_by": how}
        out.update(extra or {})
        return out

    def _await_daemon(self, rel: str, holder: str | None, wait_seconds: float) -> dict[str, Any]:
        """The daemon (or another writer) holds the vault: it ingests the note; wait a little."""
        deadline = time.monotonic() + wait_seconds
        while True:
            found = self._source_state(rel, "the running daemon")
            if found["state"] not in ("pending", "running") or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        if found["state"] in ("pending", "running"):
            found["reason"] = found["reason"] or f"queued: {holder or 'the daemon'} ingests it shortly"
        return found

    def _ingest_here(self, rel: str) -> dict[str, Any]:
        """No daemon: the one-shot ingest's door, pipeline and drain, in this process (the
        vault's lock is held by the caller, as `wikiwright ingest` holds it)."""
        from .oneshot import ingest_here

        outcomes = ingest_here(self.ctx, [self.vault.root / rel], lambda _result: None)
        found = self._source_state(rel, "this server (no daemon was running)")
        if found["state"] == "pending":
            found["reason"] = found["reason"] or "pending until the daemon runs (`wikiwright run`)"
        elif outcomes and outcomes[-1].detail and not found["reason"]:
            found["reason"] = outcomes[-1].detail
        return found


# --- the MCP server (the SDK is imported here only) -----------------------------------------

def build_server(tools: WikiTools) -> Any:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ToolError

    from .. import __version__

    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

    def guarded(call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        try:
            return call()
        except ToolInputError as exc:
            raise ToolError(str(exc)) from None
        except WikiwrightError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from None

    @server.tool()
    def search(query: str, limit: int = 10) -> dict[str, Any]:
        """Full-text search over the wiki's pages; each hit with its best matching line and claims."""
        return guarded(lambda: tools.search(query, limit))

    @server.tool()
    def read_page(page: str) -> dict[str, Any]:
        """A page's markdown (front matter, body, ## Claims). Name it as a person would:
        billing-api, [[Billing API]], wiki/sources/src-x.md."""
        return guarded(lambda: tools.read_page(page))

    @server.tool()
    def list_pages(type: str | None = None) -> dict[str, Any]:
        """The wiki's pages (name, type, title, summary); `type` keeps one kind (source, entity, topic...)."""
        return guarded(lambda: tools.list_pages(type))

    @server.tool()
    def history(page: str | None = None, source: str | None = None, kind: str | None = None,
                limit: int = 20) -> dict[str, Any]:
        """The operations that changed the wiki, newest first (one git commit each): for a page,
        a source, or an operation kind (ingest, consolidation, revert, ...)."""
        return guarded(lambda: tools.history(page, source, kind, limit))

    if tools.config.llm.enabled:
        @server.tool()
        def ask(question: str) -> dict[str, Any]:
            """Answer a question from the wiki with [[page]] citations (uses the configured model)."""
            return guarded(lambda: tools.ask(question))

    @server.tool()
    def log(text: str, priority: Priority = "context", section: str | None = None) -> dict[str, Any]:
        """Append an observation to today's daily log (secrets redacted). priority: durable 🔴
        (a rule or decision to keep), context 🟡 (kept if it recurs), ephemeral 🟢 (never kept).
        section: What Changed, What Worked, What Didn't, Patterns Learned or Decisions."""
        return guarded(lambda: tools.log(text, priority, section))

    @server.tool()
    def ingest_text(text: str, title: str = "", wait_seconds: float = DEFAULT_INGEST_WAIT) -> dict[str, Any]:
        """Drop a note into raw/ for the wiki to ingest (never a page write); returns the source's
        state: ingested (with its page and commit), pending, duplicate or quarantined (with why)."""
        return guarded(lambda: tools.ingest_text(text, title, wait_seconds))

    @server.tool()
    def status() -> dict[str, Any]:
        """The vault's state: daemon, queue, problems, daily logs waiting for consolidation, commits."""
        return guarded(tools.status)

    @server.resource("wiki://{+page}", name="page", mime_type="text/markdown",
                     description="A wiki page's markdown by name, e.g. wiki://billing-api or wiki://sources/src-x")
    def page_resource(page: str) -> str:
        try:
            return tools.read_text(page)[1]
        except WikiwrightError as exc:
            raise ResourceError(str(exc)) from None

    return server


def serve(ctx: VaultContext) -> int:
    """Run the server on stdin/stdout until the client closes it (on the process's context)."""
    server = build_server(WikiTools(ctx.config, ctx.vault, ctx=ctx))
    log.info("wikiwright mcp: serving %s over stdio", ctx.vault.root)
    server.run("stdio")
    return 0
