"""One ingest per source across machines: a machine with a remote claims a source's bytes first.

Two daemons sharing a remote may both be handed the same file (a person drops it on both, a
folder synced by another tool). Without a claim each ingests it: two model calls paid, two
ingest commits, one later marked a duplicate by sync. So before a source is planned (the step
that spends a model call), this machine pushes a claim for its sha256 to the remote:

- a claim is a parentless commit of the empty tree on ``refs/wikiwright/sources/<sha256>``
  whose subject names the bytes and this machine's token (a random id kept in this vault's
  state database, never synced). A new ref is created by the first push; another machine's
  push of its own commit there is not a fast-forward and is rejected. So the first push wins;
- claims are batched: every queued source not yet claimed goes in the same push, so a drop of
  500 files is one push, not 500;
- the loser never plans the source: its file waits, pending, with the reason in ``status``,
  until sync brings the winner's ingest (the ledger learns it; the file is then a duplicate,
  or unchanged under the same name). A winner that never publishes does not hold the source
  hostage: once the file has waited ``git.source_claim_grace_seconds`` here, it is ingested
  here (two ingests then reconcile on the next sync, as without a claim);
- a remote that cannot be reached claims nothing: the source is ingested here at once, and
  offline machines reconcile on the next sync as before;
- a claim is pruned once its work is done: when this machine's ledger records the source's
  ingest (made here or learned from sync), that ingest commit is on the remote-tracking branch,
  and this machine has seen it there for ``git.source_claim_grace_seconds``, the claim is
  deleted on the remote (every such claim in one push, each only if it still holds the commit
  seen: ``--force-with-lease``) and locally. After that the ledger's duplicate rule does the
  claim's job: a machine that has synced since knows the bytes and records a copy as a
  duplicate without planning it. A claim of bytes no ingest of which has been published (still
  pending on its machine, or waiting out the grace) stays. This machine looks for claims to
  prune while it claims (at most once every ``PRUNE_EVERY`` seconds); :meth:`SourceClaims.prune`
  does it on demand. So the claims on the remote are those of recent sources, not one per
  source ever ingested, and the refs each fetch is shown do not grow with the vault.

The remote is untrusted: a claim only ever delays an ingest (by at most the grace period), and
nothing of a claim's content is read but its subject line.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import Iterable

from ..core.config import Config
from ..core.errors import WikiwrightError
from ..intake.ledger import FileRecord, Ledger
from ..vcs.queries import ancestors_among, for_each_ref, update_refs
from ..vcs.remote import PushResult, Remote, RemoteError
from ..vcs.repo import GitRepo, git

log = logging.getLogger(__name__)

CLAIMS_NAMESPACE = "refs/wikiwright/sources"
TOKEN_KEY = "source-claims:token"
# The reason a file waits with; sync wakes files waiting with it once their ingest arrives.
WAIT_PREFIX = "another machine claimed these bytes first"
BATCH = 500
CLAIM_TIMEOUT = 15.0  # seconds a claim's push may take
OFFLINE_PAUSE = 300.0  # after an unreachable remote, no claim is tried for this long
PRUNE_EVERY = 60.0  # seconds between two looks for claims to prune (each walks the tracking branch)
PUBLISHED_KEY = "source-claims:published"  # sha256 -> when this machine first saw its ingest published
# A claim batch at a time per vault in this process (two workers claiming the same queue
# would each push a commit of their own, and the second would take the first for another
# machine's).
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock_for(repo: GitRepo) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(str(repo.root), threading.Lock())


class SourceClaims:
    """The claims of one vault's sources on its remote (see the module docstring)."""

    def __init__(self, config: Config, repo: GitRepo, ledger: Ledger) -> None:
        self.config = config
        self.repo = repo
        self.ledger = ledger
        # A claim is an economy: it never holds an ingest for long on a slow or absent remote.
        self.remote = Remote(repo, config.git.remote, config.git.branch, timeout=CLAIM_TIMEOUT)
        self.grace = config.git.source_claim_grace_seconds
        self._configured: tuple[float, bool] | None = None
        self._offline_until = 0.0  # after a push that could not reach the remote: no claims until then
        self.prune_every = PRUNE_EVERY  # an instance knob, so tests can shorten it
        self._pruned_at: float | None = None  # monotonic time of the last look for claims to prune

    @property
    def enabled(self) -> bool:
        if not self.config.git.remote.strip():
            return False
        now = time.monotonic()
        if now < self._offline_until:
            return False  # offline: sources are ingested here, and reconcile on the next sync
        if self._configured is None or now - self._configured[0] > 60:
            self._configured = (now, self.remote.configured())
        return self._configured[1]

    def _token(self) -> str:
        token = self.ledger.get_kv(TOKEN_KEY)
        if not token:
            token = secrets.token_hex(8)
            self.ledger.set_kv(TOKEN_KEY, token)
        return token

    def _ref(self, sha256: str) -> str:
        return f"{CLAIMS_NAMESPACE}/{sha256}"

    def _tracking(self) -> str:
        return f"refs/wikiwright/remotes/{self.remote.name}/sources"

    # -- deciding -----------------------------------------------------------------------------

    def wait_reason(self, record: FileRecord) -> tuple[str, float] | None:
        """None when this machine ingests ``record`` now; else (why it waits, for how long).

        A claim is an economy, never a condition: when claiming fails for any reason (git
        refuses, the disk is full), the source is ingested here, as without a remote."""
        try:
            return self._wait_reason(record)
        except (WikiwrightError, git.GitCommandError, OSError) as exc:
            log.warning("%s: could not claim its bytes on the remote (%s); ingesting here", record.path, exc)
            return None

    def _wait_reason(self, record: FileRecord) -> tuple[str, float] | None:
        if not self.enabled:
            return None
        with _lock_for(self.repo):
            owner = self._owners([record.sha256]).get(record.sha256)
            if owner is None:
                self._claim([record.sha256, *self._unclaimed_queue(record)])
                owner = self._owners([record.sha256]).get(record.sha256)
            self._prune_if_due()
        if owner is None or owner == self._token():
            return None  # ours, or the remote could not be reached: ingest here
        waited = time.time() - record.seen_at
        if waited >= self.grace:
            log.warning("%s: another machine claimed these bytes %.0f s ago and its ingest has not arrived; "
                        "ingesting here", record.path, waited)
            return None
        until = time.strftime("%H:%M", time.localtime(record.seen_at + self.grace))
        reason = (f"{WAIT_PREFIX} (machine {owner}); its ingest arrives with sync, and this file is ingested "
                  f"here if it has not by {until}")
        retry = min(self.grace - waited, max(5.0, 2 * self.config.git.sync_interval_seconds))
        return reason, retry

    def _unclaimed_queue(self, record: FileRecord) -> list[str]:
        """The other sources waiting here that nobody has claimed (batched into one push)."""
        waiting = {f.sha256 for f in self.ledger.files("pending", kind="raw")
                   if f.sha256 != record.sha256 and not f.reason.startswith(WAIT_PREFIX)}
        known = self._owners(waiting)
        return sorted(sha for sha in waiting if sha not in known and self.ledger.source(sha) is None)

    def _owners(self, shas: Iterable[str]) -> dict[str, str]:
        """sha256 -> the token of the machine whose claim the remote holds (as last fetched)."""
        wanted = set(shas)
        if not wanted:
            return {}
        prefix = self._tracking() + "/"
        # A few: their own refs (the claims this vault knows grow with its sources); many: all.
        patterns = [prefix + sha for sha in sorted(wanted)] if len(wanted) <= 64 else [prefix]
        owners = {}
        for ref, subject in for_each_ref(self.repo, patterns, ("refname", "contents:subject")):
            sha = ref[len(prefix):]
            if sha in wanted:
                owners[sha] = subject.rpartition(" by ")[2].strip() or "unknown"
        return owners

    # -- pruning -----------------------------------------------------------------------------

    def prune(self) -> list[str]:
        """Delete the claims whose ingest is published (see the module docstring), on the remote
        and here; the sha256s pruned. Never raises: pruning is housekeeping."""
        if not self.enabled:
            return []
        with _lock_for(self.repo):
            return self._prune_quietly()

    def prune_if_due(self) -> list[str]:
        """:meth:`prune`, at most once every :attr:`prune_every` seconds (claiming and every sync
        round look; each look walks the tracking branch)."""
        if not self.enabled:
            return []
        with _lock_for(self.repo):
            return self._prune_if_due()

    def _prune_if_due(self) -> list[str]:
        now = time.monotonic()
        if self._pruned_at is not None and now - self._pruned_at < self.prune_every:
            return []
        self._pruned_at = now
        return self._prune_quietly()

    def _prune_quietly(self) -> list[str]:
        try:
            return self._prune()
        except (WikiwrightError, git.GitCommandError, OSError) as exc:
            log.warning("source claims: could not prune published claims: %s", exc)
            return []

    def _prune(self) -> list[str]:
        prefix = self._tracking() + "/"
        claims = {ref[len(prefix):]: commit for ref, commit in for_each_ref(self.repo, [prefix], ("refname",
                                                                                                "objectname"))}
        ingests = {}
        for sha in claims:
            source = self.ledger.source(sha)
            if source is not None and source.commit_sha:
                ingests[sha] = source.commit_sha
        published = ancestors_among(self.repo, set(ingests.values()), self.remote.tracking_ref)
        now = time.time()
        try:
            first_seen = {sha: float(at) for sha, at in json.loads(self.ledger.get_kv(PUBLISHED_KEY, "{}")).items()}
        except (ValueError, TypeError, AttributeError):
            first_seen = {}
        # Only the claims still here are remembered: the map is as small as the claims left.
        before = first_seen
        first_seen = {sha: before.get(sha, now) for sha, commit in ingests.items() if commit in published}
        due = sorted(sha for sha, at in first_seen.items() if now - at >= self.grace)
        pruned: list[str] = []
        for start in range(0, len(due), BATCH):
            chunk = due[start:start + BATCH]
            try:
                self.remote.delete_refs({self._ref(sha): claims[sha] for sha in chunk})
            except RemoteError as exc:
                log.info("source claims: the remote cannot be reached to prune claims (%s); tried again later",
                         exc)
                break
            # Deleted, or the remote no longer holds that commit there (another machine pruned
            # it first, or it holds a newer claim, which the next fetch brings): gone here too.
            update_refs(self.repo, {f"{prefix}{sha}": None for sha in chunk}, "wikiwright: prune source claims")
            pruned += chunk
        for sha in pruned:
            first_seen.pop(sha, None)
        if first_seen != before:
            self.ledger.set_kv(PUBLISHED_KEY, json.dumps(first_seen, sort_keys=True))
        if pruned:
            log.info("source claims: pruned %d claim(s) whose ingest is published", len(pruned))
        return pruned

    # -- claiming ----------------------------------------------------------------------------

    def _claim(self, shas: list[str]) -> None:
        token = self._token()
        for start in range(0, len(shas), BATCH):
            chunk = shas[start:start + BATCH]
            commits = self._claim_commits(chunk, token)
            pairs = list(zip(chunk, commits, strict=True))
            try:
                results = self.remote.push_refs({self._ref(sha): commit for sha, commit in pairs})
            except RemoteError as exc:
                self._offline_until = time.monotonic() + OFFLINE_PAUSE
                log.info("source claims paused for %.0f min: the remote cannot be reached (%s); ingesting here",
                         OFFLINE_PAUSE / 60, exc)
                return
            mine = [(sha, commit) for sha, commit in pairs
                    if results.get(self._ref(sha)) in (PushResult.PUSHED, PushResult.UP_TO_DATE)]
            if mine:
                # Recorded as the next fetch would: these claims are this machine's.
                update_refs(self.repo, {f"{self._tracking()}/{sha}": commit for sha, commit in mine})
            if any(result is PushResult.REJECTED for result in results.values()):
                try:
                    self.remote.fetch()  # the other machines' claims, as tracking refs
                except RemoteError as exc:
                    log.info("source claims: the remote went away after a rejected claim: %s", exc)

    def _claim_commits(self, shas: list[str], token: str) -> list[str]:
        """One parentless claim commit per sha256, written into the object store in-process."""
        empty_tree = self.repo.objects.write("tree", b"")  # the push sends it with the commits
        stamp = f"{int(time.time())} +0000"
        who = f"{self.config.git.author_name} <{self.config.git.author_email}>"
        return [self.repo.objects.write("commit", (
            f"tree {empty_tree}\nauthor {who} {stamp}\ncommitter {who} {stamp}\n\n"
            f"source claim sha256:{sha} nonce {secrets.token_hex(4)} by {token}\n").encode())
            for sha in shas]


def wake_claimed(ledger: Ledger) -> int:
    """Files waiting for another machine's ingest whose ingest sync has now brought: due now."""
    woken = 0
    for record in ledger.files("pending", kind="raw"):
        if record.reason.startswith(WAIT_PREFIX) and ledger.source(record.sha256) is not None:
            woken += ledger.wake(record.path, record.sha256, "its ingest arrived with sync")
    return woken
