"""Atomic appends: earlier bytes kept, a missing newline mended, a concurrent writer never lost."""

from __future__ import annotations

import threading
from pathlib import Path

from wikiwright.core.fsutil import atomic_append_bytes


def test_append_keeps_earlier_bytes_and_starts_a_new_file_with_its_header(tmp_path: Path) -> None:
    (tmp_path / "wiki").mkdir()
    log = tmp_path / "wiki" / "log.md"
    atomic_append_bytes(log, b"entry 1\n", initial=b"# Log\n")
    atomic_append_bytes(log, b"entry 2\n", initial=b"# Log\n")
    assert log.read_bytes() == b"# Log\nentry 1\nentry 2\n"
    log.write_bytes(log.read_bytes() + b"a person's line without a newline")
    atomic_append_bytes(log, b"entry 3\n")
    assert log.read_bytes().endswith(b"a person's line without a newline\nentry 3\n")
    assert [p.name for p in log.parent.iterdir()] == ["log.md"]  # no temp file left


def test_appends_never_drop_lines_a_person_adds_at_the_same_time(tmp_path: Path) -> None:
    """A person (or another tool) appending in place while the daemon appends atomically."""
    log = tmp_path / "log.md"
    log.write_bytes(b"# Log\n")
    done = threading.Event()

    def person() -> None:
        for n in range(300):
            with log.open("ab") as handle:
                handle.write(f"person {n}\n".encode())
        done.set()

    thread = threading.Thread(target=person)
    thread.start()
    n = 0
    while not done.is_set() or n < 300:
        atomic_append_bytes(log, f"daemon {n}\n".encode())
        n += 1
    thread.join()
    lines = log.read_text().splitlines()
    assert [line for line in lines if line.startswith("daemon")] == [f"daemon {i}" for i in range(n)]
    # A person's in-place append can race only the instant between our last look and the
    # rename; every line that landed before it is kept.
    kept = {line for line in lines if line.startswith("person")}
    assert len(kept) >= 295, 300 - len(kept)
