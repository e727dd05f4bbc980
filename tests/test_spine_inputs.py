"""Bad and awkward inputs through the real Registrar + Pipeline (issue 2, "Bad input").

Every test checks three things: the state the ledger recorded, the reason text that
``wikiwright status`` shows for it (``status.gather`` is what the CLI renders; one test runs
the real CLI), and that the file in raw/ is still there, byte for byte.
"""

from __future__ import annotations

import hashlib
import os
import random
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from wikiwright.core.config import Config, IngestConfig, WatchConfig
from wikiwright.core.vault import Vault
from wikiwright.intake.watch import StabilityTracker
from wikiwright.runtime.status import gather
from wikiwright.wiki.pages import parse_page, slugify

from tests.conftest import Services, open_services
from tests.helpers import cli, git, ingest_commits

# -- helpers ----------------------------------------------------------------------------


def snapshot(raw: Path) -> dict[str, object]:
    """What raw/ holds: bytes of files, targets of links, the kind of anything else."""
    found: dict[str, object] = {}
    for path in sorted(raw.rglob("*")):
        rel = path.relative_to(raw).as_posix()
        if path.is_symlink():
            found[rel] = ("link", os.readlink(path))
        elif path.is_fifo():
            found[rel] = ("fifo",)
        elif path.is_file():
            found[rel] = path.read_bytes()
    return found


def shown(services: Services, rel: str) -> tuple[str, str]:
    """(state, reason) for ``rel`` as ``wikiwright status`` reports it."""
    data = gather(services.config, services.vault)
    for group in ("problems", "pending", "duplicates"):
        for row in data[group]:
            if row["path"] == rel:
                return row.get("state", "duplicate"), row["reason"]
    record = services.ledger.get_file(rel)
    assert record is not None, f"{rel} has no recorded state at all"
    return record.state, record.reason


def page_for(services: Services, rel: str) -> Path:
    record = services.ledger.get_file(rel)
    assert record is not None and record.page, f"{rel} has no page"
    return services.vault.wiki / f"{record.page}.md"


def wiki_text(vault: Vault) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(vault.wiki.rglob("*.md")))


@pytest.fixture
def small_limit(config: Config, vault: Vault) -> Iterator[Services]:
    """Services with ingest.max_source_bytes = 200 (a layer replaced, as a user's config would)."""
    built = open_services(config.replace(ingest=IngestConfig(max_source_bytes=200)), vault)
    yield built
    built.close()


def assert_quarantined(services: Services, rel: str, code: str, words: str) -> None:
    state, reason = shown(services, rel)
    assert state == "quarantined", (rel, state, reason)
    assert reason.startswith(f"{code}:"), reason
    assert words in reason, reason


# -- empty, binary, NUL -----------------------------------------------------------------


@pytest.mark.parametrize("data", [b"", b"  \n\t\r\n   \n"], ids=["empty", "whitespace-only"])
def test_empty_or_whitespace_file_is_quarantined_as_empty(services: Services, data: bytes) -> None:
    services.drop("blank.md", data)
    before = snapshot(services.vault.raw)
    results = services.drain()
    assert [r.state for r in results] == ["quarantined"]
    assert_quarantined(services, "raw/blank.md", "empty", "empty or whitespace only")
    assert ingest_commits(services.vault.root) == []
    assert snapshot(services.vault.raw) == before


def test_binary_file_with_nul_bytes_is_quarantined(services: Services) -> None:
    services.drop("data.bin", random.Random(7).randbytes(4096) + b"\x00\x00")
    before = snapshot(services.vault.raw)
    services.drain()
    assert_quarantined(services, "raw/data.bin", "binary", "NUL bytes")
    assert ingest_commits(services.vault.root) == []
    assert snapshot(services.vault.raw) == before


def test_binary_file_without_nul_bytes_is_quarantined_as_undecodable(services: Services) -> None:
    # High bytes only: not UTF-8, and as Latin-1 a quarter of them are control characters.
    services.drop("noise.txt", bytes(range(0x80, 0x100)) * 16)
    before = snapshot(services.vault.raw)
    services.drain()
    assert_quarantined(services, "raw/noise.txt", "undecodable", "neither UTF-8, UTF-16 nor Latin-1")
    assert snapshot(services.vault.raw) == before


def test_text_with_nul_bytes_is_quarantined_not_mangled(services: Services) -> None:
    services.drop("notes.txt", b"The first line is fine.\nThen\x00a NUL byte appears.\n")
    before = snapshot(services.vault.raw)
    services.drain()
    assert_quarantined(services, "raw/notes.txt", "binary", "contains NUL bytes")
    assert "NUL byte appears" not in wiki_text(services.vault)
    assert snapshot(services.vault.raw) == before


def test_broken_pdf_is_quarantined_as_unreadable(services: Services) -> None:
    services.drop("scan.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< >>\nendobj\n")
    services.drain()
    assert_quarantined(services, "raw/scan.pdf", "unreadable", "is not a readable PDF")


# -- encodings ------------------------------------------------------------------------

FRENCH = "Le café crème de la brasserie coûte trois euros. Le garçon a dit très bien, à bientôt.\n"
MIXED = "# Naïve façade\n\nThe naïve façade of the Zürich office faces the lake. Prices rose in 2024.\n"


@pytest.mark.parametrize(
    ("name", "data", "encoding", "expected"),
    [
        ("francais.txt", FRENCH.encode("latin-1"), "cp1252", "Le café crème de la brasserie"),
        ("bom16.md", MIXED.encode("utf-16"), "utf-16", "The naïve façade of the Zürich office"),
        ("le16.md", MIXED.encode("utf-16-le"), "utf-16-le", "The naïve façade of the Zürich office"),
        ("be16.md", MIXED.encode("utf-16-be"), "utf-16-be", "The naïve façade of the Zürich office"),
        ("bom8.md", b"\xef\xbb\xbf" + MIXED.encode("utf-8"), "utf-8-sig", "The naïve façade of the Zürich"),
    ],
    ids=["latin-1", "utf-16-bom", "utf-16-le-no-bom", "utf-16-be-no-bom", "utf-8-bom"],
)
def test_legacy_encodings_are_decoded_into_the_page(
    services: Services, name: str, data: bytes, encoding: str, expected: str
) -> None:
    services.drop(name, data)
    before = snapshot(services.vault.raw)
    results = services.drain()
    assert [r.state for r in results] == ["ingested"], results
    state, reason = shown(services, f"raw/{name}")
    assert (state, reason) == ("ingested", "")
    text = page_for(services, f"raw/{name}").read_text(encoding="utf-8")
    assert expected in text
    assert f", {encoding}, {len(data)} bytes)" in text
    assert "\ufffd" not in text and "\x00" not in text
    assert snapshot(services.vault.raw) == before


# -- size limit -------------------------------------------------------------------------


def test_file_over_the_size_limit_is_quarantined_not_truncated(small_limit: Services) -> None:
    services = small_limit
    big = ("A sentence about the size limit of sources. " * 20).encode()
    assert len(big) > 200
    services.drop("big.md", big)
    before = snapshot(services.vault.raw)
    services.drain()
    assert_quarantined(services, "raw/big.md", "too-large", f"{len(big)} bytes, over the limit of 200")
    assert "ingest.max_source_bytes" in shown(services, "raw/big.md")[1]
    assert not list(services.vault.sources_dir.glob("*.md")), "nothing may be written from a part of it"
    assert snapshot(services.vault.raw) == before


def test_file_growing_past_the_limit_after_queueing_is_quarantined(small_limit: Services) -> None:
    services = small_limit
    path = services.drop("grows.md", "A short note that is under the limit.\n")
    path.write_bytes(b"A short note that grew. " * 30)
    before = snapshot(services.vault.raw)
    services.drain()
    assert_quarantined(services, "raw/grows.md", "too-large", "over the limit of 200")
    assert ingest_commits(services.vault.root) == []
    assert snapshot(services.vault.raw) == before


def test_size_limit_from_the_environment(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wikiwright.core.config import load_config

    monkeypatch.setenv("WIKIWRIGHT_INGEST_MAX_SOURCE_BYTES", "50")
    services = open_services(load_config(vault.root), vault)
    try:
        services.drop("over.md", "x" * 51)
        services.drop("under.md", "Fifty bytes or fewer are fine here.\n")
        services.drain()
        assert_quarantined(services, "raw/over.md", "too-large", "51 bytes, over the limit of 50")
        assert shown(services, "raw/under.md") == ("ingested", "")
    finally:
        services.close()


# -- a file still being written ---------------------------------------------------------


def test_file_still_being_written_is_not_queued_until_quiet(services: Services) -> None:
    tracker = StabilityTracker(WatchConfig(debounce_seconds=0.3, poll_interval_seconds=0.05), services.registrar)
    path = services.vault.raw / "download.md"
    rel = "raw/download.md"
    with path.open("w", encoding="utf-8") as handle:
        handle.write("# Growing\n\n")
        handle.flush()
        tracker.touch(path)  # the watcher's "created" event
        deadline = time.monotonic() + 1.0
        n = 0
        while time.monotonic() < deadline:
            n += 1
            handle.write(f"Chunk number {n} of the growing file arrives now.\n")
            handle.flush()
            tracker.touch(path)  # a "modified" event per write
            assert tracker.check() == []
            assert services.ledger.get_file(rel) is None, "queued while still being written"
            time.sleep(0.05)
        handle.write("The final sentence closes the file.\n")
    tracker.touch(path)  # "closed"
    assert tracker.check() == []  # not quiet long enough yet
    time.sleep(0.35)
    assert tracker.check() == [path]
    record = services.ledger.get_file(rel)
    assert record is not None and record.state == "pending"
    assert record.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    services.drain()
    assert shown(services, rel) == ("ingested", "")
    # The page describes the whole file (its size in bytes), not a prefix of it.
    assert f"(text, utf-8, {path.stat().st_size} bytes)" in page_for(services, rel).read_text().replace(
        "markdown", "text")
    assert len(ingest_commits(services.vault.root)) == 1


def test_growing_file_found_by_rescan_waits_for_a_steady_size(services: Services) -> None:
    """No events at all (the watcher missed them): the stat must hold still between looks."""
    tracker = StabilityTracker(WatchConfig(debounce_seconds=0.3, poll_interval_seconds=0.05), services.registrar)
    path = services.vault.raw / "copied.md"
    path.write_text("# Copied\n\nFirst half of the text arrives.\n")
    assert tracker.rescan() == 1
    with path.open("a") as handle:
        handle.write("Second half arrives after the rescan looked.\n")
    assert tracker.check() == []  # size changed since the rescan's look
    assert services.ledger.get_file("raw/copied.md") is None
    time.sleep(0.1)
    assert tracker.check() == [path]
    services.drain()
    assert "Second half arrives" in page_for(services, "raw/copied.md").read_text()


def test_file_changing_between_queueing_and_reading_is_retried_not_ingested_half(services: Services) -> None:
    path = services.drop("live.md", "# Live\n\nThe first version of the text.\n")
    with path.open("a") as handle:
        handle.write("More text written after the file was queued.\n")
    results = services.drain()
    assert [r.state for r in results] == ["pending"]
    state, reason = shown(services, "raw/live.md")
    assert (state, reason) == ("pending", "still being written; will retry")
    assert ingest_commits(services.vault.root) == []
    # The watcher sees the write settle and records the new version; it is ingested whole.
    services.registrar.register(path)
    services.drain()
    assert shown(services, "raw/live.md") == ("ingested", "")
    assert "More text written after" in page_for(services, "raw/live.md").read_text()


# -- links and special files --------------------------------------------------------------


def test_symlink_pointing_outside_raw_is_never_followed(services: Services, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nTOP SECRET words that must never reach the wiki.\n")
    link = services.vault.raw / "link.md"
    os.symlink(secret, link)
    assert services.registrar.register(link) == "quarantined"
    before = snapshot(services.vault.raw)
    assert services.drain() == []
    assert_quarantined(services, "raw/link.md", "symlink", f"points to '{secret}'")
    assert "never followed" in shown(services, "raw/link.md")[1]
    assert "TOP SECRET" not in wiki_text(services.vault)
    assert ingest_commits(services.vault.root) == []
    assert snapshot(services.vault.raw) == before
    assert secret.read_text().startswith("# Secret")


def test_file_swapped_for_a_symlink_after_queueing_is_not_followed(services: Services, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("TOP SECRET words that must never reach the wiki.\n")
    path = services.drop("swap.md", "# Swap\n\nAn innocent note.\n")
    path.unlink()
    os.symlink(secret, path)
    services.drain()
    assert_quarantined(services, "raw/swap.md", "symlink", "links are never followed")
    assert "TOP SECRET" not in wiki_text(services.vault)


def test_fifo_is_quarantined_without_blocking(services: Services) -> None:
    fifo = services.vault.raw / "pipe.md"
    os.mkfifo(fifo)
    assert services.registrar.register(fifo) == "quarantined"
    before = snapshot(services.vault.raw)
    services.drain()
    assert_quarantined(services, "raw/pipe.md", "not-a-file", "FIFO (named pipe)")
    assert snapshot(services.vault.raw) == before == {"pipe.md": ("fifo",)}


def test_file_swapped_for_a_fifo_after_queueing_does_not_block(services: Services) -> None:
    path = services.drop("later.md", "# Later\n\nA note.\n")
    path.unlink()
    os.mkfifo(path)
    services.drain()  # would hang forever if the pipe were opened for a blocking read
    assert_quarantined(services, "raw/later.md", "not-a-file", "not a regular file")


def test_temporary_and_partial_names_are_skipped_with_the_rule(services: Services) -> None:
    cases = {
        "movie.mkv.part": "partial download (.part)",
        "report.pdf.crdownload": "partial download (.crdownload)",
        "~$budget.docx": "office lock file (~$)",
        ".notes.md.swp": "hidden or temporary file",
        "4913": "vim write probe (4913)",
        "plan.sync-conflict-20260101-120000-ABCDEF.md": "sync conflict copy (Syncthing)",
    }
    for name in cases:
        assert services.drop(name, "some text that looks like a source.\n")
    before = snapshot(services.vault.raw)
    assert services.drain() == []
    for name, rule in cases.items():
        state, reason = shown(services, f"raw/{name}")
        assert state == "skipped" and rule in reason, (name, state, reason)
    assert snapshot(services.vault.raw) == before


# -- names ---------------------------------------------------------------------------------

NAMES = {
    "meeting notes.md": "sources/src-meeting-notes",
    "call 10:30.md": "sources/src-call-10-30",
    "issue #42.md": "sources/src-issue-42",
    "[draft] plan.md": "sources/src-draft-plan",
    "-rf.md": "sources/src-rf",
    "東京 trip.md": "sources/src-東京-trip",
}


def test_awkward_names_get_pages_by_the_slug_rule(services: Services) -> None:
    for n, name in enumerate(NAMES):
        services.drop(name, f"# Note {n}\n\nThis is note number {n} about {name} and nothing else.\n")
    before = snapshot(services.vault.raw)
    results = services.drain()
    assert sorted(r.state for r in results) == ["ingested"] * len(NAMES)
    for name, page in NAMES.items():
        rel = f"raw/{name}"
        assert shown(services, rel) == ("ingested", "")
        record = services.ledger.get_file(rel)
        assert record is not None and record.page == page
        assert page == "sources/src-" + slugify(Path(name).stem)
        meta = parse_page((services.vault.wiki / f"{page}.md").read_text()).meta
        assert meta["source_path"] == rel
    assert len(ingest_commits(services.vault.root)) == len(NAMES)
    assert git(services.vault.root, "status", "--porcelain", "--", "wiki") == ""
    assert snapshot(services.vault.raw) == before


def test_nfc_and_nfd_names_are_two_sources_and_two_pages(services: Services) -> None:
    nfc = unicodedata.normalize("NFC", "café.md")
    nfd = unicodedata.normalize("NFD", "café.md")
    assert nfc != nfd
    services.drop(nfc, "# Cafe one\n\nThe first café note talks about espresso prices.\n")
    services.drop(nfd, "# Cafe two\n\nThe second café note talks about opening hours.\n")
    before = snapshot(services.vault.raw)
    services.drain()
    pages = {}
    for name in (nfc, nfd):
        assert shown(services, f"raw/{name}") == ("ingested", "")
        pages[name] = page_for(services, f"raw/{name}")
    assert {p.stem for p in pages.values()} == {"src-cafe", "src-cafe-2"}
    assert "espresso" in pages[nfc].read_text() and "opening hours" in pages[nfd].read_text()
    assert snapshot(services.vault.raw) == before


def test_name_collisions_get_a_suffix_never_a_merge(services: Services) -> None:
    names = ["Road Map.md", "road-map.md", "road_map.txt", "ROAD MAP.markdown"]
    for n, name in enumerate(names):
        services.drop(name, f"# Road map {n}\n\nMilestone {n} ships in quarter {n + 1} of the year.\n")
    services.drain()
    pages = [page_for(services, f"raw/{name}") for name in names]
    assert sorted(p.stem for p in pages) == ["src-road-map", "src-road-map-2", "src-road-map-3", "src-road-map-4"]
    for n, (name, page) in enumerate(zip(names, pages, strict=True)):
        text = page.read_text()
        assert f"Milestone {n} ships" in text
        assert parse_page(text).meta["source_path"] == f"raw/{name}"
    assert len(ingest_commits(services.vault.root)) == len(names)
    # The binding is stable: a new version of the second file keeps its own page.
    (services.vault.raw / names[1]).write_text("# Road map 1\n\nMilestone one slipped to the next quarter.\n")
    services.registrar.register(services.vault.raw / names[1])
    services.drain()
    assert page_for(services, f"raw/{names[1]}") == pages[1]
    assert "slipped" in pages[1].read_text() and "slipped" not in pages[0].read_text()


# -- duplicates and versions ----------------------------------------------------------------


def test_same_bytes_under_two_names_is_one_ingest_and_a_duplicate(services: Services) -> None:
    data = "# Shared\n\nThe same words saved twice under different names.\n"
    services.drop("first.md", data)
    services.drop("copy of first.md", data)
    before = snapshot(services.vault.raw)
    results = services.drain()
    assert sorted(r.state for r in results) == ["duplicate", "ingested"]
    digest = hashlib.sha256(data.encode()).hexdigest()
    state, reason = shown(services, "raw/copy of first.md")
    assert state == "duplicate"
    assert reason == f"same content as raw/first.md ({digest[:12]})"
    assert len(ingest_commits(services.vault.root)) == 1
    assert [p.name for p in services.vault.sources_dir.glob("*.md")] == ["src-first.md"]
    assert snapshot(services.vault.raw) == before


def test_changed_file_is_a_new_version(services: Services) -> None:
    path = services.drop("spec.md", "# Spec\n\nThe limit is 100 requests per second.\n")
    services.drain()
    first = services.ledger.get_file("raw/spec.md")
    assert first is not None and first.state == "ingested"
    path.write_text("# Spec\n\nThe limit is now 50 requests per second.\n")
    services.registrar.register(path)
    assert shown(services, "raw/spec.md") == ("pending", "new version of a file seen before")
    services.drain()
    second = services.ledger.get_file("raw/spec.md")
    assert second is not None and second.state == "ingested"
    assert second.sha256 != first.sha256 and second.commit_sha != first.commit_sha
    assert second.page == first.page
    text = page_for(services, "raw/spec.md").read_text()
    assert "50 requests" in text and "100 requests" not in text
    assert len(ingest_commits(services.vault.root)) == 2
    assert {s.sha256 for s in services.ledger.sources()} == {first.sha256, second.sha256}
    # Back to the bytes of the first version: already ingested, nothing runs twice.
    path.write_text("# Spec\n\nThe limit is 100 requests per second.\n")
    services.registrar.register(path)
    services.drain()
    assert len(ingest_commits(services.vault.root)) == 2


def test_html_is_converted_to_text(services: Services) -> None:
    markup = (
        "<!DOCTYPE html><html><head><title>Release Notes 2.0</title>"
        "<style>body { color: red }</style><script>alert('boo')</script></head>"
        "<body><h1>Release 2.0</h1><p>The new release adds an offline mode &amp; faster sync.</p>"
        "<ul><li>Sync is three times faster than before.</li><li>Offline mode keeps working.</li></ul>"
        "</body></html>"
    )
    services.drop("release.html", markup)
    before = snapshot(services.vault.raw)
    services.drain()
    assert shown(services, "raw/release.html") == ("ingested", "")
    page = page_for(services, "raw/release.html")
    text = page.read_text()
    assert parse_page(text).meta["title"] == "Release Notes 2.0"
    assert "The new release adds an offline mode & faster sync." in text
    assert "(html, utf-8," in text
    for noise in ("<p>", "<li>", "alert(", "color: red", "&amp;"):
        assert noise not in text
    assert snapshot(services.vault.raw) == before


# -- what the real CLI shows ------------------------------------------------------------------


def test_status_cli_shows_every_bad_input_with_its_reason(services: Services, tmp_path: Path) -> None:
    os.symlink(tmp_path, services.vault.raw / "elsewhere")
    services.registrar.register(services.vault.raw / "elsewhere")
    os.mkfifo(services.vault.raw / "pipe")
    services.registrar.register(services.vault.raw / "pipe")
    services.drop("empty.md", b"")
    services.drop("nul.txt", b"abc\x00def")
    services.drop("a.md", "# A\n\nSome words in a note.\n")
    services.drop("b.md", "# A\n\nSome words in a note.\n")
    services.drop("x.part", "partial")
    services.drain()
    result = cli("status", "--vault", str(services.vault.root))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "1 ingested, 0 pending, 0 running, 1 duplicate, 4 quarantined, 1 skipped" in out
    assert f"raw/elsewhere: quarantined — symlink: points to '{tmp_path}'" in out
    assert "raw/pipe: quarantined — not-a-file: is a FIFO (named pipe), not a regular file" in out
    assert "raw/empty.md: quarantined — empty: is empty or whitespace only" in out
    assert "raw/nul.txt: quarantined — binary: contains NUL bytes" in out
    assert "raw/x.part: skipped — partial download (.part)" in out
    assert "raw/b.md: same content as raw/a.md" in out
    assert "Traceback" not in out + result.stderr


# -- links to existing pages (the catalogue's phrase map is kept up to date in place) ------------


def _concept(services: Services, stem: str, title: str, aliases: list[str] | None = None) -> None:
    alias_text = "[" + ", ".join(aliases or []) + "]"
    (services.vault.wiki / f"{stem}.md").write_text(
        f"---\ntype: concept\ntitle: {title}\nsummary: About {title}.\naliases: {alias_text}\n---\n\n# {title}\n")


def _links(services: Services, name: str, text: str) -> list[str]:
    services.drop(name, text)
    services.drain()
    page = page_for(services, f"raw/{name}").read_text()
    return [line for line in page.splitlines() if line.startswith("- [[")]


def test_source_pages_link_to_pages_whose_titles_they_mention(services: Services) -> None:
    _concept(services, "billing-api", "Billing API", ["payments service"])
    services.catalog.refresh()
    assert _links(services, "a.md", "# A\n\nThe Billing API and the payments service were slow today.\n") == [
        "- [[billing-api|Billing API]]"]
    # A renamed page: the old title no longer links, the new one does.
    _concept(services, "billing-api", "Invoice Engine")
    services.catalog.refresh(["billing-api"])
    # (Two sources now share "Billing API": the offline engine gives it a page of its own.)
    assert _links(services, "b.md", "# B\n\nThe Billing API was mentioned again by the team.\n") == [
        "- [[billing-api-2|Billing API]]"]
    assert _links(services, "c.md", "# C\n\nThe Invoice Engine sends invoices every night.\n") == [
        "- [[billing-api|Invoice Engine]]"]
    # A removed page is never linked (the shared term's own page is made instead).
    (services.vault.wiki / "billing-api.md").unlink()
    services.catalog.refresh(["billing-api"])
    assert "[[billing-api|" not in "\n".join(_links(services, "d.md", "# D\n\nThe Invoice Engine was retired.\n"))
    # Source pages are linkable by their titles as well, as soon as they are committed.
    assert _links(services, "e.md", "# Quarterly Roadmap Review\n\nWe reviewed the roadmap for the quarter.\n") == []
    assert _links(services, "f.md", "# F\n\nAfter the Quarterly Roadmap Review we cut two features.\n") == [
        "- [[src-e|Quarterly Roadmap Review]]"]


def test_a_notes_own_front_matter_gives_the_title_and_stays_out_of_the_summary(services: Services) -> None:
    services.drop("plan.md", '---\ntitle: "Quarterly: plan #2"\ntags: [planning, q3]\n---\n\n'
                             "We will ship the export API in the third quarter of the year.\n\n---\n\n"
                             "title: not a property, just a line after a rule\n")
    services.drop("broken.md", "---\ntitle: [unclosed\n---\n\n# Heading wins\n\nBody text of the note is here.\n")
    assert [r.state for r in services.drain()] == ["ingested", "ingested"]
    plan = parse_page((services.vault.wiki / "sources" / "src-plan.md").read_text())
    assert plan.meta["title"] == "Quarterly: plan #2"
    assert "planning" not in plan.body and "ship the export API" in plan.body
    broken = parse_page((services.vault.wiki / "sources" / "src-broken.md").read_text())
    assert broken.meta["title"] == "Heading wins"  # invalid YAML: the note is read as text
