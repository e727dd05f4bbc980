"""Reading git objects that may come from someone else (a shared remote), within limits.

One ``git cat-file --batch`` process answers object by object (git flushes after each), so
each object's size is known before its bytes are read: a huge object is skipped unread, and a
blob is hashed as it streams, never held in memory whole. Commit messages are read from the
commit object itself (sizes are exact), not from a ``git log --format`` stream, where a
message holding the format's separator bytes could pose as another commit.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType

from .repo import GitRepo

_CHUNK = 1 << 16


@dataclass(frozen=True)
class CommitMessage:
    sha: str
    parents: tuple[str, ...]
    subject: str
    trailers: dict[str, str]  # the last paragraph's ``Key: value`` lines (the last of a repeated key wins)


class ObjectReader:
    """``git cat-file --batch`` for one repository, asked one object at a time."""

    def __init__(self, repo: GitRepo) -> None:
        env = {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **repo._env}
        self._proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=repo.root, env=env, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def __enter__(self) -> ObjectReader:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self._proc.stdin:
            self._proc.stdin.close()
        if self._proc.stdout:
            self._proc.stdout.close()
        self._proc.wait()

    def _ask(self, name: str) -> tuple[str, int] | None:
        """Ask for ``name``; (type, size) with the bytes next on the pipe, or None (missing)."""
        assert self._proc.stdin and self._proc.stdout
        if "\n" in name or not name:
            return None
        self._proc.stdin.write(name.encode("utf-8", "surrogateescape") + b"\n")
        self._proc.stdin.flush()
        header = self._proc.stdout.readline().split()
        if len(header) != 3:
            return None  # "<name> missing" / "ambiguous"
        return header[1].decode("ascii", "replace"), int(header[2])

    def _stream(self, size: int) -> Iterator[bytes]:
        assert self._proc.stdout
        left = size
        while left:
            chunk = self._proc.stdout.read(min(left, _CHUNK))
            if not chunk:
                raise OSError("git cat-file stopped mid-object")
            left -= len(chunk)
            yield chunk
        self._proc.stdout.read(1)  # the newline after each object

    def read(self, name: str, limit: int, kind: str | None = None) -> bytes | None:
        """The object's bytes; None when missing, of another type, or over ``limit`` bytes."""
        found = self._ask(name)
        if found is None:
            return None
        typ, size = found
        if size > limit or (kind is not None and typ != kind):
            for _chunk in self._stream(size):
                pass
            return None
        return b"".join(self._stream(size))

    def blob_sha256(self, name: str, limit: int) -> tuple[str, int] | None:
        """sha256 and size of a blob's bytes, hashed as they stream; None if missing, not a
        blob, or over ``limit`` bytes (never read into memory)."""
        found = self._ask(name)
        if found is None:
            return None
        typ, size = found
        digest = hashlib.sha256()
        wanted = typ == "blob" and size <= limit
        for chunk in self._stream(size):
            if wanted:
                digest.update(chunk)
        return (digest.hexdigest(), size) if wanted else None

    def commit(self, sha: str, limit: int = 1 << 20) -> CommitMessage | None:
        data = self.read(sha, limit, "commit")
        return parse_commit(sha, data) if data is not None else None


def parse_commit(sha: str, data: bytes) -> CommitMessage:
    text = data.decode("utf-8", "replace")
    headers, _, message = text.partition("\n\n")
    parents = tuple(line.split()[1] for line in headers.splitlines() if line.startswith("parent ") and
                    len(line.split()) == 2)
    message = message.replace("\r\n", "\n")
    subject = message.split("\n", 1)[0].strip()
    paragraphs = [p for p in message.strip("\n").split("\n\n") if p.strip()]
    trailers: dict[str, str] = {}
    if len(paragraphs) > 1:
        for line in paragraphs[-1].splitlines():
            key, sep, value = line.partition(":")
            if sep and key and all(c.isalnum() or c == "-" for c in key):
                trailers[key] = value.strip()
    return CommitMessage(sha, parents, subject, trailers)


def changed_files(repo: GitRepo, commits: Iterable[str]) -> dict[str, dict[str, tuple[str, str]]]:
    """commit -> {path: (new mode, new blob)} for each file it adds or changes against its
    first parent (a deleted file is left out); a merge commit has none. One git process."""
    shas = list(dict.fromkeys(commits))
    if not shas:
        return {}
    env = {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **repo._env}
    proc = subprocess.run(["git", "diff-tree", "--stdin", "-r", "--no-renames", "-z", "--root"], cwd=repo.root,
                          env=env, input="".join(f"{sha}\n" for sha in shas).encode("ascii"), capture_output=True,
                          check=False)
    found: dict[str, dict[str, tuple[str, str]]] = {sha: {} for sha in shas}
    tokens = proc.stdout.split(b"\0")
    current: dict[str, tuple[str, str]] | None = None
    index = 0
    while index < len(tokens):
        token = tokens[index].decode("utf-8", "surrogateescape").strip("\n")
        index += 1
        if token.startswith(":"):
            path = tokens[index].decode("utf-8", "surrogateescape") if index < len(tokens) else ""
            index += 1
            fields = token[1:].split()
            if current is not None and len(fields) == 5 and set(fields[3]) != {"0"}:
                current[path] = (fields[1], fields[3])
        elif token:
            current = found.setdefault(token, {})
    return found


def tree_entry(repo: GitRepo, commit: str, path: str) -> tuple[str, str] | None:
    """(mode, blob) of ``path`` in ``commit``'s tree, matched literally; None when absent."""
    env = {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **repo._env, "GIT_LITERAL_PATHSPECS": "1"}
    proc = subprocess.run(["git", "ls-tree", "-z", "--full-tree", commit, "--", path], cwd=repo.root, env=env,
                          capture_output=True, check=False)
    for entry in proc.stdout.split(b"\0"):
        info, _, name = entry.decode("utf-8", "surrogateescape").partition("\t")
        fields = info.split()
        if name == path and len(fields) == 3 and fields[1] == "blob":
            return fields[0], fields[2]
    return None
