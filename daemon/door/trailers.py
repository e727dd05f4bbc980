"""Trailers from the shared history are claims, checked against the commits they sit on.

Anyone who can push to the shared remote can write any commit message. An ingest trailer
read from history (another machine's, or this vault's history re-read into a fresh ledger)
is recorded in the ledger only when its commit bears it out:

- ``Wikiwright-Source: raw/x sha256:H`` — ``raw/x`` is a plain path under raw/ and the
  commit's tree holds a regular file there whose bytes hash to ``H`` (the blob is hashed, so a
  trailer naming bytes that are not in the commit, such as a file this machine holds, is no
  ingest of them);
- ``Wikiwright-Pages`` — names a source page (``wiki/sources/<name>.md``, never index.md,
  log.md or another generated or special file) that the commit itself adds or changes; that
  page is the one the source is bound to.

A ``Wikiwright-Duplicate: <commit> <sha256>`` trailer (a sync merge that undid an ingest of
bytes another machine ingested first) is honoured only when ``<commit>`` is a verified ingest
of those bytes and another verified ingest of them is in history to stand instead.

What is refused is logged, kept for ``status`` (a notice) and REVIEW.md ("refused from the
remote: …"); this machine then treats the bytes as never ingested and ingests its own copy.
A source another machine kept out of git (binary, or over ``git.commit_raw_max_bytes``) cannot
be checked this way: it is not recorded either, and only shown when this machine holds the
same bytes (a machine that has them ingests them itself).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from ..core.opkinds import OpKind
from ..core.vaultpaths import path_problem
from ..intake.ledger import Ledger
from ..vcs.objects import CommitMessage, ObjectReader, changed_files, tree_entry
from ..vcs.queries import rev_list, unpublished_commits
from ..vcs.repo import GitRepo
from .synctree import record_refusals

log = logging.getLogger(__name__)

PENDING_KEY = "sync.trailers-refused"  # refusals not yet in REVIEW.md (JSON list), kept across a crash
NOTICE_KEY = "sync-refused"
# A committed source is at most git.commit_raw_max_bytes on the machine that committed it; a
# machine may set that higher, so the bound here is generous: what is bigger is not hashed.
MAX_SOURCE_BLOB = 64 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")
_SHA1 = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True)
class VerifiedIngest:
    commit: str
    path: str
    sha256: str
    page: str  # page name under wiki/, e.g. sources/src-x
    title: str


@dataclass(frozen=True)
class Refusal:
    commit: str
    what: str
    why: str
    shown: bool = True  # False: benign and unverifiable (a source kept out of git), logged only
    sha256: str = ""  # the bytes the claim names, when it names some
    path: str = ""  # the raw/ path it names

    def line(self) -> str:
        return f"refused from the remote: {self.what} in commit {self.commit[:10]} ({self.why})"


def shown_text(text: str, limit: int = 120) -> str:
    """Text from someone else's commit, safe inside backticks on one line of REVIEW.md or status."""
    clean = "".join(c if c.isprintable() and c not in "`[]<>|" else "?" for c in text)
    return clean if len(clean) <= limit else clean[:limit] + "…"


def plain_path(path: str, top: str) -> bool:
    """A path under ``top``/ that passes the vault's one path rule (core/vaultpaths.py: no
    ``..``, ``.``, empty or hidden parts, no ``.git`` in any case, no control characters or
    backslashes, not over-long)."""
    parts = path.split("/")
    return len(parts) >= 2 and parts[0] == top and not path_problem(path)


def _source_page(path: str) -> str | None:
    """``wiki/sources/<name>.md`` -> ``sources/<name>``; None for anything else."""
    if not plain_path(path, "wiki") or not path.endswith(".md"):
        return None
    parts = path.split("/")
    if len(parts) != 3 or parts[1] != "sources" or len(parts[2]) <= 3:
        return None
    return path[len("wiki/"):-len(".md")]


def _commits(repo: GitRepo, revs: list[str], grep: str) -> list[str]:
    """The commits of ``revs`` whose message holds ``grep`` (none for an unknown revision)."""
    return [sha for sha in rev_list(repo, *revs, grep=grep) if _SHA1.fullmatch(sha)]


def _messages(repo: GitRepo, shas: Iterable[str]) -> list[CommitMessage]:
    with ObjectReader(repo) as reader:
        return [m for m in (reader.commit(sha) for sha in shas) if m is not None]


def read_ingests(repo: GitRepo, revs: list[str]) -> tuple[list[VerifiedIngest], list[Refusal]]:
    """The ingests in ``git rev-list revs`` (newest first) whose trailers their commits bear out."""
    messages = [m for m in _messages(repo, _commits(repo, revs, f"Wikiwright-Operation: {OpKind.INGEST.value}"))
                if m.trailers.get("Wikiwright-Operation") == OpKind.INGEST.value]
    return verify_ingests(repo, messages)


def recovered_ingest(repo: GitRepo, path: str, sha256: str) -> str | None:
    """The commit that ingested ``path`` with bytes ``sha256`` (crash recovery: the process died
    after that commit and before the ledger heard of it), newest first.

    The same check as any trailer read from history: a commit whose trailers its tree bears
    out. A source kept out of git cannot be checked against its commit; such a claim is taken
    only from a commit no remote-tracking branch holds (made here, not pulled in by sync)."""
    if not _SHA256.fullmatch(sha256) or not repo.head():
        return None
    messages = [m for m in _messages(repo, _commits(repo, ["HEAD"], f"sha256:{sha256}"))
                if m.trailers.get("Wikiwright-Operation") == OpKind.INGEST.value]
    verified, refused = verify_ingests(repo, messages)
    unverifiable = {r.commit for r in refused if not r.shown and r.sha256 == sha256 and r.path == path}
    local = unpublished_commits(repo) if unverifiable else set()
    for message in messages:  # newest first
        if any(v.commit == message.sha and v.sha256 == sha256 and v.path == path for v in verified):
            return message.sha
        if message.sha in unverifiable and message.sha in local:
            return message.sha
    return None


def verify_ingests(repo: GitRepo, messages: list[CommitMessage]) -> tuple[list[VerifiedIngest], list[Refusal]]:
    changes = changed_files(repo, [m.sha for m in messages if "Wikiwright-Source" in m.trailers])
    verified: list[VerifiedIngest] = []
    refused: list[Refusal] = []
    with ObjectReader(repo) as reader:
        for message in messages:
            source = message.trailers.get("Wikiwright-Source", "")
            path, _, sha = source.rpartition(" sha256:")
            path, sha = path.strip(), sha.strip()
            if not path or not sha:
                continue  # "raw/x (reverted)", "(retracted)": not an ingest claim
            what = f"the ingest claim for `{shown_text(path)}`"
            if not _SHA256.fullmatch(sha):
                refused.append(Refusal(message.sha, what, "its sha256 is not one"))
                continue
            what = f"the ingest claim for `{shown_text(path)}` (sha256 {sha[:12]})"
            if not plain_path(path, "raw"):
                refused.append(Refusal(message.sha, what, "the path is not a plain path under raw/", sha256=sha))
                continue
            changed = changes.get(message.sha, {})
            entry = changed.get(path) or tree_entry(repo, message.sha, path)
            if entry is None:
                refused.append(Refusal(message.sha, what, "its commit does not hold the source's bytes", shown=False,
                                       sha256=sha, path=path))
                continue
            mode, blob = entry
            hashed = reader.blob_sha256(blob, MAX_SOURCE_BLOB) if mode in ("100644", "100755") else None
            if hashed is None:
                refused.append(Refusal(message.sha, what, "the file at that path in its commit is not a regular "
                                                          "file of a source's size", sha256=sha, path=path))
                continue
            if hashed[0] != sha:
                refused.append(Refusal(message.sha, what, f"the bytes at that path in its commit hash to "
                                                          f"{hashed[0][:12]}, not to the sha256 it names",
                                       sha256=sha, path=path))
                continue
            named = [p.strip() for p in message.trailers.get("Wikiwright-Pages", "").split(",") if p.strip()]
            page = next((name for p in named if (name := _source_page(p)) is not None
                         and changed.get(p, ("", ""))[0] in ("100644", "100755")), None)
            if page is None:
                refused.append(Refusal(message.sha, what, "it names no source page (wiki/sources/…) that its commit "
                                                          "adds or changes", sha256=sha, path=path))
                continue
            title = "".join(c for c in message.subject.removeprefix("ingest: ") if c.isprintable())[:200]
            verified.append(VerifiedIngest(message.sha, path, sha, page, title))
    for refusal in refused:
        (log.warning if refusal.shown else log.info)("%s", refusal.line())
    return verified, refused


def read_duplicates(repo: GitRepo, revs: list[str], history: str, known: dict[str, str] | None = None
                    ) -> tuple[set[str], list[Refusal]]:
    """Ingest commits the sync merges in ``revs`` undid as duplicates, honoured ones only.

    ``(commit, sha256)`` is honoured when ``commit`` is a verified ingest of ``sha256`` and
    another verified ingest of it is in ``history``'s history (or ``known``: sha256 -> the
    commit this ledger already records for it).
    """
    syncs = [m for m in _messages(repo, _commits(repo, revs, "Wikiwright-Duplicate:"))
             if m.trailers.get("Wikiwright-Operation") == OpKind.SYNC.value and m.trailers.get("Wikiwright-Duplicate")]
    claims: list[tuple[str, str, str]] = []
    for message in syncs:
        for item in message.trailers["Wikiwright-Duplicate"].split(","):
            fields = item.split()
            if fields:
                claims.append((message.sha, fields[0], fields[1] if len(fields) > 1 else ""))
    undone: set[str] = set()
    refused: list[Refusal] = []
    cache: dict[str, list[VerifiedIngest]] = {}
    for sync_commit, commit, sha in claims:
        what = f"the duplicate claim for ingest `{shown_text(commit, 40)}`"
        if not _SHA256.fullmatch(sha) or not _SHA1.fullmatch(commit):
            refused.append(Refusal(sync_commit, what, "it does not name a commit and a sha256"))
            continue
        if sha not in cache:
            found = _commits(repo, [history], f"sha256:{sha}")
            messages = [m for m in _messages(repo, found)
                        if m.trailers.get("Wikiwright-Operation") == OpKind.INGEST.value]
            cache[sha] = [v for v in verify_ingests(repo, messages)[0] if v.sha256 == sha]
        ingests = cache[sha]
        if not any(v.commit == commit for v in ingests):
            refused.append(Refusal(sync_commit, what, "that commit is no verified ingest of those bytes"))
            continue
        others = [v for v in ingests if v.commit != commit]
        if not others and (known or {}).get(sha, commit) == commit:
            refused.append(Refusal(sync_commit, what, "no other ingest of those bytes is in history to stand "
                                                      "instead"))
            continue
        undone.add(commit)
    for refusal in refused:
        log.warning("%s", refusal.line())
    return undone, refused


# -- what a person sees -------------------------------------------------------------------------

def keep_refusals(ledger: Ledger, refusals: Iterable[Refusal], *, holds: Iterable[str] = ()) -> list[Refusal]:
    """Record refusals for status (a notice) and for REVIEW.md (kept until written there).

    Unverifiable claims (``shown`` False) are kept only where they name bytes or a raw/ path
    this machine holds (``holds``: sha256s and paths in its ledger): there the refusal changes
    what this machine does.
    """
    held = set(holds)
    kept = []
    for refusal in refusals:
        if not (refusal.shown or refusal.sha256 in held or refusal.path in held):
            continue
        recorded = ledger.source(refusal.sha256) if refusal.sha256 else None
        if recorded is not None and recorded.commit_sha == refusal.commit:
            continue  # this ledger's own record of that ingest (this machine made it): nothing refused
        kept.append(refusal)
    if not kept:
        return []
    try:
        pending = [Refusal(**item) for item in json.loads(ledger.get_kv(PENDING_KEY, "[]"))]
    except (ValueError, TypeError):
        pending = []
    seen = {(r.commit, r.what) for r in pending}
    new = [r for r in kept if (r.commit, r.what) not in seen]
    if new:
        ledger.set_kv(PENDING_KEY, json.dumps([asdict(r) for r in [*pending, *new]]))
        record_refusals(ledger, ((f"{r.what} in commit {r.commit[:10]}", r.why, r.commit) for r in new))
        total = len(pending) + len(new)
        ledger.set_notice(NOTICE_KEY, f"{new[-1].line()}" + (f" — and {total - 1} more, see REVIEW.md"
                                                              if total > 1 else " — see REVIEW.md"))
    return new


def pending_refusals(ledger: Ledger) -> list[Refusal]:
    try:
        return [Refusal(**item) for item in json.loads(ledger.get_kv(PENDING_KEY, "[]"))]
    except (ValueError, TypeError):
        return []
