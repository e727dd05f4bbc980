"""Undo after real use (issue 23): revert any one ingest with everything later kept, retract
with every displaced value restored, and doctor clean after what a person asked for.

Everything runs on real git and the real CLI: ingests through the real pipeline (offline
engine, or the model path against the scripted server), revert/retract/doctor as commands.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from wikiwright.core.config import Config
from wikiwright.core.vault import Vault
from wikiwright.door.init import init_vault
from wikiwright.wiki.pages import get_section, iter_links, link_key, parse_claims, parse_page

from tests.conftest import Services
from tests.helpers import cli, git, ingest_commits, review_queue
from tests.lint_fixture import page as fixture_page
from tests.llm_server import ScriptedServer
from tests.model_helpers import page, use_model
from tests.story import SOURCES, story_script
from tests.undo_corpus import corpus

HUNDRED = "100 requests per second per client"


def _run(vault: Path, *args: str) -> str:
    done = cli(*args, "--vault", str(vault), timeout=300)
    assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done.stdout


def _doctor_clean(vault: Path) -> None:
    done = cli("doctor", "--no-repair", "--vault", str(vault), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all invariants hold" in done.stdout


def _model_story(services: Services, server: ScriptedServer) -> list[str]:
    use_model(services, server)
    for name, text in SOURCES:
        services.drop(name, text)
        assert [r.state for r in services.drain()] == ["ingested"]
    return ingest_commits(services.vault.root)[::-1]


def _current(services: Services, name: str, key: str) -> list[str]:
    claims, _ = parse_claims(parse_page(page(services, name)).body)
    return sorted(c.value for c in claims if c.key == key and c.is_current)


def test_revert_the_third_of_five_model_ingests(services: Services) -> None:
    with ScriptedServer(story_script) as server:
        commits = _model_story(services, server)
    root = services.vault.root
    out = _run(root, "revert", commits[2])
    assert "Reverted the ingest of raw/inc-482.md" in out
    assert not (services.vault.wiki / "sources" / "src-inc-482.md").exists()
    # The 100/s it had struck is current again on every page; ingests 4 and 5 stand.
    for name in ("billing-api", "rate-limiting", "on-call-runbook"):
        assert "50 requests per second per client" not in page(services, name), name
        assert HUNDRED in _current(services, name, "billing-api.rate-limit"), name
    assert _current(services, "billing-api", "billing-api.log-retention.audit") == ["365 days"]
    assert "200 requests per second per client" in _current(services, "billing-api", "billing-api.rate-limit")
    assert "src-inc-482" not in (services.vault.wiki / "index.md").read_text()
    assert git(root, "status", "--porcelain", "--", "wiki").strip() == ""
    _doctor_clean(root)


def test_retract_restores_the_displaced_value_on_every_page(services: Services) -> None:
    with ScriptedServer(story_script) as server:
        _model_story(services, server)
    root = services.vault.root
    _run(root, "retract", "raw/inc-482.md", "--reason", "the incident report was wrong")
    for name in ("billing-api", "rate-limiting", "on-call-runbook"):
        assert HUNDRED in _current(services, name, "billing-api.rate-limit"), page(services, name)
        assert "50 requests per second per client" not in _current(services, name, "billing-api.rate-limit")
    _doctor_clean(root)


# Five sources about Kestrel on the model path: the third creates a page the fourth builds on,
# and the third and fourth both add to overview.md (the case a user met: refused on main).
KESTREL = [
    ("k1.md", "Kestrel is the job scheduler of the data team. Kestrel runs 40 jobs per hour.\n"),
    ("k2.md", "The Kestrel team is led by Dana Ortiz.\n"),
    ("k3.md", "Kestrel queues live in the Kestrel broker. The Kestrel broker keeps jobs for 7 days.\n"),
    ("k4.md", "The Kestrel broker runs on three nodes. Kestrel retries a failed job twice.\n"),
    ("k5.md", "Kestrel now runs 60 jobs per hour, up from 40.\n"),
]


def _claim(page_: str, key: str, value: str, quote: str, replaces: bool = False) -> dict[str, object]:
    return {"op": "add_claim", "page": page_, "key": key, "value": value, "as_of": "2026-05-01",
            "quote": quote, "replaces": replaces}


KESTREL_REPLIES: dict[str, list[dict[str, object]]] = {
    "k1.md": [
        {"op": "create_page", "page": "kestrel", "type": "entity", "title": "Kestrel",
         "summary": "The data team's job scheduler.", "body": "# Kestrel\n\nThe data team's job scheduler.\n"},
        _claim("kestrel", "kestrel.jobs-per-hour", "40 jobs per hour", "Kestrel runs 40 jobs per hour."),
        {"op": "add_to_section", "page": "overview", "heading": "Systems", "text": "- [[kestrel]]: the job scheduler."},
    ],
    "k2.md": [_claim("kestrel", "kestrel.owner", "Dana Ortiz", "The Kestrel team is led by Dana Ortiz.")],
    "k3.md": [
        {"op": "create_page", "page": "kestrel-broker", "type": "entity", "title": "Kestrel broker",
         "summary": "Where Kestrel queues live.", "body": "# Kestrel broker\n\nWhere [[kestrel]] queues live.\n"},
        _claim("kestrel-broker", "kestrel-broker.retention", "7 days", "The Kestrel broker keeps jobs for 7 days."),
        {"op": "add_links", "page": "kestrel", "links": ["kestrel-broker"]},
        {"op": "add_to_section", "page": "overview", "heading": "Systems",
         "text": "- [[kestrel-broker]]: where Kestrel queues live."},
    ],
    "k4.md": [
        _claim("kestrel-broker", "kestrel-broker.nodes", "three nodes", "The Kestrel broker runs on three nodes."),
        _claim("kestrel", "kestrel.retries", "twice", "Kestrel retries a failed job twice."),
        {"op": "add_to_section", "page": "overview", "heading": "Systems", "text": "- Kestrel retries failed jobs."},
    ],
    "k5.md": [_claim("kestrel", "kestrel.jobs-per-hour", "60 jobs per hour",
                     "Kestrel now runs 60 jobs per hour, up from 40.", replaces=True)],
}


def _kestrel_script(request: dict[str, object]) -> dict[str, object]:
    text = " ".join(str(m.get("content") or "") for m in request.get("messages") or []  # type: ignore[attr-defined]
                    if m.get("role") == "user")
    for name, _ in KESTREL:
        if f"`raw/{name}`" in text:
            return {"title": f"Kestrel note {name}", "summary": "A note about Kestrel.", "key_points": [],
                    "operations": KESTREL_REPLIES[name]}
    return {"title": "unknown", "summary": "", "operations": []}


def test_revert_the_third_of_five_model_ingests_that_later_ones_built_on(services: Services) -> None:
    with ScriptedServer(_kestrel_script) as server:
        use_model(services, server)
        for name, text in KESTREL:
            services.drop(name, text)
            assert [r.state for r in services.drain()] == ["ingested"], name
    commits = ingest_commits(services.vault.root)[::-1]
    root = services.vault.root
    assert "7 days" in page(services, "kestrel-broker")
    out = _run(root, "revert", commits[2])
    assert "Reverted the ingest of raw/k3.md" in out
    assert not (services.vault.wiki / "sources" / "src-k3.md").exists()
    broker = page(services, "kestrel-broker")
    assert "7 days" not in broker and "Where [[kestrel]] queues live" not in broker
    assert _current(services, "kestrel-broker", "kestrel-broker.nodes") == ["three nodes"]  # ingest 4 stays
    overview = page(services, "overview")
    assert "where Kestrel queues live" not in overview and "- Kestrel retries failed jobs." in overview
    assert _current(services, "kestrel", "kestrel.jobs-per-hour") == ["60 jobs per hour"]
    assert _current(services, "kestrel", "kestrel.retries") == ["twice"]
    assert git(root, "status", "--porcelain", "--", "wiki").strip() == ""
    _doctor_clean(root)


# -- the offline engine ----------------------------------------------------------------------

def _new_vault(tmp_path: Path, name: str) -> Path:
    created, _ = init_vault(tmp_path / name, "wikiwright", "wikiwright@localhost")
    return created.root


def _ingest(root: Path, files: list[tuple[str, str]]) -> None:
    for rel, text in files:
        path = root / "raw" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    _run(root, "ingest", *(str(root / "raw" / rel) for rel, _ in files))


def _wiki_text(root: Path) -> dict[str, str]:
    wiki = root / "wiki"
    return {p.relative_to(wiki).as_posix(): p.read_text() for p in sorted(wiki.rglob("*.md"))}


def test_revert_the_first_of_two_unrelated_offline_ingests(tmp_path: Path) -> None:
    root = _new_vault(tmp_path, "vault")
    _ingest(root, [("garden.md", "# Tomato garden\n\nTomatoes need six hours of sun. Water them at dawn.\n")])
    _ingest(root, [("bikes.md", "# Bicycle chains\n\nA chain stretches with use. Replace it every 3000 km.\n")])
    out = _run(root, "revert", "raw/garden.md")
    assert "Reverted the ingest of raw/garden.md" in out
    wiki = _wiki_text(root)
    assert "sources/src-garden.md" not in wiki and "sources/src-bikes.md" in wiki
    overview = wiki["overview.md"]
    assert "1 source(s)" in overview and "src-garden" not in overview and "[[src-bikes" in overview
    assert "src-garden" not in wiki["index.md"]
    assert git(root, "status", "--porcelain", "--", "wiki").strip() == ""
    _doctor_clean(root)


SHARED_KESTREL = [
    ("harbor.md", "# Harbor notes\n\nThe Kestrel scheduler routes requests through its connection pool. "
                  "Kestrel is a tool that schedules tasks for small teams.\n"),
    ("dock.md", "# Dock notes\n\nKestrel is a scheduler that monitors metrics on every node. "
                "The Kestrel scheduler retries failed tasks.\n"),
]
SHARED_TAMARIN = [
    ("leaks.md", "# Leak hunting\n\nTamarin is a tool that finds memory leaks in C programs. "
                 "The Tamarin checker runs the program on a synthetic processor.\n"),
    ("profiling.md", "# Profiling notes\n\nTamarin is a checker that profiles cache misses on every node. "
                     "The Tamarin checker ships several tools.\n"),
]


def test_revert_keeps_a_concept_page_a_person_edited_and_removes_one_nobody_did(tmp_path: Path) -> None:
    root = _new_vault(tmp_path, "vault")
    _ingest(root, SHARED_KESTREL)
    _ingest(root, SHARED_TAMARIN)
    wiki = root / "wiki"
    assert (wiki / "kestrel.md").exists() and (wiki / "tamarin.md").exists()
    # Not committed: the revert reads it, commits it as the person's, and must see that commit.
    (wiki / "kestrel.md").write_text((wiki / "kestrel.md").read_text() + "\nOur team runs it on two hosts.\n")
    out = _run(root, "revert", "raw/harbor.md")
    assert "a person edited it" in out
    kestrel = (wiki / "kestrel.md").read_text()
    assert "Our team runs it on two hosts." in kestrel and "kept because a person edited this page" in kestrel
    assert "src-harbor" not in kestrel.split("kept because")[1]
    _run(root, "revert", "raw/leaks.md")
    assert not (wiki / "tamarin.md").exists()  # wikiwright's own, now with one source: gone
    assert git(root, "status", "--porcelain", "--", "wiki").strip() == ""


def _persons_pages(root: Path, folder: str, stem: str, kind: str, count: int) -> None:
    """``count`` pages a person wrote under ``wiki/<folder>``, committed by them."""
    where = root / "wiki" / folder
    where.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        (where / f"{stem}-{n:03d}.md").write_text(fixture_page(f"type: {kind}\ntitle: {stem.title()} {n:03d}\n"
                                                               f"summary: What {stem} {n} is about, in one line",
                                                               f"# {stem.title()} {n:03d}\n\nText.\n"))
    git(root, "add", "wiki")
    git(root, "commit", "-q", "-m", f"a person's {stem}s")


def test_revert_says_nothing_of_index_pages_rebuilt_without_the_source(tmp_path: Path) -> None:
    root = _new_vault(tmp_path, "vault")
    _persons_pages(root, "sources", "note", "source", 200)  # enough that index.md moves them to index-sources.md
    _ingest(root, [("bikes.md", "# Bicycle chains\n\nA chain stretches with use. Replace it every 3000 km.\n")])
    _ingest(root, [("garden.md", "# Tomato garden\n\nTomatoes need six hours of sun. Water them at dawn.\n")])
    assert "[[src-garden" in (root / "wiki" / "index-sources.md").read_text()
    out = _run(root, "revert", "raw/garden.md")
    # The group page and its parts (index/sources-001.md, …): 201 sources are more than one page lists.
    wiki = root / "wiki"
    listed = "".join(p.read_text() for p in [wiki / "index-sources.md", *(wiki / "index").glob("*.md")])
    assert "src-garden" not in listed and "[[src-bikes" in listed and "[[note-199|" in listed
    assert "index-sources" not in out, out  # rebuilt with index.md: neither changed by hand nor linking


def _links(text: str, name: str) -> tuple[list[str], list[str]]:
    """The links of a page, and the entries of a concept page's "Related" list in their order."""
    if name == "log.md":
        return [], []
    body = parse_page(text).body if text.startswith("---") else text
    related = get_section(body, "Related") if "/" not in name else None
    return (sorted({link_key(link.target) for link in iter_links(body)}),
            [link_key(link.target) for link in iter_links(related or "")])


# Zorblax is in the first two only in fragments (no sentence end): no page by the engine's rule
# until the third says what it is in a whole sentence. Helgrind shares the first two with it.
PROBE = [
    ("alpha.md", "# Alpha notes\n\nMemcheck is a memory error detector. We ran Memcheck and Helgrind on the "
                 "parser.\n\nOutput: Zorblax and Memcheck for the parser\n"),
    ("beta.md", "# Beta notes\n\nMemcheck is a tool that finds leaks. The nightly job runs Memcheck and "
                "Helgrind.\n\nLogs: Zorblax and Memcheck for the nightly job\n"),
    ("probe.md", "# Probe notes\n\nZorblax is a probe that samples the parser. We ran Zorblax beside Memcheck "
                 "last week.\n"),
]


def test_revert_of_the_source_that_said_what_a_term_is_removes_its_page_and_every_link_to_it(tmp_path: Path,
                                                                                            ) -> None:
    root = _new_vault(tmp_path, "vault")
    _ingest(root, PROBE)
    wiki = _wiki_text(root)
    assert "zorblax.md" in wiki and "zorblax" in _links(wiki["helgrind.md"], "helgrind.md")[1]
    _run(root, "revert", "raw/probe.md")
    never = _new_vault(tmp_path, "never")
    _ingest(never, PROBE[:2])
    reverted, expected = _wiki_text(root), _wiki_text(never)
    assert "zorblax.md" not in reverted and sorted(reverted) == sorted(expected)
    differ = {name: (_links(reverted[name], name), _links(expected[name], name)) for name in reverted
              if _links(reverted[name], name) != _links(expected[name], name)}
    assert not differ, differ  # helgrind.md, which the reverted source never named, included
    assert git(root, "status", "--porcelain", "--", "wiki").strip() == ""


def _tenth(root: Path) -> tuple[str, str]:
    sha = ingest_commits(root)[::-1][9]
    trailer = re.search(r"Wikiwright-Source: (raw/\S+)", git(root, "log", "-1", "--format=%B", sha))
    assert trailer
    return sha, trailer.group(1)


def test_revert_the_tenth_of_eighty_ingests_matches_a_wiki_that_never_had_it(tmp_path: Path) -> None:
    docs = corpus(80)
    everything = _new_vault(tmp_path, "all")
    _ingest(everything, docs)
    sha, path = _tenth(everything)
    stem = "src-" + Path(path).stem
    assert f"sources/{stem}.md" in _wiki_text(everything)
    out = _run(everything, "revert", sha)
    assert f"Reverted the ingest of {path}" in out
    without = _new_vault(tmp_path, "without")
    _ingest(without, [(rel, text) for rel, text in docs if f"raw/{rel}" != path])

    reverted, never = _wiki_text(everything), _wiki_text(without)
    assert f"sources/{stem}.md" not in reverted
    for name, text in reverted.items():
        if name != "log.md":
            assert f"[[{stem}" not in text, f"{name} still cites the reverted source"
    assert sorted(reverted) == sorted(never)  # the same pages
    differ = {name: (_links(reverted[name], name), _links(never[name], name)) for name in reverted
              if _links(reverted[name], name) != _links(never[name], name)}
    assert not differ, differ  # the same links, "Related" in the same order (overview.md and index.md included)
    counter = re.compile(r"^\d+ source\(s\); \d+ concept.*$", re.M)
    assert counter.findall(reverted["overview.md"]) == counter.findall(never["overview.md"])
    assert git(everything, "status", "--porcelain", "--", "wiki").strip() == ""
    _doctor_clean(everything)
    lint = json.loads(cli("lint", "--json", "--vault", str(everything)).stdout)
    assert not [f for f in lint["findings"] if f["kind"] in ("index-missing", "index-dangling", "broken-link")]


# -- index.md ----------------------------------------------------------------------------------

def test_index_lists_every_page_when_it_outgrows_one_page(tmp_path: Path) -> None:
    root = _new_vault(tmp_path, "vault")
    wiki = root / "wiki"
    _persons_pages(root, "", "topic", "topic", 260)  # far more than index.md's budget holds
    _ingest(root, [("note.md", "# A note\n\nA note about the topics. It names none of them.\n")])
    index = (wiki / "index.md").read_text()
    assert "more (find them" not in index and "… and" not in index
    assert len(index.splitlines()) < 200 and len(index.encode()) < 25_000
    hubs = [(wiki / f"{link.target}.md").read_text() for link in iter_links(index) if link.target.startswith("index-")]
    parts = [(wiki / f"{link.target}.md").read_text() for hub in hubs for link in iter_links(hub)
             if link.target.startswith("index/")]  # a group past one page's worth: its parts
    listed = " ".join([*hubs, *parts, index])
    for n in range(260):
        assert f"- [[topic-{n:03d}|Topic {n:03d}]] — What topic {n} is about, in one line" in listed, n
    assert "[[src-note|A note]]" in listed
    lint = json.loads(cli("lint", "--json", "--vault", str(root)).stdout)
    assert not [f for f in lint["findings"] if f["kind"].startswith("index-")], lint["findings"]
    # The group pages are reached from index.md: not orphans (old code: "[[index-topics]] has no
    # links from other pages; fix: link it from [[overview]]").
    assert not [f for f in lint["findings"] if f["kind"] == "orphan" and f["page"].startswith("index-")], \
        lint["findings"]


def test_lint_reports_two_source_pages_with_one_title(tmp_path: Path) -> None:
    root = _new_vault(tmp_path, "vault")
    _ingest(root, [("flask/README.md", "# README\n\nFlask is a small web framework for Python.\n"),
                   ("click/README.md", "# README\n\nClick builds command line tools in Python.\n")])
    titles = {parse_page(t).meta.get("title") for n, t in _wiki_text(root).items() if n.startswith("sources/")}
    lint = json.loads(cli("lint", "--json", "--vault", str(root)).stdout)
    found = [f for f in lint["findings"] if f["kind"] == "duplicate-title"]
    assert (len(titles) == 1) == bool(found), (titles, found)


# -- doctor ------------------------------------------------------------------------------------

KEY = "payload.max-size"


def _hand_wiki(vault: Vault) -> None:
    """A person's wiki: 8 MB from an incident review, 25 MB from a blog draft (a conflict)."""
    for stem, title in (("src-inc-77", "Incident 77 review"), ("src-blog-draft", "Blog draft")):
        (vault.sources_dir / f"{stem}.md").write_text(fixture_page(f"type: source\ntitle: {title}", f"# {title}\n"))
    for n, (value, source) in enumerate((("8 MB", "src-inc-77"), ("25 MB", "src-blog-draft"),
                                         ("8 MB", "src-inc-77"))):
        (vault.wiki / f"service-{n}.md").write_text(fixture_page(
            f"type: entity\ntitle: Service {n}",
            f"# Service {n}\n\nSee [[overview]].\n\n## Claims\n"
            f"- `{KEY}`: {value} (as of 2026-0{n + 1}-02, [[{source}]])\n"))
    git(vault.root, "add", "-A")
    git(vault.root, "commit", "-q", "-m", "my wiki")


def test_doctor_is_clean_after_a_ticked_claim_answer_a_revert_and_a_retract(vault: Vault, config: Config) -> None:
    _hand_wiki(vault)
    root = vault.root
    out = cli("lint", "--json", "--review", "--vault", str(root))
    assert out.returncode == 1, out.stderr
    text = vault.review_file.read_text()
    vault.review_file.write_text(re.sub(r"^(\s*- )\[ \](.*\^claim-conflict-[0-9a-f]{10}-v1)$", r"\1[x]\2", text,
                                        flags=re.M))
    queue = review_queue(config, vault)
    try:
        assert [o.state for o in queue.process()] == ["applied"]
    finally:
        queue.close()
    _ingest(root, [("extra.md", "# Extra note\n\nService 1 keeps its payloads small. It was tuned in March.\n")])
    _run(root, "revert", "raw/extra.md")
    assert "~~`payload.max-size`: 25 MB" in (vault.wiki / "service-1.md").read_text()  # disputed by inc-77
    _run(root, "retract", "src-inc-77", "--reason", "the review was wrong")
    # The value the answer had struck in favour of the retracted source is current again.
    claims, _ = parse_claims(parse_page((vault.wiki / "service-1.md").read_text()).body)
    assert [(c.value, c.status) for c in claims] == [("25 MB", "current")]
    done = cli("doctor", "--no-repair", "--vault", str(root))
    assert done.returncode == 0, done.stdout
    assert "asked for:" in done.stdout and "(lint-fix:" in done.stdout and "(retract:" in done.stdout
    full = cli("doctor", "--no-repair", "--full", "--vault", str(root))
    assert full.returncode == 0 and "all invariants hold" in full.stdout, full.stdout


def test_doctor_checks_only_what_is_new_and_keeps_reporting_what_it_found(vault: Vault, config: Config) -> None:
    _hand_wiki(vault)
    root = vault.root
    first = cli("doctor", "--no-repair", "--vault", str(root))
    assert first.returncode == 0 and "commit(s) walked" in first.stdout
    again = cli("doctor", "--no-repair", "--vault", str(root))
    assert again.returncode == 0 and "0 new commit(s) walked since" in again.stdout, again.stdout
    assert "objects added since" in again.stdout
    # A daemon commit nobody asked for removes a person's line: found once, reported every time.
    page_path = vault.wiki / "service-0.md"
    page_path.write_text(page_path.read_text().replace("See [[overview]].\n", ""))
    git(root, "-c", "user.name=wikiwright", "-c", "user.email=wikiwright@localhost", "commit", "-q", "-am",
        "ingest: something\n\nWikiwright-Operation: ingest")
    for args in ((), (), ("--full",)):
        done = cli("doctor", "--no-repair", *args, "--vault", str(root))
        assert done.returncode == 1 and "See [[overview]]." in done.stdout, (args, done.stdout)


# -- after a sync round ------------------------------------------------------------------------

def test_revert_on_this_machine_of_a_source_ingested_on_the_other(tmp_path: Path) -> None:
    from tests.test_sync import two_machines

    _remote, a, b = two_machines(tmp_path)
    try:
        for name, text in corpus(4)[:3]:
            (a.vault.raw / name).parent.mkdir(parents=True, exist_ok=True)
            a.ingest(name, text)
        a.sync()
        b.sync()
        first = ingest_commits(b.root)[::-1][0]
        name, text = corpus(4)[3]
        (b.vault.raw / name).parent.mkdir(parents=True, exist_ok=True)
        b.ingest(name, text)
        stem = "src-" + Path(git(b.root, "log", "-1", "--format=%B", first).split("Wikiwright-Source: raw/")[1]
                            .split()[0]).stem
        out = _run(b.root, "revert", first)
        assert "Reverted the ingest of" in out
        for rel, page_text in _wiki_text(b.root).items():
            if rel != "log.md":
                assert f"[[{stem}" not in page_text, rel
        _doctor_clean(b.root)
        b.sync()
        a.sync()
        assert f"sources/{stem}.md" not in _wiki_text(a.root)  # an ordinary commit reached the other machine
        assert f"Wikiwright-Reverts: {first}" in git(a.root, "log", "--format=%B", "-3")
    finally:
        a.close()
        b.close()
