"""One ingest per source across machines (issue 24): the bytes are claimed on the remote first.

Two machines sharing a bare remote, each with its own ledger, catalogue and pipeline in this
process (tests/test_sync.py's Machine), planning with one scripted model server that counts
the calls. The same files dropped on both: the machine that claims first ingests them, the
other waits for that ingest to arrive with sync and never calls the model.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers import git
from tests.llm_server import ScriptedServer
from tests.test_sync import Machine, source_text, two_machines

FILES = 20


def _reply(n: int) -> dict[str, object]:
    return {"title": f"Note {n:03d}", "summary": f"Note {n:03d} is about shared widgets.", "key_points": [],
            "operations": []}


def _use_model(machine: Machine, server: ScriptedServer) -> None:
    """The machine opened again with the scripted model configured (its context's wiring)."""
    machine.reopen(server.config(machine.config))
    machine.pipeline.planner.client.backoff_seconds = 0.01  # type: ignore[attr-defined]


def _drop_all(machine: Machine, names: list[str]) -> None:
    for n, name in enumerate(names):
        path = machine.vault.raw / name
        path.write_text(source_text(n, "shared widgets"), encoding="utf-8")
        machine.registrar.register(path)


def _drain(machine: Machine) -> None:
    while machine.pipeline.drain_once() is not None:
        pass


def _ingest_commits_by_sha(root: Path) -> Counter[str]:
    """Every ingest commit in the history, duplicates included (a sync merge that undid one
    does not make it unpaid)."""
    out = git(root, "log", "--format=%(trailers:key=Wikiwright-Source,valueonly)",
              "--grep=Wikiwright-Operation: ingest")
    return Counter(line.rsplit("sha256:", 1)[1].strip() for line in out.splitlines() if "sha256:" in line)


@pytest.fixture
def machines(tmp_path: Path, isolated_env: dict[str, str]):  # type: ignore[no-untyped-def]
    remote, a, b = two_machines(tmp_path)
    yield remote, a, b
    a.close()
    b.close()


def test_the_same_files_dropped_on_two_machines_are_ingested_once_with_one_model_call_each(
        machines: tuple[Path, Machine, Machine]) -> None:
    """20 files dropped on A and on B (B under other names for half of them); both drain before
    either syncs. A claims them in one push and ingests them; B's claims are refused, so B's files
    wait (status says why) and B calls no model; B's round brings A's ingests and the files are
    settled as duplicates or unchanged. The shared history holds one ingest commit per file and
    the server answered one call per file (old code: 40 ingests, 40 model calls)."""
    remote, ma, mb = machines
    names = [f"shared-{n:02d}.md" for n in range(FILES)]
    with ScriptedServer([], default=_reply(0)) as server:
        _use_model(ma, server)
        _use_model(mb, server)
        _drop_all(ma, names)
        _drop_all(mb, [name if n % 2 else f"copy-of-{name}" for n, name in enumerate(names)])
        pushes_before = _claim_refs(remote)
        _drain(ma)
        assert len(_claim_refs(remote)) - len(pushes_before) == FILES
        calls_a = len(server.requests)
        assert calls_a >= FILES
        _drain(mb)
        assert len(server.requests) == calls_a, "B called the model for a source A had claimed"
        waiting = mb.ledger.files("pending", kind="raw")
        assert len(waiting) == FILES and all("another machine claimed these bytes first" in f.reason
                                             for f in waiting), waiting
        ma.sync()
        mb.sync()
        _drain(mb)
        mb.sync()
        ma.sync()
        assert len(server.requests) == calls_a
    states = Counter(f.state for f in mb.ledger.files(kind="raw"))
    assert states == {"duplicate": FILES // 2, "ingested": FILES // 2}, states
    for root in (ma.root, mb.root):
        counts = _ingest_commits_by_sha(root)
        assert len(counts) == FILES and set(counts.values()) == {1}, counts
    assert git(ma.root, "rev-parse", "HEAD") == git(mb.root, "rev-parse", "HEAD")
    assert git(mb.root, "status", "--porcelain", "--", "wiki").strip() == ""


def _claim_refs(remote: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(remote), "for-each-ref", "--format=%(refname)",
                          "refs/wikiwright/sources/"], capture_output=True, text=True, check=True).stdout
    return out.split()


def test_a_claim_whose_ingest_never_arrives_is_given_up_after_the_grace_period(
        machines: tuple[Path, Machine, Machine]) -> None:
    """A claims a file and never publishes its ingest (it went offline for good). B's copy waits
    no longer than git.source_claim_grace_seconds from when B first saw it, then B ingests it:
    a claim delays an ingest, it never prevents one (a remote claiming everything cannot stop
    this machine's wiki)."""
    _remote, ma, mb = machines
    ma.ingest("lonely.md", source_text(1, "lonely"))  # claimed and ingested on A, never synced
    mb.ingest("lonely.md", source_text(1, "lonely"))
    record = mb.ledger.get_file("raw/lonely.md")
    assert record is not None and record.state == "pending" and "claimed" in record.reason, record
    # The grace period passes (made short here), and the file's retry comes.
    mb.pipeline.claims.grace = 0
    mb.ledger.wake("raw/lonely.md", record.sha256, "retry")
    _drain(mb)
    record = mb.ledger.get_file("raw/lonely.md")
    assert record is not None and record.state == "ingested", record
    assert sum(_ingest_commits_by_sha(mb.root).values()) == 1


def test_an_unreachable_remote_claims_nothing_and_the_source_is_ingested_here(
        machines: tuple[Path, Machine, Machine], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Offline, nothing can be claimed: the source is ingested at once (machines reconcile on
    the next sync, as before claims existed), and the next sources do not try again for a while
    (a laptop on a train does not wait for a push timeout per source)."""
    remote, _ma, mb = machines
    away = tmp_path / "remote-away.git"
    remote.rename(away)
    with caplog.at_level("INFO", logger="wikiwright.door.sourceclaims"):
        for n in range(3):
            mb.ingest(f"offline-{n}.md", source_text(2 + n, "offline"))
    for n in range(3):
        record = mb.ledger.get_file(f"raw/offline-{n}.md")
        assert record is not None and record.state == "ingested", record
    paused = [r for r in caplog.records if "source claims paused" in r.getMessage()]
    assert len(paused) == 1, [r.getMessage() for r in caplog.records]
    away.rename(remote)


def _claimed(root: Path, namespace: str) -> set[str]:
    """The sha256s with a claim ref under ``namespace`` in the repository at ``root``."""
    out = git(root, "for-each-ref", "--format=%(refname)", namespace)
    return {ref.rsplit("/", 1)[1] for ref in out.split()}


def test_claims_whose_ingest_is_published_are_pruned_and_the_bytes_are_still_ingested_once(
        machines: tuple[Path, Machine, Machine]) -> None:
    """A claim's work is done once its ingest is published: A prunes the claims of its three
    published ingests on the remote (one push) and here, and B drops its own tracking copies
    of them; a claim B holds for bytes it has not ingested yet, and A's claim of a source not
    yet published, stay. The pruned bytes dropped again (on B, on A, under new names) are
    duplicates by the ledger: no claim, no second ingest commit anywhere (old code: every claim
    stays on the remote and in both repositories for good)."""
    remote, ma, mb = machines
    for machine in (ma, mb):
        machine.pipeline.claims.prune_every = 0  # every ingest looks for claims to prune
    early = {}
    for n in range(3):
        text = source_text(10 + n, "early widgets")
        ma.ingest(f"early-{n}.md", text)
        early[n] = hashlib.sha256(text.encode()).hexdigest()
    assert _claimed(remote, "refs/wikiwright/sources/") == set(early.values())
    ma.sync()  # A publishes its three ingests
    mb.sync()  # B learns them
    # B claims bytes it has not ingested yet: a source pending there.
    pending_text = source_text(20, "pending widgets")
    (mb.vault.raw / "pending.md").write_text(pending_text, encoding="utf-8")
    mb.registrar.register(mb.vault.raw / "pending.md")
    record = mb.ledger.get_file("raw/pending.md")
    assert record is not None and mb.pipeline.claims.wait_reason(record) is None  # B's claim won
    pending = hashlib.sha256(pending_text.encode()).hexdigest()
    ma.sync()  # A fetches B's claim

    # The grace since A saw its ingests published has passed (made short here); A's next
    # ingest, whose own claim stays (not yet published), prunes the three.
    ma.pipeline.claims.grace = 0
    later_text = source_text(21, "later widgets")
    ma.ingest("later.md", later_text)
    later = hashlib.sha256(later_text.encode()).hexdigest()
    assert _claimed(remote, "refs/wikiwright/sources/") == {pending, later}
    assert _claimed(ma.root, "refs/wikiwright/remotes/origin/sources/") == {pending, later}
    assert json.loads(ma.ledger.get_kv("source-claims:published", "{}")) == {}

    # B's tracking copies of the pruned claims go on B's own next look (the remote's are gone already).
    mb.pipeline.claims.grace = 0
    assert set(mb.pipeline.claims.prune()) == set(early.values())
    assert _claimed(mb.root, "refs/wikiwright/remotes/origin/sources/") == {pending}
    assert _claimed(remote, "refs/wikiwright/sources/") == {pending, later}

    # The same bytes again, after their claims are gone: duplicates, never a second ingest.
    mb.ingest("copy-of-early-0.md", source_text(10, "early widgets"))
    ma.ingest("copy-of-early-1.md", source_text(11, "early widgets"))
    for machine, name in ((mb, "raw/copy-of-early-0.md"), (ma, "raw/copy-of-early-1.md")):
        copy = machine.ledger.get_file(name)
        assert copy is not None and copy.state == "duplicate", copy
    assert not set(early.values()) & _claimed(remote, "refs/wikiwright/sources/")
    ma.sync()
    mb.sync()
    ma.sync()
    for root in (ma.root, mb.root):
        counts = _ingest_commits_by_sha(root)
        assert all(counts[sha] == 1 for sha in early.values()), counts


def test_a_sync_round_prunes_the_claims_its_push_published(machines: tuple[Path, Machine, Machine]) -> None:
    """A machine that only syncs (nothing new to claim) still prunes the claims of the ingests
    its rounds published, once the grace has passed (old code: only the next claim pruned, so
    a machine that stopped receiving files kept its claims on the remote for good)."""
    remote, ma, _mb = machines
    text = source_text(30, "synced widgets")
    ma.ingest("synced.md", text)
    sha = hashlib.sha256(text.encode()).hexdigest()
    assert _claimed(remote, "refs/wikiwright/sources/") == {sha}
    ma.syncer.claims.prune_every = 0
    ma.sync()  # published, and seen published: the grace starts
    assert _claimed(remote, "refs/wikiwright/sources/") == {sha}
    ma.syncer.claims.grace = 0  # the grace has passed (made short here)
    ma.sync()
    assert _claimed(remote, "refs/wikiwright/sources/") == set()
