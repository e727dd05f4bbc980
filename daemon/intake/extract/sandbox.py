"""One extraction at a time in a child process with a wall-clock and a memory limit.

The checks in bounds.py refuse the bombs we know of before a parser runs; this is the
backstop for the ones we do not: a document is read by a worker process
(``python -m wikiwright.intake.extract.worker``) whose address space is capped
(``ingest.extract_memory_mb`` above what its libraries take) and which is killed when one
document takes longer than ``ingest.extract_timeout_seconds``. The daemon's own memory never
holds a parser's tree, so its RSS stays flat whatever is dropped in raw/.

A worker is a subprocess running a small module over stdin/stdout, not a fork: the daemon
is threaded, and a fork of a threaded process may inherit held locks. Workers are reused
across documents (no start-up per file); a worker that ran out of memory, crashed or timed
out is discarded and the next document gets a fresh one. Each thread takes an idle worker
or starts one, so the daemon's ingest workers never wait on each other. Works the same in
the daemon, the one-shot CLI and tests; where no worker can be started the document is read
in this process (logged).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ...core.errors import SourceRejected
from .bounds import Limits, size_words

log = logging.getLogger(__name__)
WORKER_MODULE = __name__.rsplit(".", 1)[0] + ".worker"


class _Worker:
    def __init__(self, memory_bytes: int) -> None:
        self.memory_bytes = memory_bytes
        self.proc = subprocess.Popen(
            [sys.executable, "-m", WORKER_MODULE, str(memory_bytes)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()

    def close(self) -> None:
        """End politely: closing stdin tells the worker it is done."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def ask(self, path: Path, data: bytes, limits: Limits) -> dict[str, Any]:
        """The worker's reply for one document; raises TimeoutError or EOFError (worker gone)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        header = json.dumps({"path": str(path), "size": len(data), "limits": asdict(limits)}).encode() + b"\n"
        try:
            self.proc.stdin.write(header)
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise EOFError("the worker is gone") from None
        deadline = time.monotonic() + limits.timeout_seconds
        fd = self.proc.stdout.fileno()
        buffer = bytearray()
        need = 8
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while len(buffer) < need:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise TimeoutError
                chunk = os.read(fd, max(65536, need - len(buffer)))
                if not chunk:
                    raise EOFError("the worker closed its output")
                buffer += chunk
                if need == 8 and len(buffer) >= 8:
                    need = 8 + struct.unpack(">Q", bytes(buffer[:8]))[0]
        reply = json.loads(bytes(buffer[8:need]))
        if not isinstance(reply, dict):
            raise EOFError("the worker sent something other than a reply")
        return reply


class ExtractorPool:
    """Idle workers waiting for documents; one per concurrent caller at most."""

    def __init__(self) -> None:
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        self.pids: set[int] = set()  # every worker started (tests read their peak memory)

    def _take(self, memory_bytes: int) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive() and worker.memory_bytes == memory_bytes:
                    return worker
                worker.kill()
        worker = _Worker(memory_bytes)
        self.pids.add(worker.pid)
        return worker

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            if not self._closed and worker.alive():
                self._idle.append(worker)
                return
        worker.close()

    def read(self, path: Path, data: bytes, limits: Limits) -> dict[str, Any]:
        try:
            worker = self._take(limits.memory_bytes)
        except OSError as exc:
            log.warning("cannot start a document reader process (%s); reading %s here, without its limits",
                        exc, path.name)
            return _read_here(path, data, limits)
        try:
            reply = worker.ask(path, data, limits)
        except TimeoutError:
            worker.kill()
            raise SourceRejected(
                "too-slow", f"took longer than {limits.timeout_seconds:g} s to read "
                "(ingest.extract_timeout_seconds): a parser bomb, or a document too large to read",
            ) from None
        except EOFError:
            worker.kill()
            raise _died(worker.proc.returncode, limits) from None
        except BaseException:
            worker.kill()
            raise
        if reply.get("fatal"):
            worker.kill()
        else:
            self._give_back(worker)
        return reply

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()


def _died(returncode: int | None, limits: Limits) -> SourceRejected:
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        if -returncode == signal.SIGXCPU:
            return SourceRejected("too-slow", f"used more than {limits.timeout_seconds * 2:g} s of CPU to read "
                                  "(ingest.extract_timeout_seconds): a parser bomb")
        if -returncode == signal.SIGKILL:
            return SourceRejected("too-much-memory", "was being read when the system killed the reader "
                                  f"(out of memory?); it needs more than {size_words(limits.memory_bytes)}")
        return SourceRejected("crashed", f"made the document reader crash ({name}): a malformed or hostile file")
    return SourceRejected("crashed", f"made the document reader stop (exit status {returncode})")


def _read_here(path: Path, data: bytes, limits: Limits) -> dict[str, Any]:
    from . import read_source

    try:
        source = read_source(path, data, limits)
    except SourceRejected as exc:
        return {"code": exc.code, "message": str(exc)}
    return {"text": source.text, "encoding": source.encoding, "kind": source.kind, "doc_title": source.doc_title}


_pool: ExtractorPool | None = None
_pool_lock = threading.Lock()


def pool() -> ExtractorPool:
    """This process's workers, started on first use and ended at exit."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ExtractorPool()
            atexit.register(_pool.close)
        return _pool
