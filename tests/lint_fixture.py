"""A hand-built wiki reproducing the cases lint must catch, written page by page.

- [[export-retention]] links a person, Dana Whitfield, who has no page;
- a draft FAQ claims exports are "kept for 7 days" (`export.retention`) next to a decision of
  30 days standard / 90 days enterprise (`export.retention.standard` / `.enterprise`);
- the billing API rate limit of 100/s was superseded by 50/s, but [[client-guide]] restates 100;
- [[old-notes]] has no inbound links;
- index.md lists [[retired-page]], which has no page.
"""

from __future__ import annotations

from pathlib import Path

from wikiwright.core.vault import Vault
from wikiwright.wiki.catalog import Catalog
from wikiwright.wiki.index import INDEX_END

from tests.helpers import git, rebuild_index


def page(meta: str, body: str) -> str:
    return f"---\n{meta.strip()}\n---\n\n{body.lstrip()}"


SOURCES = {
    "src-decision": "Export retention decision (2026-03-10)",
    "src-faq-draft": "Support FAQ draft",
    "src-design-doc": "Billing API design doc",
    "src-inc-482": "Incident 482 review",
}

PAGES = {
    "export-retention": page(
        "type: topic\ntitle: Export retention\nsummary: How long exports are kept.\nupdated: 2026-03-10\n",
        """
# Export retention

Decided on 2026-03-10 by [[Dana Whitfield]]; the [[faq]] answers customers.

## Claims
- `export.retention.standard`: 30 days (as of 2026-03-10, [[src-decision]])
- `export.retention.enterprise`: 90 days (as of 2026-03-10, [[src-decision]])
""",
    ),
    "faq": page(
        "type: answer\ntitle: FAQ (draft)\nsummary: Customer questions.\ntags:\n- draft\n",
        """
# FAQ (draft)

How long are exports kept? See [[export-retention|retention]] and [[billing-api#Limits]].

## Claims
- `export.retention`: kept for 7 days (as of 2026-02-01, [[src-faq-draft]])
""",
    ),
    "billing-api": page(
        "type: entity\ntitle: Billing API\naliases:\n- Billing service\n",
        """
# Billing API

Client guidance lives in [[client-guide]].

## Limits

## Claims
- ~~`billing-api.rate-limit`: 100 requests per second per client (as of 2026-03-16, [[src-design-doc]])~~ \
superseded by [[src-inc-482]]
- `billing-api.rate-limit`: 50 requests per second per client (as of 2026-04-03, [[src-inc-482]])
""",
    ),
    "client-guide": page(
        "type: topic\ntitle: Client guide\n",
        """
# Client guide

Talk to the [[Billing service]] politely.

## Claims
- `billing-api.rate-limit`: 100 requests per second per client (as of 2026-03-16, [[src-design-doc]])
""",
    ),
    "old-notes": page(
        "type: topic\ntitle: Old notes\n",
        "# Old notes\n\nScribbles about the [[billing-api]].\n",
    ),
}


def build_fixture(vault: Vault, commit: bool = True) -> None:
    for stem, title in SOURCES.items():
        text = page(f"type: source\ntitle: {title}\nsources:\n- raw/{stem}.md\n", f"# {title}\n\nSummary.\n")
        (vault.sources_dir / f"{stem}.md").write_text(text, encoding="utf-8")
    for stem, text in PAGES.items():
        (vault.wiki / f"{stem}.md").write_text(text, encoding="utf-8")
    catalog = Catalog(vault)
    try:
        catalog.refresh()
        rebuild_index(vault, catalog)
    finally:
        catalog.close()
    index = vault.wiki / "index.md"
    text = index.read_text(encoding="utf-8")
    index.write_text(text.replace(INDEX_END, "- [[retired-page|Retired page]]\n" + INDEX_END), encoding="utf-8")
    if commit:
        git(vault.root, "add", "-A", "wiki")
        git(vault.root, "commit", "-q", "-m", "hand-built wiki")


def line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


EXPECTED = sorted([
    ("broken-link", "export-retention"),
    ("claim-conflict", "export-retention"),  # one question: `export.retention` and its two child keys
    ("stale-restatement", "client-guide"),
    ("orphan", "old-notes"),
    ("index-dangling", "index"),
])
