"""Per-page locks, always taken in sorted order so two ingests can never deadlock."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager


class PageLocks:
    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def _lock_for(self, page: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(page, threading.Lock())

    @contextmanager
    def hold(self, pages: Iterable[str]) -> Iterator[None]:
        ordered = sorted(set(pages))
        taken: list[threading.Lock] = []
        try:
            for page in ordered:
                lock = self._lock_for(page)
                lock.acquire()
                taken.append(lock)
            yield
        finally:
            for lock in reversed(taken):
                lock.release()
