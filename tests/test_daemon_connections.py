"""A running daemon holds one connection to each database of its vault (issue 24).

Its jobs (ingest workers, the review watch and lint, consolidation, sync with a remote) and
the commands it serves for clients work on the daemon's one VaultContext: its door, its
ledger (the review store on the same connection), its catalogue, term index, cost ledger and
repository. Counted from ``/proc/self/fd`` with the daemon in this process, its jobs stepped
one by one (the daemon's loops are objects built in its ``__init__``), and from
``/proc/<pid>/fd`` of the real `wikiwright run` (old code: state.db 4, catalog.db 3; with a
model, a consolidation run left its model client's llm.db connection open every time).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from wikiwright.core.vault import Vault
from wikiwright.ingest.llm import CostLedger
from wikiwright.memory.dailylog import append_session

from tests.helpers import cli, daemon_in_process, daemon_log, git, start_daemon, wait_for
from tests.llm_server import ScriptedServer
from tests.model_helpers import reply
from tests.test_sync import sync_env

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

DATABASES = ("state.db", "catalog.db", "terms.db", "llm.db")


def _open_databases(pid: int | str, state: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = Path(fd.readlink())
        except OSError:
            continue  # closed meanwhile
        if target.parent == state and target.suffix == ".db":
            counts[target.name] += 1
    return counts


def _with_remote(tmp_path: Path, root: Path) -> Path:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(root, "remote", "add", "origin", str(remote))
    return remote


def _pushed(remote: Path) -> str:
    return subprocess.run(["git", "-C", str(remote), "log", "--format=%s", "main"], capture_output=True,
                          text=True).stdout


def _quiet_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Periods long enough that no job runs by itself during the test: the test steps them."""
    for name, value in {"WIKIWRIGHT_GIT_REMOTE": "origin", "WIKIWRIGHT_GIT_SYNC_INTERVAL_SECONDS": "3600",
                        "WIKIWRIGHT_LINT_REVIEW_POLL_SECONDS": "3600",
                        "WIKIWRIGHT_CONSOLIDATION_CHECK_INTERVAL_MINUTES": "60",
                        "WIKIWRIGHT_CONSOLIDATION_MIN_SESSIONS": "1", "WIKIWRIGHT_CONSOLIDATION_MIN_HOURS": "0",
                        "WIKIWRIGHT_WATCH_RESCAN_MINUTES": "60", "WIKIWRIGHT_GIT_HOUSEKEEPING_MINUTES": "60"}.items():
        monkeypatch.setenv(name, value)


def _step(daemon: object, *names: str) -> None:
    for name in names:
        loop = daemon.jobs[name]  # type: ignore[attr-defined]
        before = loop.runs
        loop.once()
        assert loop.runs == before + 1, name


def _ingested(daemon: object, rel: str) -> bool:
    record = daemon.ctx.ledger.get_file(rel)  # type: ignore[attr-defined]
    return record is not None and record.state == "ingested"


def _served(caplog: pytest.LogCaptureFixture, command: str) -> bool:
    """The daemon ran ``command`` for a client (not declined, not run in the client's process)."""
    return any(f"`{command}` for a client: exit" in record.getMessage() for record in caplog.records)


def test_an_offline_daemon_with_a_remote_holds_one_connection_to_each_database(
        vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="wikiwright.runtime.handoff")
    remote = _with_remote(tmp_path, vault.root)
    _quiet_jobs(monkeypatch)
    CostLedger(vault.state / "llm.db").close()  # spend from an earlier run: status reads it
    append_session(vault.logs, "- 🔴 Deploys go through the staging gate", label="test")
    before = _open_databases("self", vault.state)
    assert sum(before.values()) == 0, before  # nothing of the test's own is open
    with daemon_in_process(vault) as daemon:
        (vault.raw / "tides.md").write_text("# Tides\n\nThe harbour office prints tide tables every week.\n")
        wait_for(lambda: _ingested(daemon, "raw/tides.md"), timeout=60, what="the ingest")
        _step(daemon, "sync", "lint", "review-watch", "consolidation", "logs-commit", "rescan", "sync")
        assert "ingest: Tides" in _pushed(remote)
        # Commands handed to the daemon run on its context too (status reads llm.db's spend).
        for command in (["status"], ["lint"], ["ask", "tide tables"], ["consolidate", "--check"]):
            done = cli(*command, "--vault", str(vault.root))
            assert done.returncode in (0, 1) and _served(caplog, command[0]), (command, done.stderr)
        counts = _open_databases("self", vault.state)
        assert {name: counts[name] for name in DATABASES} == dict.fromkeys(DATABASES, 1), counts
        assert set(counts) <= set(DATABASES), counts
    assert sum(_open_databases("self", vault.state).values()) == 0  # the context closed each once


def test_a_daemon_with_a_model_shares_its_cost_ledger_with_every_job(
        vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="wikiwright.runtime.handoff")
    _with_remote(tmp_path, vault.root)
    _quiet_jobs(monkeypatch)
    ingest = reply({"op": "create_page", "page": "tide-tables", "type": "concept", "title": "Tide tables",
                    "summary": "Printed weekly.", "body": "# Tide tables\n\nPrinted every week.\n"},
                   title="Tides", summary="Tide tables are printed weekly.")
    with ScriptedServer([], default=ingest) as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        append_session(vault.logs, "- 🔴 Deploys go through the staging gate", label="test")
        with daemon_in_process(vault) as daemon:
            wait_for(daemon.model_ready.is_set, timeout=60, what="the model client to load")
            (vault.raw / "tides.md").write_text("# Tides\n\nThe harbour office prints tide tables every week.\n")
            wait_for(lambda: _ingested(daemon, "raw/tides.md"), timeout=60, what="the model's ingest")
            # Consolidation with a model makes a model client each run (its reply here is not
            # what consolidation asks for: the run fails, the connection question stays).
            _step(daemon, "consolidation", "lint", "consolidation", "sync")
            for command in (["status"], ["ask", "tide tables"]):
                done = cli(*command, "--vault", str(vault.root))
                assert _served(caplog, command[0]), (command, done.stderr)
            counts = _open_databases("self", vault.state)
            assert counts["state.db"] == 1 and counts["catalog.db"] == 1 and counts["llm.db"] == 1, counts
            assert counts["terms.db"] <= 1, counts  # the model plans: the offline term index may stay shut
            assert len(server.requests) >= 2  # the ingest and at least one consolidation call


def test_a_syncing_daemon_holds_one_connection_to_each_database(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    root = tmp_path / "Wiki"
    subprocess.run([sys.executable, "-m", "wikiwright", "init", "--no-default", str(root)], check=True,
                   capture_output=True)
    remote = _with_remote(tmp_path, root)
    proc = start_daemon(root, sync_env(isolated_env, interval=0.5))
    try:
        (root / "raw" / "tides.md").write_text("# Tides\n\nThe harbour office prints tide tables every week.\n")

        def settled() -> bool:
            assert proc.poll() is None, daemon_log(proc)
            return "ingest: Tides" in _pushed(remote)

        wait_for(settled, timeout=60, interval=0.2, what=f"the ingest to be pushed\n{daemon_log(proc)[-3000:]}")
        status = cli("status", "--vault", str(root), env=sync_env(isolated_env, interval=0.5))
        assert status.returncode == 0, status.stderr
        counts = _open_databases(proc.pid, root / ".wikiwright")
        assert counts["state.db"] == 1, counts
        assert counts["catalog.db"] == 1, counts
        assert counts["terms.db"] == 1, counts
        assert counts["llm.db"] <= 1, counts
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert os.path.exists(root / ".wikiwright" / "state.db")


def test_the_periodic_jobs_are_built_with_the_daemon_and_scheduled_coalesced(vault: Vault) -> None:
    """The daemon's jobs are objects built in its __init__ (a test steps one: a failing job is
    logged, never raised); started, APScheduler runs each every period, coalesced (a laptop
    asleep for five periods catches up with one run), never two runs at once."""
    from wikiwright.core.config import load_config
    from wikiwright.runtime.context import VaultContext
    from wikiwright.runtime.daemon import Daemon, PeriodicJob

    ran: list[float] = []

    def broken() -> None:
        raise RuntimeError("a job's bug")

    with VaultContext(load_config(vault.root), vault) as ctx:
        daemon = Daemon(ctx, extra_jobs=[PeriodicJob("tick", 60.0, lambda: ran.append(time.time())),
                                         PeriodicJob("broken", 60.0, broken)])
        assert {"rescan", "git-housekeeping", "logs-commit", "tick", "broken"} <= set(daemon.jobs)
        assert [w.name for w in daemon.workers] == [f"worker-{n + 1}" for n in range(ctx.config.ingest.workers)]
        assert not ctx.opened("ledger") and not ctx.opened("door")  # building the daemon opened nothing
        daemon.jobs["tick"].once()
        daemon.jobs["broken"].once()  # logged, not raised
        assert len(ran) == 1 and daemon.jobs["broken"].runs == 1
        daemon._start_scheduler()
        try:
            scheduled = {job.id: job for job in daemon.scheduler.get_jobs()}
            assert set(scheduled) == set(daemon.jobs)
            tick = scheduled["tick"]
            assert (tick.coalesce, tick.max_instances, tick.misfire_grace_time) == (True, 1, None)
            assert tick.trigger.interval.total_seconds() == 60.0
        finally:
            daemon.scheduler.shutdown(wait=False)
        daemon.stop_requested.set()
        daemon.jobs["tick"].once()  # stopped: runs nothing
        assert len(ran) == 1


def test_the_context_s_one_state_connection_takes_every_table_group_in_one_nestable_atomic(vault: Vault) -> None:
    """The ledger, notices and the review store are table groups on the context's one state.db
    connection: one atomic() holds them all; a nested one is a savepoint of it."""
    from wikiwright.core.config import load_config
    from wikiwright.runtime.context import VaultContext
    from wikiwright.wiki.reviewfile import proposal

    class Undone(Exception):
        pass

    with VaultContext(load_config(vault.root), vault) as ctx:
        item = proposal("held-back", "a proposal written with the ledger", ())
        with pytest.raises(Undone), ctx.atomic():
            ctx.ledger.set_kv("outer", "1")
            ctx.reviews.add(item)
            ctx.ledger.set_notice("test", "said inside")
            raise Undone
        assert ctx.ledger.get_kv("outer") == "" and ctx.reviews.get(item.id) is None
        assert "test" not in {key for key, _, _ in ctx.ledger.notices()}
        with ctx.atomic():
            ctx.ledger.set_kv("outer", "kept")
            with pytest.raises(Undone), ctx.atomic():
                ctx.ledger.set_kv("inner", "undone")
                raise Undone
            ctx.reviews.add(item)
        assert ctx.ledger.get_kv("outer") == "kept" and ctx.ledger.get_kv("inner") == ""
        assert ctx.reviews.get(item.id) is not None
        assert _open_databases("self", vault.state)["state.db"] == 1


def _count_during(monkeypatch: pytest.MonkeyPatch, owner: type, name: str, state: Path,
                  seen: list[Counter[str]]) -> None:
    """Count the open databases each time ``owner.name`` runs (then run it): a doctor check or
    the revert's recomputation, while whatever the run opened for itself is still open."""
    original = getattr(owner, name)

    def counted(self: object, *args: object, **kwargs: object) -> object:
        seen.append(_open_databases("self", state))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


def test_a_doctor_command_holds_one_connection_to_state_db(
        vault: Vault, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`wikiwright doctor` (its handler run in this process, as a command runs it) checks on its
    context's ledger, doctor's own tables on that connection (old code: a ledger and a doctor
    state of its own, two connections to state.db, its context's parts unused)."""
    from wikiwright.cli.main import main
    from wikiwright.upkeep.doctor import Doctor

    seen: list[Counter[str]] = []
    _count_during(monkeypatch, Doctor, "_person_lines", vault.state, seen)
    for argv in (["doctor"], ["doctor", "--no-repair", "--full"]):
        assert main([*argv, "--vault", str(vault.root)]) == 0, capsys.readouterr()
        assert "all invariants hold" in capsys.readouterr().out
    assert [counts["state.db"] for counts in seen] == [1, 1], seen
    assert sum(_open_databases("self", vault.state).values()) == 0  # the command's context closed them


def test_a_revert_in_a_process_that_ingests_uses_its_term_index(services: object) -> None:
    """Revert recomputes the offline engine's pages on the process's term index, the one its
    planner records into (old code: a second connection to terms.db for the revert)."""
    from wikiwright.history.regenerate import Regenerator
    from wikiwright.history.revert import revert_ingest

    ctx = services.ctx  # type: ignore[attr-defined]
    for name, text in (("tides.md", "# Tides\n\nThe Harbour Office prints tide tables every week.\n"),
                       ("ferries.md", "# Ferries\n\nThe Harbour Office posts ferry times beside the tide tables.\n")):
        services.drop(name, text)  # type: ignore[attr-defined]
    assert [r.state for r in services.drain()] == ["ingested", "ingested"]  # type: ignore[attr-defined]
    assert ctx.opened("terms")
    seen: list[Counter[str]] = []
    with pytest.MonkeyPatch.context() as patch:
        _count_during(patch, Regenerator, "run", ctx.vault.state, seen)
        result = revert_ingest(ctx.door, ctx.terms, "raw/ferries.md")
    assert result.commit and len(seen) == 1
    assert {name: seen[0][name] for name in ("state.db", "catalog.db", "terms.db")} == \
        {"state.db": 1, "catalog.db": 1, "terms.db": 1}, seen


def test_a_stop_waits_for_a_periodic_job_s_run_before_the_context_closes(vault: Vault) -> None:
    """A stop asked while a periodic job runs (a sync round, consolidation) lets that run
    finish on an open context before the daemon lets the vault go. Old code shut the
    scheduler down without waiting: `run` returned, the context closed under the running
    round, and its operation was cut off like a crash (a doctor run after the stop red)."""
    from wikiwright.core.config import load_config
    from wikiwright.runtime.context import VaultContext
    from wikiwright.runtime.daemon import Daemon, PeriodicJob

    events: list[str] = []
    started, go_on = threading.Event(), threading.Event()

    def long_round() -> None:
        if started.is_set():
            return
        started.set()
        daemon.stop_requested.set()  # the stop arrives while this run is under way
        go_on.wait(1.0)  # the round's remaining work (a push, say): still running as the stop is handled
        events.append(f"round wrote {ctx.ledger.get_kv('wikiwright-test') == ''}")

    with VaultContext(load_config(vault.root), vault) as ctx:
        daemon = Daemon(ctx, extra_jobs=[PeriodicJob("round", 0.2, long_round)])
        daemon.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        code = daemon.run()
        events.append("run returned")
    go_on.set()
    assert code == 0 and started.is_set()
    assert events[:2] == ["round wrote True", "run returned"], events
