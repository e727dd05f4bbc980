"""Git's side of one wiki across machines: fetch, ahead/behind, merge trees, push — never force.

Everything here is plain git driven through :class:`GitRepo` (the command layer): no
working-tree changes, no checkout, reset, stash or pull. The sync round (``door/sync.py``)
decides what to do with what these return.

Credentials come from git's own configuration only (ssh agent, credential helpers):
``GIT_TERMINAL_PROMPT=0`` and an empty askpass make a missing credential an error instead of
a prompt that would hang the daemon, and every network command has a timeout.
"""

from __future__ import annotations

import logging
import os
import subprocess
from dataclasses import dataclass, field
from enum import Enum

from ..core.errors import WikiwrightError
from ..core.opkinds import OpKind
from ..vcs.queries import is_ancestor
from ..vcs.repo import (
    GitRepo,
    git,  # GitPython, imported only when one of its errors is raised or matched
    git_status,
)
from ..vcs.repo import merge_file as merge_three

log = logging.getLogger(__name__)

NETWORK_TIMEOUT = 60.0
CLAIM_REF = "refs/wikiwright/consolidation"
# Never prompt: a missing credential is an error the daemon reports, not a hang.
_NO_PROMPT = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": ""}
_NO_PROMPT_CONFIG = ["-c", "core.askPass=", "-c", "credential.interactive=never"]
_REJECT_MARKERS = ("[rejected]", "non-fast-forward", "fetch first", "stale info", "cannot lock ref",
                   "failed to update ref", "reference already exists")


class PushResult(Enum):
    PUSHED = "pushed"
    UP_TO_DATE = "up-to-date"
    REJECTED = "rejected"  # someone pushed first: integrate and try again
    UNREACHABLE = "unreachable"  # network, missing remote, credentials: retry with backoff


class RemoteError(WikiwrightError):
    """The remote could not be reached (network, path, credentials); the reason is git's own."""


@dataclass(frozen=True)
class Stage:
    mode: str
    blob: str


@dataclass
class MergeTree:
    """What ``git merge-tree --write-tree`` made of two commits, without touching any file."""

    tree: str
    clean: bool
    # path -> {1: base, 2: ours, 3: theirs}; a missing stage means that side has no file.
    conflicts: dict[str, dict[int, Stage]] = field(default_factory=dict)


class Remote:
    """The configured remote and branch of a vault's repository."""

    def __init__(self, repo: GitRepo, name: str, branch: str = "", timeout: float = NETWORK_TIMEOUT) -> None:
        self.repo = repo
        self.name = name
        self._branch = branch
        self.timeout = timeout

    # -- names -------------------------------------------------------------------------

    @property
    def branch(self) -> str:
        """The branch to sync: configured, else the one checked out."""
        if self._branch:
            return self._branch
        current = self.current_branch()
        return current or "main"

    def current_branch(self) -> str | None:
        try:
            head = (self.repo.git_dir / "HEAD").read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return head[len("ref: refs/heads/"):] if head.startswith("ref: refs/heads/") else None

    @property
    def tracking_ref(self) -> str:
        return f"refs/remotes/{self.name}/{self.branch}"

    @property
    def claim_tracking_ref(self) -> str:
        return f"refs/wikiwright/remotes/{self.name}/consolidation"

    def configured(self) -> bool:
        try:
            return bool(self.repo._run("config", "--get", f"remote.{self.name}.url"))
        except git.GitCommandError:
            return False

    # -- reading -------------------------------------------------------------------------

    def rev(self, ref: str) -> str | None:
        status, out, _err = git_status(self.repo, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}")
        return out.strip() or None if status == 0 else None

    def remote_head(self) -> str | None:
        """The branch as last fetched (no network)."""
        return self.rev(self.tracking_ref)

    def ahead_behind(self) -> tuple[int, int]:
        """(commits here not on the remote, commits there not here), from the last fetch."""
        if self.remote_head() is None:
            try:
                ahead = int(self.repo._run("rev-list", "--count", "HEAD") or 0)
            except git.GitCommandError:
                ahead = 0
            return ahead, 0
        out = self.repo._run("rev-list", "--left-right", "--count", f"HEAD...{self.tracking_ref}")
        left, _, right = out.partition("\t")
        return int(left or 0), int(right or 0)

    def is_ancestor(self, older: str, newer: str) -> bool:
        return is_ancestor(self.repo, older, newer)

    # -- network ---------------------------------------------------------------------------

    def _network(self, *args: str) -> tuple[int, str]:
        """Run a network command (fetch/push) with a timeout; (exit status, stderr)."""
        env = {**os.environ, **self.repo._env, **_NO_PROMPT}
        try:
            completed = subprocess.run(
                ["git", *_NO_PROMPT_CONFIG, *args], cwd=self.repo.root, env=env,
                capture_output=True, text=True, timeout=self.timeout, stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return 124, f"git {args[0]} timed out after {self.timeout:.0f}s"
        # push --porcelain reports a rejected ref on stdout, the reason on stderr: keep both.
        return completed.returncode, f"{completed.stdout or ''}\n{completed.stderr or ''}".strip()

    def fetch(self) -> str | None:
        """Fetch the branch (and the consolidation claim); the remote's head, None if it has no branch.

        Raises RemoteError when the remote cannot be reached.
        """
        # One fetch for the branch and the claim ref (a pattern: absent is no error).
        code, err = self._network(
            "fetch", "--no-tags", "--no-write-fetch-head", "-q", self.name,
            f"+refs/heads/{self.branch}:{self.tracking_ref}",
            f"+refs/wikiwright/*:refs/wikiwright/remotes/{self.name}/*",
        )
        if code != 0:
            if "couldn't find remote ref" in err.lower():
                return None  # an empty remote: the first push creates the branch
            raise RemoteError(_one_line(err) or f"git fetch exited with {code}")
        return self.remote_head()

    def push(self) -> tuple[PushResult, str]:
        """Push HEAD to the configured branch, fast-forward only (never ``--force``)."""
        if self.current_branch() != self.branch:
            return PushResult.UNREACHABLE, (
                f"HEAD is on {self.current_branch() or 'a detached commit'}, not on {self.branch}; "
                "wikiwright pushes only the configured branch")
        head = self.repo.head()
        if head is None:
            return PushResult.UP_TO_DATE, "nothing committed yet"
        if head == self.remote_head():
            return PushResult.UP_TO_DATE, ""
        code, err = self._network("push", "--porcelain", "-q", self.name, f"{head}:refs/heads/{self.branch}")
        if code == 0:
            # Record what the remote now holds (push updates the tracking ref only for
            # configured refspecs).
            self.repo._run("update-ref", self.tracking_ref, head)
            return PushResult.PUSHED, ""
        if any(marker in err for marker in _REJECT_MARKERS):
            return PushResult.REJECTED, _one_line(err)
        return PushResult.UNREACHABLE, _one_line(err) or f"git push exited with {code}"

    def push_claim(self, message: str) -> tuple[PushResult, str]:
        """Take a lock through the remote: push a new commit on top of the claim ref as fetched.

        Fast-forward only, so of two machines that fetched the same claim the first push wins
        and the other's is rejected.
        """
        parent = self.rev(self.claim_tracking_ref)
        empty_tree = self.repo._run("hash-object", "-t", "tree", "-w", "/dev/null")
        args = ["commit-tree", empty_tree, "-m", message]
        if parent:
            args[2:2] = ["-p", parent]
        claim = self.repo._run(*args)
        code, err = self._network("push", "--porcelain", "-q", self.name, f"{claim}:{CLAIM_REF}")
        if code == 0:
            self.repo._run("update-ref", self.claim_tracking_ref, claim)
            return PushResult.PUSHED, claim
        if any(marker in err for marker in _REJECT_MARKERS):
            return PushResult.REJECTED, _one_line(err)
        return PushResult.UNREACHABLE, _one_line(err)

    def push_refs(self, updates: dict[str, str]) -> dict[str, PushResult]:
        """Create each ref on the remote with its commit, in one push, each ref on its own (not
        atomic): PUSHED (created), UP_TO_DATE (it already held that commit) or REJECTED (it
        holds another: not a fast-forward). Raises RemoteError when the remote cannot be reached."""
        if not updates:
            return {}
        code, out = self._network("push", "--porcelain", self.name,
                                  *(f"{commit}:{ref}" for ref, commit in updates.items()))
        return _per_ref(code, out, set(updates), {"*": PushResult.PUSHED, "=": PushResult.UP_TO_DATE,
                                                  " ": PushResult.PUSHED})

    def delete_refs(self, expected: dict[str, str]) -> dict[str, PushResult]:
        """Delete each ref on the remote, in one push, only where it still holds the commit
        expected (``--force-with-lease``): PUSHED (deleted) or REJECTED (it holds another commit,
        or none: someone deleted it first). Raises RemoteError when the remote cannot be reached."""
        if not expected:
            return {}
        code, out = self._network("push", "--porcelain", self.name,
                                  *(f"--force-with-lease={ref}:{commit}" for ref, commit in expected.items()),
                                  *(f":{ref}" for ref in expected))
        return _per_ref(code, out, set(expected), {"-": PushResult.PUSHED})

    def last_claim(self) -> tuple[float, str] | None:
        """(time, message) of the newest consolidation claim as last fetched."""
        ref = self.rev(self.claim_tracking_ref)
        if ref is None:
            return None
        out = self.repo._run("log", "-1", "--format=%ct%x1f%B", ref)
        stamp, _, message = out.partition("\x1f")
        return float(stamp or 0), message.strip()

    # -- merging without a working tree ----------------------------------------------------

    def merge_tree(self, ours: str, theirs: str) -> MergeTree:
        """Merge two commits into a tree (``git merge-tree --write-tree``); no file is touched."""
        status, out, err = git_status(self.repo, "merge-tree", "--write-tree", "-z", "--no-messages",
                                       "--allow-unrelated-histories", ours, theirs)
        if status not in (0, 1):
            raise WikiwrightError(f"git merge-tree failed: {_one_line(str(err))}")
        parts = out.split("\0")
        result = MergeTree(parts[0].strip(), status == 0)
        for item in parts[1:]:
            if not item:
                break
            info, _, path = item.partition("\t")
            mode, blob, stage = info.split()
            result.conflicts.setdefault(path, {})[int(stage)] = Stage(mode, blob)
        return result


def merge_file(repo: GitRepo, base: str, ours: str, theirs: str, favour: str = "") -> tuple[str, bool]:
    """``git merge-file`` on three texts; ``favour`` ``union``/``ours``/``theirs`` resolves conflicts.

    Returns (text, clean). With ``favour`` the text never carries conflict markers; ``clean``
    still says whether there was a conflict to resolve.
    """
    labels = ("this machine", "base", "remote")
    # No favour: conflicts are marked diff3-style (with the base's lines), for the caller.
    status, out = merge_three(repo, base, ours, theirs, labels, [f"--{favour}"] if favour else ["--diff3"])
    if favour:
        # With a resolution flag git exits 0; ask again without it to learn if it was clean.
        probe, _out = merge_three(repo, base, ours, theirs, labels, ["-q"])
        return out, probe == 0
    return out, status == 0


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if line.lower().startswith(("fatal:", "error:", "remote:", "!")):
            return line
    return lines[-1] if lines else ""


def _per_ref(code: int, out: str, wanted: set[str], meaning: dict[str, PushResult]) -> dict[str, PushResult]:
    """Each wanted ref's outcome from ``git push --porcelain`` (``flag<TAB>src:dst<TAB>summary``
    lines; a flag not in ``meaning`` is a refusal). Raises RemoteError when no ref was reported."""
    results: dict[str, PushResult] = {}
    for line in out.splitlines():
        flag, _, rest = line.partition("\t")
        ref = rest.partition("\t")[0].rpartition(":")[2]
        if ref in wanted and len(flag) == 1:
            results[ref] = meaning.get(flag, PushResult.REJECTED)
    if code != 0 and not results:
        raise RemoteError(_one_line(out) or f"git push exited with {code}")
    return results


def shared_consolidation_ms(repo: GitRepo, remote: str, branch: str) -> int | None:
    """When the wiki was last consolidated on any machine (ms): the newest consolidation commit
    in HEAD's history, or the newest claim on the remote as last fetched (no fetch: read by
    the gate status shows, which never imports the door)."""
    newest: int | None = None
    found = repo.log("-F", f"--grep=Wikiwright-Operation: {OpKind.CONSOLIDATE.value}", limit=1)
    if found:
        from datetime import datetime

        newest = int(datetime.fromisoformat(found[0].date).timestamp() * 1000)
    claim = Remote(repo, remote, branch).last_claim()
    if claim is not None and (newest is None or claim[0] * 1000 > newest):
        newest = int(claim[0] * 1000)
    return newest
