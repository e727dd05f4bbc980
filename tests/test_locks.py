"""Per-page locks: sorted acquisition, mutual exclusion, and no lock kept after use."""

from __future__ import annotations

import threading

from wikiwright.core.locks import PageLocks


def test_ingests_on_the_same_page_never_interleave_and_disjoint_ones_do_not_wait() -> None:
    locks = PageLocks()
    events: list[str] = []
    inside = threading.Event()
    let_go = threading.Event()

    def first_ingest() -> None:
        with locks.hold(["p2", "p1"]):
            events.append("a+")
            inside.set()
            let_go.wait(10)
            events.append("a-")

    def ingest(name: str, pages: list[str]) -> None:
        with locks.hold(pages):
            events.append(name)

    first = threading.Thread(target=first_ingest)
    first.start()
    assert inside.wait(5)
    disjoint = threading.Thread(target=ingest, args=("c", ["p3"]))
    disjoint.start()
    disjoint.join(timeout=5)
    assert not disjoint.is_alive(), "a page nobody holds must not wait for another ingest"
    same_page = threading.Thread(target=ingest, args=("b", ["p1"]))
    same_page.start()
    same_page.join(timeout=0.5)
    assert same_page.is_alive(), "an ingest on a held page must wait"
    let_go.set()
    first.join(5)
    same_page.join(5)
    assert events == ["a+", "c", "a-", "b"]
    assert len(locks) == 0  # nothing is kept once nobody holds or waits


def test_opposite_orders_cannot_deadlock() -> None:
    locks = PageLocks()
    done = []

    def take(pages: list[str]) -> None:
        for _ in range(200):
            with locks.hold(pages):
                pass
        done.append(pages)

    threads = [threading.Thread(target=take, args=(order,)) for order in (["x", "y"], ["y", "x"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert len(done) == 2 and len(locks) == 0
