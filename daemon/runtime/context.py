"""The vault context: what one process (the daemon, a command, the MCP server, eval, a test)
opens on a vault, opened once and closed once.

It holds the Config and the Vault, and opens on first use, each at most once: the one
connection to state.db (the :class:`~wikiwright.intake.ledger.Ledger`; the review store and
notices are table groups on the same connection, one :meth:`atomic` for all), the catalogue,
the term index, the cost ledger and the repository. It builds the one
:class:`~wikiwright.door.Door` (running the one crash recovery) and the ingest services
(planner, pipeline, registrar: :meth:`ingest_services`), so that wiring is written once.

It lives in runtime/ because it joins rooms the lower ones may not know (door, ingest,
intake): a job of upkeep/, memory/ or history/ takes the parts it needs (the door, which
carries the ledger, catalogue and repository, and a cost ledger or term index), never the
context itself, and opens none of its own (tests/test_architecture.py: only this module makes
them, vault creation apart). Every part is imported where it is first used, so a read-only context
(``write=False``, what ``status`` opens) imports neither the door nor GitPython.

A context made with ``write=False`` refuses what writes: the door, the recovery and the
ingest services.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.config import Config, load_config
from ..core.errors import WikiwrightError
from ..core.vault import Vault

if TYPE_CHECKING:
    import sqlite3

    from ..door import Door
    from ..ingest.llm import CostLedger, LLMClient
    from ..ingest.pipeline import Pipeline, Planner
    from ..ingest.terms import TermIndex
    from ..intake.ledger import Ledger
    from ..intake.watch import Registrar
    from ..vcs.repo import GitRepo
    from ..wiki.catalog import Catalog
    from ..wiki.reviewfile import ReviewStore

log = logging.getLogger(__name__)


@dataclass
class IngestServices:
    """The ingest wiring of a process: planner → pipeline (through the context's door) and the
    registrar that puts files into the queue."""

    planner: Planner
    pipeline: Pipeline
    registrar: Registrar


class VaultContext:
    def __init__(self, config: Config, vault: Vault, *, write: bool = True) -> None:
        self.config = config
        self.vault = vault
        self.write = write
        self._parts: dict[str, Any] = {}
        self._opened: list[str] = []  # in order, closed in reverse
        self._lock = threading.RLock()  # first uses may race (the daemon's threads)
        self._opening: dict[str, threading.Lock] = {}
        self._closed = False

    @classmethod
    def find(cls, named: str | None, *, write: bool = True) -> VaultContext:
        """The context of the vault a command names (the one naming rule: ``--vault``, then
        ``WIKIWRIGHT_VAULT`` and the working folder, then the user config's default vault)."""
        import os

        from ..core.vault import find_vault

        vault = find_vault(named, os.environ, load_config(None).default_vault)
        return cls(load_config(vault.root), vault, write=write)

    # -- the parts, each opened on first use ---------------------------------------------

    def _part(self, name: str, make: Any) -> Any:
        part = self._parts.get(name)
        if part is not None:
            return part
        with self._lock:
            if self._closed:
                raise WikiwrightError("the vault context is closed")
            # One lock per part: opening the door (its recovery waits for the vault's write
            # lock) never holds up a thread asking for another part.
            opening = self._opening.setdefault(name, threading.Lock())
        with opening:
            part = self._parts.get(name)
            if part is None:
                part = make()
                with self._lock:
                    self._parts[name] = part
                    self._opened.append(name)
            return part

    def opened(self, name: str) -> bool:
        """Whether a part (``ledger``, ``catalog``, ``terms``, ``costs``, ``repo``, ``door``) is open."""
        return name in self._parts

    @property
    def ledger(self) -> Ledger:
        """The one connection to state.db: the queue and source ledger, notices, and (through
        :attr:`reviews`) the review store."""
        def make() -> Ledger:
            from ..core.sqlitedb import MEMORY
            from ..intake.ledger import Ledger

            if not self.write:
                # A command that writes nothing does not make a fresh state.db either: an empty
                # scratch one stands for a vault that has none yet.
                return Ledger(self.vault.db_path if self.vault.db_path.exists() else Path(MEMORY))
            from ..wiki.reviewfile import ReviewStore

            ledger = Ledger(self.vault.db_path)
            # The review tables brought to their version now, before any transaction of the
            # ledger is open (the door asks for the store inside one).
            with self._lock:
                self._parts["reviews"] = ReviewStore.on(ledger)
            return ledger

        return self._part("ledger", make)

    @property
    def reviews(self) -> ReviewStore:
        """The review store: a table group on the ledger's connection (its tables brought to
        their version on that connection, once)."""
        from ..wiki.reviewfile import ReviewStore

        ledger = self.ledger
        return self._part("reviews", lambda: ReviewStore.on(ledger))

    @contextmanager
    def atomic(self) -> Iterator[sqlite3.Connection]:
        """One transaction over every table group of state.db; nested, a savepoint."""
        with self.ledger.atomic() as db:
            yield db

    @property
    def catalog(self) -> Catalog:
        from ..wiki.catalog import Catalog

        return self._part("catalog", lambda: Catalog(self.vault))

    @property
    def terms(self) -> TermIndex:
        from ..ingest.terms import open_term_index

        return self._part("terms", lambda: open_term_index(self.vault.state))

    @property
    def costs(self) -> CostLedger:
        from ..ingest.llm import cost_ledger

        return self._part("costs", lambda: cost_ledger(self.vault))

    @property
    def repo(self) -> GitRepo:
        def make() -> GitRepo:
            from ..vcs.repo import GitRepo

            git = self.config.git
            # While git waits for a lock another process holds, status shows why.
            on_wait = (lambda message: self.ledger.set_notice("git", message)) if self.write else None
            return GitRepo(self.vault.root, git.author_name, git.author_email, git.lock_retry_seconds,
                           on_wait=on_wait)

        return self._part("repo", make)

    @property
    def door(self) -> Door:
        """The process's one door, on this context's parts; opening it runs the one recovery
        (an operation a crash cut is finished or undone) and brings the catalogue up to date."""
        self._writable("the door")

        def make() -> Door:
            from ..door import Door
            from ..ingest.notes import NOTES_SINK, StateNotes
            from ..ingest.terms import TERMS_SINK

            # The term index is opened only when an operation's delta needs it (door/deltas.py).
            notes = StateNotes(self.vault.state)
            return Door.open(self.config, self.vault, ledger=self.ledger, catalog=self.catalog, repo=self.repo,
                             sinks={TERMS_SINK: lambda: self.terms, NOTES_SINK: lambda: notes})

        return self._part("door", make)

    def _writable(self, what: str) -> None:
        if not self.write:
            raise WikiwrightError(f"{what} is not opened by a read-only command")

    # -- wiring written once ----------------------------------------------------------------

    def llm_client(self) -> LLMClient:
        """A model client recording its calls in this context's cost ledger (closing it leaves
        the ledger open)."""
        from ..ingest.llm import LLMClient

        return LLMClient(self.config, self.vault, self.ledger, costs=self.costs)

    def planner(self, *, check_model: bool = True) -> Planner:
        """The configured planner: the model's when ``[llm]`` names one, else the offline engine."""
        if self.config.llm.enabled:
            from ..ingest.llm_planner import ModelPlanner

            return ModelPlanner(self.config, self.vault, self.ledger, self.catalog, client=self.llm_client(),
                                check=check_model)
        from ..ingest.plan import OfflinePlanner

        return OfflinePlanner(self.config, self.vault, self.ledger, self.catalog, terms=self.terms)

    def ingest_services(self, *, planner: Planner | None = None, stop: threading.Event | None = None,
                        work_ready: threading.Event | None = None, check_model: bool = True) -> IngestServices:
        """Door → planner → pipeline, and the registrar, as every process that ingests wires them."""
        return wire_ingest(self.door, planner or self.planner(check_model=check_model), stop=stop,
                           work_ready=work_ready)

    # -- life --------------------------------------------------------------------------------

    def close(self) -> None:
        """Close every part opened, once, the door before what it stands on."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for name in reversed(self._opened):
                try:
                    self._parts[name].close()
                except Exception:  # one part failing to close must not keep the others open
                    log.exception("closing the vault context's %s failed", name)
            self._parts.clear()
            self._opened.clear()

    def __enter__(self) -> VaultContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wire_ingest(door: Door, planner: Planner, *, stop: threading.Event | None = None,
                work_ready: threading.Event | None = None) -> IngestServices:
    """The ingest wiring on a door, written once (:meth:`VaultContext.ingest_services`): the
    pipeline through the door with the process's planner, the registrar with the door's limits."""
    from ..ingest.pipeline import Pipeline
    from ..intake.watch import Registrar

    config, vault = door.config, door.vault
    pipeline = Pipeline(door, planner=planner, stop=stop)
    registrar = Registrar(vault, door.ledger, config.ingest.max_source_bytes, work_ready or threading.Event(),
                          allow_hard_links=config.ingest.allow_hard_links)
    return IngestServices(planner, pipeline, registrar)
