"""``wikiwright doctor``: check the vault's invariants and repair only what is safe.

The checks (shared/reference/reliability.md, invariants I1-I5):

- accounting: every file in ``raw/`` and ``logs/`` has exactly one recorded state
  (ingested, duplicate, quarantined, skipped or pending); lost = 0;
- commits: every ingested source names a commit reachable from a ref;
- sources in raw/: every ingested source is still there (removed: failed; changed: noted);
- temp files and locks: no leftover ``*.wikiwright-tmp-*`` files, no stale git lock;
- git: ``git fsck`` is clean (incremental: the objects added since the last verified commit
  are read and hash-checked; ``--full``: a whole ``git fsck``);
- pages: every page under ``wiki/`` is UTF-8 with front matter that parses (claims counted);
- person lines: no commit by the daemon removed a line a person wrote, unless the person asked
  for that operation (a ticked REVIEW.md item, revert, retract): those are listed, not failed.
  Incremental from the last verified commit (kept in state.db); ``--full`` walks it all.

Safe repairs: queue a file nobody recorded, re-queue an ingested source whose commit is
gone, remove the daemon's own temporary files once no write can be in flight. Everything
else is reported with what to do; nothing a person wrote is ever touched.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core.config import Config
from ..core.errors import SourceRejected
from ..core.fsutil import TEMP_MARKER, cas_mode
from ..core.locks import vault_write_lock
from ..core.opkinds import OpKind
from ..core.sqlitedb import Schema, migrate_on
from ..core.vault import Vault, VaultLock
from ..core.vaultpaths import is_log_file
from ..intake.ledger import Ledger
from ..intake.names import disk_name, disk_path, relative_name
from ..intake.safeopen import hash_inside
from ..vcs.gitlock import lock_files, stale_locks
from ..vcs.queries import all_commits, is_ancestor, merge_base, patch_log, tracked, verify_objects_since
from ..vcs.repo import GitRepo
from ..wiki.blockmerge import Markers, split_block
from ..wiki.index import INDEX_END, INDEX_START
from ..wiki.pages import FrontMatterError, parse_claims, parse_page

log = logging.getLogger(__name__)

# A temp file or git lock older than this cannot belong to a write still in progress.
STALE_SECONDS = 600.0
# Lines too short or pure markup to say who wrote them ("---", "```", "- ").
_MIN_LINE_CHARS = 3


@functools.cache
def _block_markers() -> dict[str, Markers]:
    """Files with a block built by code ("edit outside this block"): the block's lines are not
    a person's. Imported when first asked: the offline engine's module (overview.md's markers)
    loads wordfreq, a quarter of a second doctor's incremental run does not otherwise need."""
    from ..ingest.concepts import OVERVIEW_END, OVERVIEW_START

    return {"wiki/index.md": Markers(INDEX_START, INDEX_END),
            "wiki/overview.md": Markers(OVERVIEW_START, OVERVIEW_END)}

# REVIEW.md is the inbox between daemon and person: handled proposals leave it by design.
_PERSON_LINE_EXEMPT = ("REVIEW.md",)


@dataclass
class CheckResult:
    name: str
    ok: bool
    summary: str
    details: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)


@dataclass
class DoctorReport:
    vault: str
    daemon_running: bool
    checks: list[CheckResult]
    states: dict[str, int]
    lost: int
    unseen: int
    person_lines_removed: int

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = self.ok
        return data


# Operations a person asks for: removing the lines they name is what was asked.
REQUESTED_KINDS = frozenset({OpKind.REVERT.value, OpKind.RETRACT.value, OpKind.LINT_FIX.value,
                             OpKind.REVIEW_APPROVAL.value})

_STATE_SCHEMA = Schema("doctor", 1, """
CREATE TABLE IF NOT EXISTS doctor_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS doctor_person_lines (path TEXT NOT NULL, line TEXT NOT NULL, PRIMARY KEY (path, line));
CREATE TABLE IF NOT EXISTS doctor_findings (kind TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY (kind, text));
CREATE TABLE IF NOT EXISTS doctor_pages (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
                                         problem TEXT NOT NULL, claims INTEGER NOT NULL, uncited INTEGER NOT NULL);
""")


class DoctorState:
    """What earlier doctor runs verified, in the state database (state.db): the commit each
    history check reached, the lines people wrote that still stand there, and the findings.
    A table group on the ledger's connection (as the review store is): a doctor run inside a
    process adds no connection to state.db."""

    def __init__(self, ledger: Ledger) -> None:
        self._db, self._lock = ledger.shared_connection()
        self._ledger = ledger
        with self._lock:
            migrate_on(self._db, ledger.path, _STATE_SCHEMA)

    def get(self, key: str) -> str:
        with self._lock:
            row = self._db.execute("SELECT value FROM doctor_state WHERE key=?", (key,)).fetchone()
        return str(row[0]) if row else ""

    def put(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO doctor_state(key, value) VALUES (?,?)", (key, value))

    def reset_lines(self) -> None:
        with self._ledger.atomic() as db:
            db.execute("DELETE FROM doctor_person_lines")
            db.execute("DELETE FROM doctor_findings")
            db.execute("DELETE FROM doctor_state WHERE key='person_lines_head'")

    def lines(self) -> set[tuple[str, str]]:
        with self._lock:
            rows = self._db.execute("SELECT path, line FROM doctor_person_lines").fetchall()
        return {(str(p), str(line)) for p, line in rows}

    def save_lines(self, lines: set[tuple[str, str]], *, since_empty: bool) -> None:
        old = set() if since_empty else self.lines()
        with self._ledger.atomic() as db:
            db.executemany("DELETE FROM doctor_person_lines WHERE path=? AND line=?", sorted(old - lines))
            db.executemany("INSERT OR IGNORE INTO doctor_person_lines(path, line) VALUES (?,?)",
                           sorted(lines - old))

    def page_stats(self) -> dict[str, tuple[int, int, str, int, int]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT path, size, mtime_ns, problem, claims, uncited FROM doctor_pages").fetchall()
        return {str(r[0]): (int(r[1]), int(r[2]), str(r[3]), int(r[4]), int(r[5])) for r in rows}

    def save_page_stats(self, stats: dict[str, tuple[int, int, str, int, int]]) -> None:
        with self._ledger.atomic() as db:
            db.execute("DELETE FROM doctor_pages")
            db.executemany("INSERT INTO doctor_pages(path, size, mtime_ns, problem, claims, uncited) "
                           "VALUES (?,?,?,?,?,?)", [(k, *v) for k, v in stats.items()])

    def add_findings(self, kind: str, texts: list[str]) -> None:
        with self._lock:
            self._db.executemany("INSERT OR IGNORE INTO doctor_findings(kind, text) VALUES (?,?)",
                                 [(kind, t) for t in texts])

    def findings(self, kind: str) -> list[str]:
        with self._lock:
            rows = self._db.execute("SELECT text FROM doctor_findings WHERE kind=? ORDER BY rowid", (kind,)).fetchall()
        return [str(r[0]) for r in rows]


# -- temp files (also used by the daemon at start) -----------------------------------------

def _own_temp_candidates(vault: Vault) -> Iterator[Path]:
    """Temporary files the daemon may have left: never under raw/, logs/ or .git/."""
    with os.scandir(vault.root) as entries:
        for entry in entries:
            if entry.is_file(follow_symlinks=False) and TEMP_MARKER in entry.name:
                yield Path(entry.path)
    for folder in (vault.wiki, vault.state):
        for dirpath, dirnames, filenames in os.walk(folder):
            base = Path(dirpath)
            if base == vault.state:
                dirnames[:] = [d for d in dirnames if d != "merge"]
                for name in filenames:
                    if name.startswith("commit-msg-"):
                        yield base / name
            for name in filenames:
                if TEMP_MARKER in name:
                    yield base / name
    merge = vault.state / "merge"
    if merge.is_dir():
        yield from merge.iterdir()


def sweep_own_temp_files(vault: Vault, min_age: float = 0.0) -> list[str]:
    """Remove the daemon's leftover temp files older than ``min_age`` seconds.

    Called with ``min_age=0`` only by a process that holds the vault lock: no other writer
    exists then, so every such file is debris of a process that died mid-write.
    """
    removed = []
    now = time.time()
    for path in _own_temp_candidates(vault):
        try:
            if now - path.lstat().st_mtime < min_age:
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            log.warning("cannot remove %s: %s", path, exc)
            continue
        removed.append(path.relative_to(vault.root).as_posix())
    return removed


# -- the checks ------------------------------------------------------------------------------

class Doctor:
    """The checks on the process's ledger and repository (its vault context's: a doctor run
    in the daemon or a command opens no connection of its own)."""

    def __init__(
        self, config: Config, vault: Vault, ledger: Ledger, repo: GitRepo, *, repair: bool = True,
        grace_seconds: float | None = None, full: bool = False,
    ) -> None:
        self.config = config
        self.vault = vault
        self.ledger = ledger
        self.repair = repair
        self.full = full
        # A running daemon has this long to record a new file: its next rescan at the latest.
        self.grace = (config.watch.rescan_minutes * 60 + config.watch.debounce_seconds + 60
                      if grace_seconds is None else grace_seconds)
        self.repo = repo
        self._lost = self._unseen = self._no_commit = self._removed_lines = 0

    def run(self) -> DoctorReport:
        holder = VaultLock(self.vault).holder()
        running = holder is not None
        ledger = self.ledger
        self._state = DoctorState(ledger)
        checks = [
            self._accounting(ledger, running),
            self._commits(ledger),
            self._sources_kept(ledger),
            self._temp_files(running),
            self._locks(),
            self._fsck(),
            self._pages(),
            self._person_lines(),
            CheckResult("writes", True, f"compare-and-swap by {cas_mode(self.vault.wiki)}"),  # DESIGN.md rule 4
        ]
        states = ledger.counts()
        return DoctorReport(
            vault=str(self.vault.root), daemon_running=running, checks=checks, states=states,
            lost=self._lost + self._no_commit, unseen=self._unseen, person_lines_removed=self._removed_lines,
        )

    # I1 ------------------------------------------------------------------------------------

    def _walk_inputs(self) -> Iterator[tuple[str, Path, bool]]:
        """(kind, path, in_hidden_folder) for every file in raw/ and logs/, as rescans see them."""
        for kind, folder in (("raw", self.vault.raw), ("log", self.vault.logs)):
            if not folder.is_dir():
                continue
            for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
                base = Path(dirpath)
                hidden = any(part.startswith(".") for part in base.relative_to(folder).parts)
                links = [d for d in dirnames if (base / d).is_symlink()]
                for name in [*filenames, *links]:
                    yield kind, base / name, hidden

    def _accounting(self, ledger: Ledger, running: bool) -> CheckResult:
        by_path = {record.path: record for record in ledger.files()}
        states: Counter[str] = Counter()
        unseen: list[tuple[str, Path]] = []
        lost: list[tuple[str, Path]] = []
        now = time.time()
        for kind, path, hidden in self._walk_inputs():
            rel = relative_name(self.vault.root, path)  # the ledger's name: any bytes, one printable line
            if hidden:
                states["skipped (in a hidden folder)"] += 1
                continue
            record = by_path.get(rel)
            current: tuple[int, int] | None
            try:
                st = path.lstat()
                current = (st.st_size, st.st_mtime_ns)
            except FileNotFoundError:
                continue
            if record is not None and (
                record.state == "skipped"
                or (record.size, record.mtime_ns) == current
                or self._same_content(path, record.sha256)
            ):
                states[record.state] += 1
                continue
            # No record, or the file changed since it was recorded (a new version not yet seen).
            recent = now - max(st.st_mtime, st.st_ctime) < self.grace
            (unseen if (recent or not running) else lost).append((kind, path))
        self._unseen, self._lost = len(unseen), len(lost)
        details = [f"lost (never recorded, daemon running): {self._show(p)}" for _, p in lost]
        details += [f"not yet seen: {self._show(p)}" for _, p in unseen[:20]]
        repaired = []
        if lost and self.repair:
            repaired = self._register([p for _, p in lost], ledger)
        summary = ", ".join(f"{n} {state}" for state, n in sorted(states.items())) or "no files"
        if unseen:
            summary += f"; {len(unseen)} not yet seen" + ("" if running else " (the daemon is not running)")
        summary += f"; lost {len(lost)}"
        return CheckResult("accounting", not lost, summary, details, repaired)

    def _same_content(self, path: Path, sha: str) -> bool:
        if not sha:
            return False
        top = self.vault.raw if path.is_relative_to(self.vault.raw) else self.vault.logs
        try:
            # The same no-follow walk as the watcher: a link on the path is never read through.
            return hash_inside(top, path, allow_hard_links=True)[0] == sha
        except (OSError, SourceRejected):
            return False

    def _register(self, paths: list[Path], ledger: Ledger) -> list[str]:
        from ..intake.watch import Registrar

        registrar = Registrar(self.vault, ledger, self.config.ingest.max_source_bytes, threading.Event(),
                              allow_hard_links=self.config.ingest.allow_hard_links)
        done = []
        for path in paths:
            state = registrar.register(path)
            if state:
                done.append(f"recorded {self._show(path)} as {state}")
        return done

    def _reachable(self) -> set[str]:
        return all_commits(self.repo)

    def _commits(self, ledger: Ledger) -> CheckResult:
        reachable = self._reachable()
        ingested = ledger.files("ingested")
        missing = [r for r in ingested if not r.commit_sha or r.commit_sha not in reachable]
        self._no_commit = len(missing)
        details = [
            f"{r.path}: ingested, but its commit {r.commit_sha[:10] or '(none)'} is not in the history" for r in missing
        ]
        repaired = []
        if missing and self.repair:
            for r in missing:
                ledger.requeue(r.path, "re-queued by doctor: its commit is no longer in the history")
                repaired.append(f"re-queued {r.path}")
        summary = f"{len(ingested) - len(missing)} of {len(ingested)} ingested source(s) have a reachable commit"
        return CheckResult("commits", not missing, summary, details, repaired)

    def _sources_kept(self, ledger: Ledger) -> CheckResult:
        """Every ingested source is still in raw/ with the bytes that were ingested: its pages
        cite it. A removed one fails the check; a changed one is noted (its new version is a
        new source, ingested in its turn)."""
        live = {s.sha256 for s in ledger.sources() if s.state == "ingested"}
        in_git = set(tracked(self.repo, "raw")) if self.vault.raw.is_dir() else set()
        removed, changed = [], []
        for record in ledger.files("ingested", kind="raw"):
            if record.sha256 not in live:
                continue
            path = disk_path(self.vault.root, record.path)
            if not path.exists():
                how = (f"restore it with `git checkout HEAD -- {disk_name(record.path)}`"
                       if disk_name(record.path) in in_git else "it was not in git (binary or large); its sha256 "
                       f"{record.sha256[:16]} is on [[{record.page.rsplit('/', 1)[-1]}]]")
                removed.append(f"{record.path} was removed after its ingest ({record.commit_sha[:10]}); {how}")
            elif not self._same_content(path, record.sha256):
                changed.append(f"{record.path} changed after its ingest ({record.commit_sha[:10]}); the new version "
                               "is ingested as a new source")
        summary = (f"{len(removed)} ingested source(s) removed from raw/" if removed
                   else "every ingested source is still in raw/")
        if changed:
            summary += f"; {len(changed)} changed since"
        return CheckResult("sources in raw/", not removed, summary, [*removed, *changed][:40])

    # I5 ------------------------------------------------------------------------------------

    def _temp_files(self, running: bool) -> CheckResult:
        # With the daemon running, a young temp file may be a write in progress, not debris.
        min_age = STALE_SECONDS if running else 0.0
        now = time.time()
        debris = []
        for path in _own_temp_candidates(self.vault):
            try:
                if now - path.lstat().st_mtime >= min_age:
                    debris.append(path)
            except FileNotFoundError:
                continue
        repaired: list[str] = []
        if debris and self.repair:
            repaired = [f"removed {rel}" for rel in sweep_own_temp_files(self.vault, min_age)]
        details = [f"leftover temporary file: {self._show(p)}" for p in debris]
        summary = f"{len(debris)} leftover, {len(repaired)} removed" if debris else "none left over"
        return CheckResult("temp files", not debris, summary, details, repaired)

    def _locks(self) -> CheckResult:
        now = time.time()
        stale = []
        candidates = lock_files(self.vault.root)
        # The daemon's rule (vcs/gitlock.py): a lock while no git process runs in the vault is stale now.
        unheld = set(stale_locks(self.vault.root, self.vault.state)) if candidates else set()
        for path in candidates:
            try:
                age = now - path.stat().st_mtime
            except FileNotFoundError:
                continue
            if path in unheld:
                stale.append(f"{path.relative_to(self.vault.root).as_posix()} is held by no git process (a killed "
                             "git command left it); the daemon removes it when it starts")
            elif age >= STALE_SECONDS:
                stale.append(f"{path.relative_to(self.vault.root).as_posix()} is {age / 60:.0f} min old; if no git "
                             "command is running in the vault, remove it")
        summary = f"{len(stale)} stale git lock(s)" if stale else f"no stale locks ({len(candidates)} held now)"
        return CheckResult("locks", not stale, summary, stale)

    def _fsck(self) -> CheckResult:
        # Under the vault's write lock (the daemon's housekeeping gc takes it too), after any
        # gc another process started: fsck never walks loose objects a gc is pruning.
        head = self.repo.head() or ""
        since = "" if self.full else self._marker("fsck_head", head)
        with vault_write_lock(self.vault.state):
            if since:
                ok, out = self._verify_new_objects(since)
            else:
                ok, out = self.repo.fsck()
        lines = [line for line in out.splitlines() if line.strip() and not line.startswith("dangling ")]
        problem = self.repo.problem()
        details = lines[:20]
        if since:
            summary = (f"objects added since {since[:10]} verified (hash and links; `doctor --full` runs a whole "
                       "git fsck)" if ok else "verifying the objects added since the last check failed")
        else:
            summary = "clean" if ok else "git fsck reported errors"
        if problem:
            summary += f"; commits paused: {problem}"
        if ok and head:
            self._state.put("fsck_head", head)
        return CheckResult("git fsck", ok, summary, details)

    def _verify_new_objects(self, since: str) -> tuple[bool, str]:
        """Every object reachable from a ref but not from ``since`` is read and its hash and
        format checked (``rev-list --verify-objects``); a missing one fails. Older objects were
        checked by an earlier run (the whole store again with ``--full``)."""
        self.repo.wait_for_gc()
        return verify_objects_since(self.repo, since)

    def _marker(self, key: str, head: str) -> str:
        """The commit an earlier run verified up to, if it is still in this history."""
        since = self._state.get(key)
        if not since or not head:
            return ""
        if since == head:
            return since
        if not is_ancestor(self.repo, since, head):
            return ""  # history was rewritten under it: start again from the beginning
        return since

    # pages -----------------------------------------------------------------------------------

    def _pages(self) -> CheckResult:
        """Every page parses. A page whose size and mtime are those an earlier run checked is
        not read again (``--full`` reads them all)."""
        bad = []
        count = claims = uncited = 0
        known = {} if self.full else self._state.page_stats()
        seen: dict[str, tuple[int, int, str, int, int]] = {}
        for dirpath, dirnames, filenames in os.walk(self.vault.wiki):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in filenames:
                if not name.endswith(".md") or TEMP_MARKER in name or name.startswith("."):
                    continue
                path = Path(dirpath) / name
                count += 1
                rel = path.relative_to(self.vault.root).as_posix()
                try:
                    st = path.stat()
                except OSError as exc:
                    bad.append(f"{self._show(path)}: unreadable ({exc.strerror})")
                    continue
                cached = known.get(rel)
                if cached is not None and cached[:2] == (st.st_size, st.st_mtime_ns):
                    problem, found, loose = cached[2], cached[3], cached[4]
                else:
                    problem, found, loose = self._check_page(path)
                seen[rel] = (st.st_size, st.st_mtime_ns, problem, found, loose)
                if problem:
                    bad.append(f"{self._show(path)}: {problem}")
                claims += found
                uncited += loose
        self._state.save_page_stats(seen)
        summary = f"{count - len(bad)} of {count} page(s) parse; {claims} claim(s), {uncited} uncited claim line(s)"
        return CheckResult("pages", not bad, summary, bad)

    @staticmethod
    def _check_page(path: Path) -> tuple[str, int, int]:
        """(problem or '', claims, uncited claim lines) of one page."""
        try:
            data = path.read_bytes()
            if not data.strip():
                return "empty", 0, 0
            page = parse_page(data.decode("utf-8"))
            found, loose = parse_claims(page.body)
            return "", len(found), len(loose)
        except UnicodeDecodeError:
            return "not valid UTF-8", 0, 0
        except FrontMatterError as exc:
            return str(exc), 0, 0
        except OSError as exc:
            return f"unreadable ({exc.strerror})", 0, 0

    # I3 ------------------------------------------------------------------------------------

    def _person_lines(self) -> CheckResult:
        """Walk history oldest first; a daemon commit may not remove a line a person added,
        unless the person asked for that operation (a ticked REVIEW.md item, revert, retract):
        those removals are listed with the operation, and do not fail the check.

        Incremental: the lines people wrote that still stand, and what earlier runs found, are
        kept in the state database with the commit they were verified up to; only newer commits
        are walked (``--full`` walks everything again)."""
        name, email = self.config.git.author_name, self.config.git.author_email
        head = self.repo.head() or ""
        since = "" if self.full else self._marker("person_lines_head", head)
        if not since:
            self._state.reset_lines()
        if since == head and head:
            out = ""
        else:
            span = [f"{since}..HEAD"] if since else []
            out = patch_log(self.repo, span, "%x00%H%x1f%an%x1f%ae%x1f%P%x1f%(trailers:key=Wikiwright-Operation,"
                                             "valueonly,separator=)%x1f%s")
        person = self._state.lines()
        violations: list[str] = []
        requested: list[str] = []
        commits = 0
        for chunk in out.split("\x00")[1:]:
            header, _, diff = chunk.partition("\n")
            sha, author, author_email, parents, kind, subject = [*header.split("\x1f"), "", "", "", "", ""][:6]
            commits += 1
            is_daemon = author == name and author_email == email
            added, removed = _diff_lines(diff)
            if not is_daemon:
                person.difference_update(removed)
                person.update(added)
                continue
            suspects = [
                (path, line) for path, line in removed if (path, line) in person and path not in _PERSON_LINE_EXEMPT
            ]
            if not suspects:
                person.difference_update(removed)
                continue
            texts: dict[str, set[str]] = {}
            # log.md's oldest entries move to an archive (wiki/log/…) in the same commit: moved, not removed.
            archived = {line for path, line in added if is_log_file(path)}
            for path, line in suspects:
                if is_log_file(path) and line in archived:
                    continue
                if path not in texts:
                    shown = self.repo.show(sha, path)
                    texts[path] = {x.strip() for x in shown.splitlines()} if shown is not None else set()
                if line in texts[path] or self._merge_explains(sha, parents.split(), path, line) \
                        or self._in_generated_block(parents.split()[:1], path, line):
                    continue
                where = f"{sha[:10]} ({kind.strip() or 'commit'}: {subject[:60]}) removed from {path}: {line[:120]!r}"
                (requested if kind.strip() in REQUESTED_KINDS else violations).append(where)
            person.difference_update(removed)
        self._state.save_lines(person, since_empty=not since)
        self._state.add_findings("violation", violations)
        self._state.add_findings("requested", requested)
        if head:
            self._state.put("person_lines_head", head)
        violations = self._state.findings("violation")
        requested = self._state.findings("requested")
        self._removed_lines = len(violations)
        walked = f"{commits} new commit(s) walked since {since[:10]}" if since else f"{commits} commit(s) walked"
        summary = (f"{walked}; no daemon commit removed a person's line unasked" if not violations
                   else f"{len(violations)} line(s) a person wrote were removed by daemon commits nobody asked for")
        if requested:
            summary += (f"; {len(requested)} removed by operations a person asked for (ticked in REVIEW.md, "
                        "revert, retract), listed")
        details = [*violations[:50], *[f"asked for: {r}" for r in requested[:50]]]
        return CheckResult("person lines", not violations, summary, details)

    def _in_generated_block(self, parents: list[str], path: str, line: str) -> bool:
        """A line inside index.md's or overview.md's generated block (before this commit) is the
        code's, whoever committed the file last (a person's commit can carry a block a sync round
        had written): rebuilding the block removes no person's line."""
        markers = _block_markers().get(path)
        if markers is None or not parents:
            return False
        block = split_block(self.repo.show(parents[0], path) or "", markers).block
        return line in {row.strip() for row in block.splitlines()}

    def _merge_explains(self, sha: str, parents: list[str], path: str, line: str) -> bool:
        """A sync merge (two parents) may drop a line the other machine's history removed (it is
        in the merge base, not in the other parent: that removal is judged in its own commit), or
        one it quotes in REVIEW.md for the person (lines both machines changed)."""
        if len(parents) < 2:
            return False
        review = self.repo.show(sha, "REVIEW.md") or ""
        if line in review:
            return True
        base = merge_base(self.repo, parents[0], parents[1])
        if base is None:
            return False
        in_base = {x.strip() for x in (self.repo.show(base, path) or "").splitlines()}
        in_other = {x.strip() for x in (self.repo.show(parents[1], path) or "").splitlines()}
        return line in in_base and line not in in_other

    def _show(self, path: Path) -> str:
        try:
            rel = path.relative_to(self.vault.root).as_posix()
        except ValueError:
            rel = str(path)
        return repr(rel)[1:-1]  # control characters in names stay visible and on one line


def _diff_lines(diff: str) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(added, removed) as (path, stripped line) from a ``-U0`` patch."""
    added: set[tuple[str, str]] = set()
    removed: set[tuple[str, str]] = set()
    path = ""
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            path = ""
            continue
        if line.startswith("+++ "):
            target = line[4:]
            if target.startswith("b/"):
                path = target[2:]
            continue
        if line.startswith("--- "):
            source = line[4:]
            if source.startswith("a/"):
                path = source[2:]
            continue
        if not path or line.startswith(("@@", "\\")):
            continue
        text = line[1:].strip()
        if len(text) < _MIN_LINE_CHARS or not any(ch.isalnum() for ch in text):
            continue
        if line.startswith("+"):
            added.add((path, text))
        elif line.startswith("-"):
            removed.add((path, text))
    return added, removed


def run_doctor(config: Config, vault: Vault, ledger: Ledger, repo: GitRepo, *, repair: bool = True,
               full: bool = False) -> DoctorReport:
    return Doctor(config, vault, ledger, repo, repair=repair, full=full).run()


def format_report(report: DoctorReport) -> str:
    lines = [f"wikiwright doctor — {report.vault}"]
    lines.append(f"daemon: {'running' if report.daemon_running else 'not running'}")
    for check in report.checks:
        mark = "ok  " if check.ok else "FAIL"
        lines.append(f"[{mark}] {check.name}: {check.summary}")
        lines += [f"         {detail}" for detail in check.details[:10]]
        if len(check.details) > 10:
            lines.append(f"         … and {len(check.details) - 10} more")
        lines += [f"         repaired: {item}" for item in check.repaired[:10]]
        if len(check.repaired) > 10:
            lines.append(f"         … and {len(check.repaired) - 10} more repairs")
    pending = report.states.get("pending", 0) + report.states.get("running", 0)
    lines.append(
        f"sources lost: {report.lost}; pending: {pending}; person lines removed: {report.person_lines_removed}"
    )
    lines.append("all invariants hold" if report.ok else "some invariants FAILED (see above); exit status 1")
    return "\n".join(lines)


