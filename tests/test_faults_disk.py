"""Disk full during a write (reliability.md T34), on a real, tiny filesystem.

The vault lives on a loop-free tmpfs mounted with ``size=`` (needs root and a kernel that
lets this container mount; skipped with the reason otherwise). The disk is filled to the
last byte, then a source arrives: writes fail with ENOSPC. Old pages must stay byte for
byte, no page may be torn, the source stays pending with the reason in ``status``, and once
space is freed the daemon ingests it by itself. Ends with doctor green.
"""

from __future__ import annotations

import errno
import os
import shutil
import time
from pathlib import Path

from wikiwright.wiki.pages import parse_page

from tests.fault_tools import (
    assert_doctor_green,
    launch,
    ledger_rows,
    note,
    reap_daemons,  # noqa: F401
    stop,
    wait_settled,
)
from tests.helpers import cli, daemon_log, wait_for


def _fill(folder: Path) -> Path:
    """Take every free byte of the filesystem holding ``folder``."""
    filler = folder / "filler.bin"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (1 << 20, 1 << 16, 1 << 12, 1 << 8, 1):
            block = b"\0" * size
            while True:
                try:
                    os.write(fd, block)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
                    break
    finally:
        os.close(fd)
    return filler


def _scenario(tiny_fs: Path, tmp_path: Path, *, state_elsewhere: bool) -> None:
    root = tiny_fs / "Wiki"
    assert cli("init", "--no-default", str(root)).returncode == 0
    if state_elsewhere:
        # The queue database on another disk: only page and git writes meet the full disk.
        moved = tmp_path / "state"
        shutil.move(root / ".wikiwright", moved)
        (root / ".wikiwright").symlink_to(moved)
    proc = launch(root)
    (root / "raw" / "old.md").write_text(note(1))
    wait_settled(root, ["raw/old.md"], proc=proc)
    before = {p: p.read_bytes() for p in (root / "wiki").rglob("*.md")}
    # Stage the new source under a name the watcher skips, fill the disk, then rename it in:
    # a rename needs no free blocks, so the source arrives on a full disk.
    staged = root / "raw" / ".new.md.part"
    staged.write_text(note(2, "written just before the disk filled up"))
    time.sleep(0.5)
    filler = _fill(tiny_fs)
    try:
        os.rename(staged, root / "raw" / "new.md")
        if state_elsewhere:
            wait_for(lambda: "disk is full" in ledger_rows(root).get("raw/new.md", ("", "", ""))[2],
                     timeout=30, what="the disk-full retry reason")
            assert ledger_rows(root)["raw/new.md"][0] == "pending"
            assert "the disk is full" in cli("status", "--vault", str(root)).stdout
        else:
            # Even the queue cannot record it: the daemon keeps trying and says why in its log.
            wait_for(lambda: "cannot record" in daemon_log(proc), timeout=30, what="the retry warning")
            assert "raw/new.md" not in ledger_rows(root)
        time.sleep(1.0)
        assert proc.poll() is None, daemon_log(proc)
        for page, data in before.items():
            parse_page(page.read_text())  # no torn page
            assert page.read_bytes() == data, f"{page} changed on a full disk"
        assert not (root / "wiki" / "sources" / "src-new.md").exists()
        assert not [p for p in (root / "wiki").rglob("*wikiwright-tmp*")]
    finally:
        filler.unlink()
    freed = time.monotonic()
    wait_settled(root, ["raw/new.md"], timeout=40, proc=proc)
    resumed_in = time.monotonic() - freed
    assert ledger_rows(root)["raw/new.md"][0] == "ingested"
    assert stop(proc) == 0
    # The old page kept every byte it had; the new source may only add links to the concepts
    # the two sources share (the offline engine's "Related pages").
    old_page = root / "wiki" / "sources" / "src-old.md"
    assert old_page.read_bytes().startswith(before[old_page])
    assert_doctor_green(root)
    print(f"resumed {resumed_in:.1f}s after space returned")


def test_disk_full_during_page_writes_keeps_old_pages_and_resumes(tiny_fs: Path, tmp_path: Path) -> None:
    _scenario(tiny_fs, tmp_path, state_elsewhere=True)


def test_disk_full_everywhere_loses_nothing_and_resumes(tiny_fs: Path, tmp_path: Path) -> None:
    _scenario(tiny_fs, tmp_path, state_elsewhere=False)
