"""Daily logs go into git in batches: one `logs: N session blocks` commit after a quiet period."""

from __future__ import annotations

from wikiwright.core.vault import Vault

from tests.helpers import daemon_log, git, start_daemon, wait_for

DAY = "# 2026-11-30\n\n## Session 09:15 UTC — test: exports\n\n- moved the cron job\n"
MORE = "\n## Session 11:40 UTC — test: billing\n\n- raised the limit\n\n## Note 12:00 UTC\n\n- lunch\n"


def test_daily_logs_are_committed_in_one_batch_after_a_quiet_period(
    vault: Vault, isolated_env: dict[str, str]
) -> None:
    env = {**isolated_env, "WIKIWRIGHT_GIT_COMMIT_LOGS_AFTER_QUIET_SECONDS": "1"}
    proc = start_daemon(vault.root, env)
    try:
        (vault.logs / "2026-11-29.md").write_text(DAY.replace("30", "29"))
        (vault.logs / "2026-11-30.md").write_text(DAY)
        with (vault.logs / "2026-11-30.md").open("a") as handle:
            handle.write(MORE)

        def committed() -> str:
            return git(vault.root, "log", "--format=%s", "--grep=Wikiwright-Operation: logs").strip()

        wait_for(committed, timeout=30, what="the daily logs committed")
        assert committed() == "logs: 3 session blocks"  # two logs, one commit; a Note is not a session
        files = git(vault.root, "show", "--format=", "--name-only", "HEAD").split()
        assert "logs/2026-11-29.md" in files and "logs/2026-11-30.md" in files
        assert git(vault.root, "status", "--porcelain", "--", "logs").strip() == ""
        # One more block later: the next batch counts only the new one.
        with (vault.logs / "2026-11-30.md").open("a") as handle:
            handle.write("\n## Session 16:00 UTC — test: docs\n\n- wrote the runbook\n")
        wait_for(lambda: committed().splitlines()[0] == "logs: 1 session block", timeout=30,
                 what="the second batch")
        assert proc.poll() is None, daemon_log(proc)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
