"""Issue 10: files in raw/, their names and their secrets are untrusted input.

Links anywhere on a source's path, hard links, names that are any bytes, hidden folders,
secrets in sources, a full disk and `ingest DIR`, each on the real pipeline, CLI or daemon.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import unicodedata
from pathlib import Path

import pytest
from wikiwright.core.config import IngestConfig
from wikiwright.ingest.llm import LLMClient
from wikiwright.intake.ledger import FINAL_STATES
from wikiwright.intake.names import disk_name, ledger_name
from wikiwright.runtime.status import gather
from wikiwright.upkeep.doctor import run_doctor
from wikiwright.wiki.pages import parse_page

from tests.conftest import Services, open_services
from tests.fault_tools import launch, ledger_rows, stop, wait_settled
from tests.helpers import cli, daemon_log, git, wait_for
from tests.llm_server import ScriptedServer
from tests.model_helpers import reply, use_model
from tests.test_faults_disk import _fill
from tests.test_untrusted_model import unsafe_spots

OUTSIDE_TEXT = "# Outside\n\nThis text lives outside the vault and must never be ingested by anyone.\n"


def _outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir(exist_ok=True)
    (folder / "a.md").write_text(OUTSIDE_TEXT)
    return folder


def _wiki_text(root: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in (root / "wiki").rglob("*.md"))


# -- item 1: links anywhere on the path, hard links, the one-shot CLI -------------------------

def test_a_folder_swapped_for_a_link_is_never_followed(services: Services, tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    notes = services.vault.raw / "notes"
    # Queued while raw/notes was a real folder, then the folder is swapped for a link to a
    # folder outside holding the very same bytes: the read must refuse the path, not follow it.
    services.drop("notes/a.md", OUTSIDE_TEXT)
    notes.rename(services.vault.raw / "notes-moved")
    notes.symlink_to(outside, target_is_directory=True)
    results = services.drain()
    assert [(r.state, r.detail.split(":")[0]) for r in results] == [("quarantined", "symlink")], results
    # The watcher seeing a file under a linked folder records it as quarantined too.
    (services.vault.raw / "linked").symlink_to(outside, target_is_directory=True)
    assert services.registrar.register(services.vault.raw / "linked" / "a.md") == "quarantined"
    record = services.ledger.get_file("raw/linked/a.md")
    assert record is not None and record.reason.startswith("symlink:"), record
    assert "outside the vault" not in _wiki_text(services.vault.root)


def test_hard_links_are_quarantined_unless_allowed(services: Services, tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    os.link(outside / "a.md", services.vault.raw / "hard.md")
    assert services.registrar.register(services.vault.raw / "hard.md") == "quarantined"
    record = services.ledger.get_file("raw/hard.md")
    assert record is not None and record.reason.startswith("hard-link:") and "allow_hard_links" in record.reason
    assert "outside the vault" not in _wiki_text(services.vault.root)
    services.close()  # started again with allow_hard_links set: the wiring reads it from the config
    allowing = open_services(services.config.replace(ingest=IngestConfig(allow_hard_links=True)), services.vault)
    try:
        assert allowing.registrar.register(services.vault.raw / "hard.md") == "pending"
        assert [r.state for r in allowing.drain()] == ["ingested"]
    finally:
        allowing.close()


def test_one_shot_ingest_refuses_links_like_the_daemon(vault_root: Path, tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    (vault_root / "raw" / "link.md").symlink_to(outside / "a.md")
    done = cli("ingest", "--vault", str(vault_root), str(vault_root / "raw" / "link.md"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "raw/link.md: quarantined — symlink" in done.stdout, done.stdout
    assert ledger_rows(vault_root)["raw/link.md"][0] == "quarantined"
    # A link outside raw/ named on the command line is refused, not copied in.
    (tmp_path / "outside-link.md").symlink_to(outside / "a.md")
    done = cli("ingest", "--vault", str(vault_root), str(tmp_path / "outside-link.md"))
    assert done.returncode == 1 and "refused" in done.stdout and "symbolic link" in done.stdout, done.stdout
    assert sorted(p.name for p in (vault_root / "raw").iterdir()) == ["link.md"]
    assert "outside the vault" not in _wiki_text(vault_root)
    assert "Traceback" not in done.stderr


@pytest.fixture
def vault_root(tmp_path: Path) -> Path:
    root = tmp_path / "Wiki"
    assert cli("init", "--no-default", str(root)).returncode == 0
    return root


# -- item 3: the offline engine and remote images -------------------------------------------

README = """# Widget

[![build](https://img.shields.io/badge/build-passing-green.svg)](https://ci.example/widget)
![logo](https://cdn.example/logo.png)

Widget is a small tool that renders charts from tables <img src="https://tracker.example/p.png"> quickly.
It reads CSV files and writes SVG charts <script>alert(1)</script> for the web.
See the guide <a href="javascript:alert(1)">here</a> and ![[/etc/passwd]] for the details.
"""


def test_offline_engine_copies_no_remote_image_or_script_from_a_source(services: Services) -> None:
    services.drop("README.md", README)
    # A second source sharing its terms: the concept pages quote sentences from both.
    services.drop("widget-notes.md", "# Widget notes\n\nWidget renders charts from tables <img src=x "
                  "onerror=alert(1)> every day for the team.\nThe Widget charts use SVG files "
                  "![t](https://evil.example/t.png) in the web reports.\n")
    assert [r.state for r in services.drain()] == ["ingested", "ingested"]
    root = services.vault.root
    leaks = {p.name: unsafe_spots(p.read_text()) for p in (root / "wiki").rglob("*.md") if unsafe_spots(p.read_text())}
    assert leaks == {}
    shared = [p for p in (root / "wiki").glob("*.md") if "renders charts" in p.read_text()]
    assert shared, "no concept page quotes the sources: the test would not cover them"
    source = (services.vault.sources_dir / "src-readme.md").read_text()
    assert "tracker.example/p.png" in source  # kept as a plain link, not an image
    assert "## Cleaned" in source and "remote image" in source


# -- item 4: file names are data ----------------------------------------------------------------

def _fuzz_names(count: int) -> list[bytes]:
    rng = random.Random(20261130)
    names: list[bytes] = []
    allowed = [b for b in range(1, 256) if b != 0x2F]
    while len(names) < count:
        size = rng.choice([1, 2, 5, 17, 60, 128, 200, 251, 255]) if rng.random() < 0.5 else rng.randint(1, 255)
        name = bytes(rng.choice(allowed) for _ in range(size))
        if name not in (b".", b"..") and name not in names:
            names.append(name)
    fixed = [
        "café.md", unicodedata.normalize("NFD", "café.md"),
        "Ångström notes.md", unicodedata.normalize("NFD", "Ångström notes.md"),
        "a\nb.md", "a\\nb.md", "tab\there.md", "esc\x1b[31mred.md", "bell\x07.md", "cr\rline.md", "\u2028sep.md",
        "-rf.md", "--help.md", "-n", "x" * 252 + ".md", "é" * 126 + ".m", "a`b`<img src=x onerror=alert(1)>.md",
        "\\xff.md",
    ]
    names += [n.encode() for n in fixed]
    names += [b"\xff.md", b"bad\xc3(.md", b"\x80\x81\x82", b"lat\xe9.md"]
    return names


def test_file_names_are_data_every_file_one_state_and_doctor_clean(services: Services) -> None:
    names = _fuzz_names(30)
    raw = os.fsencode(services.vault.raw)
    for n, name in enumerate(names):
        path = raw + b"/" + name
        with open(path, "wb") as handle:
            # Two files in three are empty (quarantined at once); the others go all the way to a
            # page, a log.md entry and a commit. Every kind of name is in both groups.
            if n % 3 == 0:
                handle.write(f"# Note {n}\n\nThe quick brown fox number {n} jumps over the lazy dog.\n".encode())
        services.registrar.register(Path(os.fsdecode(path)))
    services.drain()
    rows = {r.path: r for r in services.ledger.files(kind="raw")}
    on_disk = {"raw/" + os.fsdecode(name) for name in names}
    assert {disk_name(path) for path in rows} == on_disk  # one row per file, found again by its name
    assert len(rows) == len(names)
    assert all(r.state in FINAL_STATES for r in rows.values()), [(r.path, r.state, r.reason) for r in rows.values()
                                                                 if r.state not in FINAL_STATES]
    assert all(ledger_name(disk_name(path)) == path for path in rows)
    assert all("\n" not in path and "\r" not in path for path in rows)
    ingested = [r for r in rows.values() if r.state == "ingested"]
    assert len(ingested) >= len(names) // 4
    # A name adds no line to log.md: every line is an entry heading or one of its details.
    log_md = (services.vault.wiki / "log.md").read_text()
    body = parse_page(log_md).body
    entries = body[body.index("\n## ["):]
    assert all(line == "" or line.startswith(("## [", "- ")) for line in entries.splitlines()), entries
    assert body.count("\n## [") >= len(ingested)
    for page in services.vault.wiki.rglob("*.md"):
        parsed = parse_page(page.read_text(encoding="utf-8"))
        # What Obsidian renders: the body, and the title and summary (index.md shows them).
        # source_path / sources keep the file's recorded name as data (properties are not HTML).
        shown = [parsed.body, str(parsed.meta.get("title", "")), str(parsed.meta.get("summary", ""))]
        assert not [spot for text in shown for spot in unsafe_spots(text)], page
    report = run_doctor(services.config, services.vault, services.ledger, services.repo, repair=False)
    assert report.ok and report.lost == 0, [c for c in report.checks if not c.ok]
    # The CLI on the same vault: doctor clean, status lists the names escaped on one line each.
    doctor = cli("doctor", "--vault", str(services.vault.root))
    assert doctor.returncode == 0 and "all invariants hold" in doctor.stdout, doctor.stdout + doctor.stderr
    status = cli("status", "--vault", str(services.vault.root))
    assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr


def test_the_daemon_records_any_name_skips_hidden_folders_and_logs_plain_words(vault_root: Path,
                                                                                tmp_path: Path) -> None:
    root = vault_root
    proc = launch(root)
    try:
        raw = os.fsencode(root / "raw")
        with open(raw + b"/bad\xff name.md", "wb") as handle:
            handle.write(b"# Bad bytes\n\nA file whose name is not valid UTF-8 at all, but whose text is fine.\n")
        (root / "raw" / "two\nlines.md").write_text("# Two lines\n\nA name with a newline in it must stay one line.\n")
        (root / "raw" / "passwd").write_text("# Passwords policy\n\nWe rotate the shared passwords every month.\n")
        staged = tmp_path / "moved.md"
        staged.write_text("# Hidden\n\nMoved into a hidden folder: never ingested, like rescans skip it.\n")
        (root / "raw" / ".trash").mkdir()
        os.rename(staged, root / "raw" / ".trash" / "moved.md")
        wait_settled(root, ["raw/bad\\xff name.md", "raw/two\\nlines.md", "raw/passwd"], proc=proc)
        rows = ledger_rows(root)
        assert rows["raw/bad\\xff name.md"][0] == "ingested" and rows["raw/two\\nlines.md"][0] == "ingested"
        assert not [path for path in rows if ".trash" in path]
        log = daemon_log(proc)
        assert "Traceback" not in log and "cannot record" not in log, log
        assert "raw/passwd" in log and "[REDACTED]" not in log, log  # a file name is not a secret
    finally:
        assert stop(proc) == 0
    log_md = (root / "wiki" / "log.md").read_text()
    assert "two\\nlines" in log_md and "\nlines.md" not in log_md
    doctor = cli("doctor", "--vault", str(root))
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "skipped (in a hidden folder)" in doctor.stdout


# -- item 5: secrets never leave the machine ----------------------------------------------------

SECRETS = {
    "aws-key": "AKIAQWERTYUIOPASDFGH",
    "private-key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAsecretkeymaterialXYZ0123456789\n"
                   "-----END RSA PRIVATE KEY-----",
    "github-token": "ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5",
    "gitlab-token": "glpat-Zx9Yw8Vu7Ts6Rq5Po4Nm",
    "slack-token": "xoxb-123456789012-AbCdEfGhIjKl",
    "openai-key": "sk-proj-Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8",
    "anthropic-key": "sk-ant-api03-Z9x8C7v6B5n4M3l2K1j0H9g8F7d6S5a4",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "password": "Tr0ub4dor&3horse",
    "connection-string": "S3cretPassw0rd",
}
SECRET_SOURCE = f"""# Ops handover

The billing service runs on three hosts behind the gateway and is deployed every Tuesday.
AWS access key: {SECRETS["aws-key"]} for the deploy role.

{SECRETS["private-key"]}

The CI uses {SECRETS["github-token"]} and the mirror uses {SECRETS["gitlab-token"]}.
Alerts post with {SECRETS["slack-token"]}; the summariser calls {SECRETS["openai-key"]} and
{SECRETS["anthropic-key"]}. Session cookie: {SECRETS["jwt"]}.
The admin password={SECRETS["password"]} is rotated monthly.
The database is postgres://billing:{SECRETS["connection-string"]}@db.internal:5432/billing for now.
"""


def test_no_secret_reaches_a_prompt_a_page_a_commit_or_a_log(services: Services,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    values = [*SECRETS.values(), "MIIEowIBAAKCAQEAsecretkeymaterial"]
    with ScriptedServer([reply(title="Ops handover", summary="How billing is run."), {"answer": "ok"}]) as server:
        use_model(services, server)
        services.drop("ops.md", SECRET_SOURCE)
        assert [r.state for r in services.drain()] == ["ingested"]
        # Every other room's prompt passes the same guard (ask, consolidation, prose check).
        client = LLMClient(services.config, services.vault, costs=services.ctx.costs)
        client.complete_json(purpose="ask", system="Answer.", user=f"What is {SECRETS['aws-key']}?",
                             schema={"type": "object"})
        client.close()
        prompts = json.dumps(server.requests)
    root = services.vault.root
    history = git(root, "log", "-p", "--all", "--format=%B")
    pages = _wiki_text(root)
    logs = caplog.text
    for value in values:
        assert value not in prompts, value
        assert value not in pages, value
        assert value not in history, value
        assert value not in logs, value
    assert "[REDACTED:aws-key]" in prompts and "[REDACTED:private-key]" in prompts
    source = (services.vault.sources_dir / "src-ops.md").read_text()
    kinds = parse_page(source).meta["secrets"]
    assert {"aws-key", "private-key", "github-token", "gitlab-token", "slack-token", "openai-key", "anthropic-key",
            "jwt", "password", "connection-string"} <= set(kinds)
    assert "## Secrets" in source
    notices = [n["message"] for n in gather(services.config, services.vault)["notices"]]
    assert any("raw/ops.md contained secrets" in n and "aws-key" in n for n in notices), notices


# -- item 6: disk full ----------------------------------------------------------------------------

def test_a_full_disk_shows_in_status_with_the_waiting_files(tiny_fs: Path) -> None:
    mount_point = tiny_fs
    root = mount_point / "Wiki"
    assert cli("init", "--no-default", str(root)).returncode == 0
    proc = launch(root)
    staged = []
    for n in range(3):
        path = root / "raw" / f".wait-{n}.md.part"
        path.write_text(f"# Waiting {n}\n\nA note that arrives while the disk is full, number {n}.\n")
        staged.append(path)
    filler = _fill(mount_point)
    try:
        for n, path in enumerate(staged):
            os.rename(path, root / "raw" / f"wait-{n}.md")
        wait_for(lambda: "cannot record" in daemon_log(proc), timeout=30, what="the retry warning")
        status = cli("status", "--vault", str(root))
        assert status.returncode == 0, status.stderr
        assert "disk full" in status.stdout and "3 file(s) in raw/ wait" in status.stdout, status.stdout
        assert "3 pending" in status.stdout, status.stdout
        for n in range(3):
            assert f"raw/wait-{n}.md [pending] — waiting: the disk is full" in status.stdout
    finally:
        filler.unlink()
    wait_settled(root, [f"raw/wait-{n}.md" for n in range(3)], timeout=40, proc=proc)
    assert {ledger_rows(root)[f"raw/wait-{n}.md"][0] for n in range(3)} == {"ingested"}
    assert "disk full" not in cli("status", "--vault", str(root)).stdout
    assert stop(proc) == 0


# -- item 7: ingest DIR ---------------------------------------------------------------------------

def test_ingest_a_folder_takes_its_files_recursively_with_the_watchers_skips(vault_root: Path,
                                                                             tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / ".hidden").mkdir()
    (docs / "a.md").write_text("# Alpha\n\nThe first document of the folder, about alpha things.\n")
    (docs / "sub" / "b.md").write_text("# Beta\n\nThe second document, one folder down, about beta things.\n")
    (docs / ".hidden" / "c.md").write_text("# Hidden\n\nNever taken.\n")
    (docs / "d.tmp").write_text("temporary")
    done = cli("ingest", "--vault", str(vault_root), str(docs))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = ledger_rows(vault_root)
    assert rows["raw/docs/a.md"][0] == "ingested" and rows["raw/docs/sub/b.md"][0] == "ingested", rows
    assert not [p for p in rows if "hidden" in p or p.endswith(".tmp")]
    # A folder already inside raw/ is ingested in place.
    inbox = vault_root / "raw" / "inbox"
    inbox.mkdir()
    (inbox / "e.md").write_text("# Epsilon\n\nA document dropped in a folder of raw/, ingested in place.\n")
    done = cli("ingest", "--vault", str(vault_root), str(inbox))
    assert done.returncode == 0 and "raw/inbox/e.md: ingested" in done.stdout, done.stdout + done.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    done = cli("ingest", "--vault", str(vault_root), str(empty))
    assert done.returncode == 1 and "no files to ingest" in done.stdout and "Traceback" not in done.stderr
    shutil.rmtree(empty)


def test_ledger_names_round_trip() -> None:
    for name in ["plain.md", "a\nb", "a\\nb", "\udcff.md", "\\xff.md", "\x85c1", "\u2028", "tab\t", "\\"]:
        recorded = ledger_name(name)
        assert disk_name(recorded) == name
        assert recorded.isprintable() or "\\" in recorded
    assert len({ledger_name(n) for n in ["a\nb", "a\\nb", "\udcff", "\\xff", "\x85", "\\x85"]}) == 6


def test_one_secret_table_for_sources_prompts_and_logs() -> None:
    from wikiwright.core.logsetup import redact as log_redact
    from wikiwright.core.secrets import scan

    text, kinds = scan(SECRET_SOURCE + "\nspring.datasource.password=hunter2hunter2\n")
    assert {"aws-key", "private-key", "github-token", "gitlab-token", "slack-token", "openai-key", "anthropic-key",
            "jwt", "password", "connection-string"} <= set(kinds)
    assert not [v for v in [*SECRETS.values(), "hunter2hunter2"] if v in text]
    assert not [v for v in SECRETS.values() if v in log_redact(SECRET_SOURCE, [])]
    # The log redactor matches secrets, not words: file names and prose stay as they are.
    for line in ("raw/passwd: ingested (passwd)", "raw/password.md: ingested", "Use the token bucket; tokens in 120",
                 "the password reset page", "secret-santa.md: ingested"):
        assert log_redact(line, []) == line, line


def test_a_daily_log_holding_a_secret_stays_out_of_git(services: Services) -> None:
    from wikiwright.memory.logcommit import commit_quiet_logs

    logs = services.vault.logs
    (logs / "2026-11-29.md").write_text(f"## Session 10:00 UTC\n- deployed with {SECRETS['aws-key']}\n")
    (logs / "2026-11-30.md").write_text("## Session 11:00 UTC\n- all fine today\n")
    door = services.pipeline.door
    assert commit_quiet_logs(door, 0.0, clock=lambda: 4e9) is not None
    tracked = git(services.vault.root, "ls-files", "logs").split()
    assert tracked == ["logs/2026-11-30.md"]
    assert SECRETS["aws-key"] not in git(services.vault.root, "log", "-p", "--all")
    notices = [m for key, m, _ in services.ledger.notices() if key == "log-secrets"]
    assert notices and "logs/2026-11-29.md (aws-key)" in notices[0]
