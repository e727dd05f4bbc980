from __future__ import annotations

import json

from wikiwright.core.config import Config
from wikiwright.core.vault import Vault
from wikiwright.upkeep.lint import run_lint
from wikiwright.wiki.catalog import Catalog

from tests.helpers import cli
from tests.lint_fixture import EXPECTED, build_fixture, line_of, page


def test_fixture_wiki_gives_exactly_the_known_findings(vault: Vault, config: Config, catalog: Catalog) -> None:
    build_fixture(vault)
    report = run_lint(vault, config.lint, catalog)
    assert sorted((f.kind, f.page) for f in report.findings) == EXPECTED
    by_kind = {f.kind: f for f in report.findings}

    broken = by_kind["broken-link"]
    assert broken.line == line_of(vault.wiki / "export-retention.md", "[[Dana Whitfield]]")
    assert broken.fix == {"action": "create-stub", "target": "Dana Whitfield", "linked_from": ["export-retention"]}

    # One question for the key, listing every current value with its source and date; it
    # proposes no winner (recency is not truth): the person ticks the value that stands.
    [conflict] = [f for f in report.findings if f.kind == "claim-conflict"]
    assert conflict.message.startswith("`export.retention` has 3 current values")
    assert conflict.fix["action"] == "resolve-conflict" and "page" not in conflict.fix and "by" not in conflict.fix
    options = {o["key"]: o["text"] for o in conflict.fix["options"]}
    assert options["v1"] == "kept for 7 days — [[src-faq-draft]], as of 2026-02-01, on [[faq]]"
    assert options["v3"].startswith("`export.retention.enterprise`: 90 days — [[src-decision]], as of 2026-03-10")
    assert options["v2"].startswith("`export.retention.standard`: 30 days — [[src-decision]], as of 2026-03-10")
    assert "both" in options
    # The parent's value contradicts each child's; the two children do not contradict each other.
    assert {v["key"]: v["conflicts"] for v in conflict.fix["values"]} == {
        "v1": ["v2", "v3"], "v2": ["v1"], "v3": ["v1"]}

    stale = by_kind["stale-restatement"]
    assert stale.line == line_of(vault.wiki / "client-guide.md", "`billing-api.rate-limit`")
    assert stale.fix["by"] == "src-inc-482"
    assert by_kind["index-dangling"].line == line_of(vault.wiki / "index.md", "[[retired-page")


def test_ids_do_not_depend_on_line_numbers(vault: Vault, config: Config, catalog: Catalog) -> None:
    build_fixture(vault)
    before = {f.id for f in run_lint(vault, config.lint, catalog).findings}
    for name in ("export-retention", "client-guide", "faq"):
        path = vault.wiki / f"{name}.md"
        text = path.read_text()
        path.write_text(text.replace("\n# ", "\nA new first paragraph.\n\nAnd another line.\n\n# ", 1))
    after = run_lint(vault, config.lint, catalog)
    assert {f.id for f in after.findings} == before
    assert after.findings[0].line != 0


def test_other_kinds_and_link_forms(vault: Vault, config: Config) -> None:
    wiki = vault.wiki
    (wiki / "sources" / "src-a.md").write_text(page("type: source\ntitle: A", "# A\n"))
    (wiki / "alpha.md").write_text(page(
        "type: entity\ntitle: Alpha Service\naliases:\n- The Alpha",
        "Links: [[beta]], [[The Alpha|label]], [[Beta Title#Heading]], [[beta.md]], ![[diagram.png]],"
        " [[Ghost Person]].\n\n## Claims\n- `alpha.owner`: Ghost Person\n"
        "- `alpha.size`: 3 (as of 2026-01-01, [[src-missing]])\n"
        "- `alpha.color`: red (as of 2026-01-01, [[beta]])\n",
    ))
    (wiki / "beta.md").write_text(page(
        "type: concept\ntitle: Beta Title\naliases:\n- Alpha Service",
        "See [[alpha]] and [[Ghost Person]].\n" + "x" * 600 + "\n",
    ))
    (wiki / "gamma.md").write_text(page("type: widget\ntitle: {a: 1}\nupdated: soon", "[[alpha]]\n"))
    (wiki / "delta.md").write_text("---\ntitle: [unclosed\n---\n[[alpha]]\n")

    from tests.helpers import rebuild_index

    catalog = Catalog(vault)
    catalog.refresh()
    rebuild_index(vault, catalog)
    small = config.lint.__class__(max_page_bytes=500)
    report = run_lint(vault, small, catalog)
    catalog.close()
    kinds = sorted((f.kind, f.page) for f in report.findings)
    assert ("missing-page", "alpha") in kinds  # Ghost Person: linked from alpha and beta
    assert not [k for k in kinds if k[0] == "broken-link"]  # aliases, labels, headings, .md, embeds
    assert ("uncited-claim", "alpha") in kinds
    unknown = sorted(f.facts["cited"] for f in report.findings if f.kind == "unknown-source")
    assert unknown == ["beta", "src-missing"]
    assert ("page-too-large", "beta") in kinds
    front = sorted(f.message for f in report.findings if f.kind == "invalid-front-matter")
    assert any("gamma" in m and "type 'widget'" in m for m in front)
    assert any("gamma" in m and "title must be a single value" in m for m in front)
    assert any("gamma" in m and "updated" in m for m in front)
    assert any("delta" in m and "not valid YAML" in m for m in front)
    dup = [f for f in report.findings if f.kind == "duplicate-name"]
    assert [sorted(f.pages) for f in dup] == [["alpha", "beta"]]
    assert not [f.message for f in report.findings if f.kind.startswith("index")]


def test_cli_exit_codes_and_json(vault: Vault) -> None:
    clean = cli("lint", "--vault", str(vault.root))
    assert clean.returncode == 0, clean.stderr + clean.stdout
    assert "0 finding(s)" in clean.stdout
    build_fixture(vault)
    found = cli("lint", "--json", "--vault", str(vault.root))
    assert found.returncode == 1, found.stderr
    data = json.loads(found.stdout)
    assert sorted((f["kind"], f["page"]) for f in data["findings"]) == EXPECTED
    assert all(f["id"].startswith(f["kind"] + "-") for f in data["findings"])
    human = cli("lint", "--vault", str(vault.root))
    assert human.returncode == 1 and "wiki/export-retention.md:" in human.stdout
    broken = cli("lint", "--vault", str(vault.root / "nowhere"))
    assert broken.returncode == 2 and "not a wikiwright vault" in broken.stderr
