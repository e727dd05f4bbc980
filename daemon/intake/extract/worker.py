"""The extraction worker: reads documents for :mod:`.sandbox`, one at a time, over stdin/stdout.

Run as ``python -m wikiwright.intake.extract.worker MEMORY_BYTES``. At start the address space
is capped at what the interpreter took plus ``MEMORY_BYTES`` (``RLIMIT_AS``): a document that
needs more fails here with MemoryError, never in the daemon. The document libraries are
imported on first use and stay loaded (the worker is reused), so start-up stays short.
Before each document the CPU-time limit is moved to "now plus twice the document's time
budget", so a reader stuck in a loop dies even if the daemon that asked is gone.

Protocol: a request is one JSON line (``path``, ``size``, ``limits``) followed by ``size`` bytes
of the document; a reply is an 8-byte big-endian length and that many bytes of JSON: either
``{"text", "encoding", "kind", "doc_title"}`` or ``{"code", "message"}`` (a rejection).
Whatever a library prints goes to stderr: stdout carries replies only.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import resource
import signal
import struct
import sys
from pathlib import Path
from typing import Any, BinaryIO


def _address_space() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


_cap: list[int] = []  # the address-space cap this worker set (empty: none)


def _peak_address_space() -> int:
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmPeak:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _hit_the_cap() -> bool:
    """True when this worker's address space came within 5% of its cap: a parser that failed
    then ran out of memory, whatever its error says (libxml2 reports "unknown error")."""
    return bool(_cap) and _peak_address_space() >= _cap[0] * 0.95


def _cap_memory(extra: int) -> None:
    try:
        limit = _address_space() + extra
    except (OSError, ValueError):  # no /proc (macOS): the cap is the budget alone
        limit = extra
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        _cap.append(limit)


def _cap_cpu(seconds: float) -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = usage.ru_utime + usage.ru_stime
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = int(used + seconds) + 2
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _reply(out: BinaryIO, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode("utf-8")
    out.write(struct.pack(">Q", len(body)) + body)
    out.flush()


def _read_one(header: dict[str, Any], data: bytes) -> dict[str, Any]:
    from ...core.errors import SourceRejected
    from . import read_source
    from .bounds import Limits, size_words

    limits = Limits(**header["limits"])
    out_of_memory = {"code": "too-much-memory", "fatal": True,
                     "message": f"needs more than {size_words(limits.memory_bytes)} of memory to read "
                                "(ingest.extract_memory_mb): a decompression bomb, or a document too large"}
    try:
        source = read_source(Path(header["path"]), data, limits)
    except SourceRejected as exc:
        return out_of_memory if exc.code == "unreadable" and _hit_the_cap() else {"code": exc.code, "message": str(exc)}
    except RecursionError:
        return {"code": "too-deep", "message": "nests its structure too deep to read (a parser bomb)"}
    except MemoryError:
        return out_of_memory
    except Exception as exc:  # a library's bug on these bytes: the same bytes fail the same way
        if _hit_the_cap():
            return out_of_memory
        return {"code": "unreadable", "message": f"could not be read ({type(exc).__name__}: {exc})"}
    if len(source.text) > limits.expanded_bytes:
        return {"code": "too-expanded", "message": f"reads as more than {size_words(limits.expanded_bytes)} of text"}
    return {"text": source.text, "encoding": source.encoding, "kind": source.kind, "doc_title": source.doc_title}


def main(argv: list[str]) -> int:
    # Ctrl-C in the daemon's terminal reaches its whole process group: the daemon decides when
    # this worker ends (it closes the pipe), so an interrupt is not this process's to act on.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Replies only on the real stdout; a library's print() lands on stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    source = sys.stdin.buffer
    logging.basicConfig(level=logging.WARNING, format="extract worker: %(name)s: %(message)s")
    _cap_memory(int(argv[1]) if len(argv) > 1 else 1 << 30)
    while True:
        line = source.readline()
        if not line:
            return 0  # the daemon closed the pipe (it is done, or gone)
        header = json.loads(line)
        data = source.read(int(header["size"]))
        _cap_cpu(float(header["limits"].get("timeout_seconds", 60.0)) * 2)
        try:
            message = _read_one(header, data)
        except MemoryError:  # even the reply could not be built
            message = {"code": "too-much-memory", "fatal": True, "message": "needs more memory than allowed to read"}
        del data
        try:
            _reply(out, message)
        except (BrokenPipeError, OSError):
            return 0  # the daemon went away while this document was read
        if message.get("fatal"):
            return 1  # after a MemoryError the heap is suspect: the pool starts a fresh worker


if __name__ == "__main__":
    sys.exit(main(sys.argv))
