"""The five-source story, with pages written by hand (no model), for query/history tests.

Each source goes through the real Pipeline (ledger, page writer, index, log, commit with
trailers); only the planning step is this file's: it edits the pages the way a model's
operations would, with claim lines in DESIGN.md §1 format.

1. raw/design-doc.md   billing API: 100 req/s per client             (creates [[billing-api]])
2. raw/team-notes.md   owner: the payments team
3. raw/inc-482.md      incident: the limit is now 50 req/s — *replaces* the 100 (strikes it)
4. raw/runbook.md      timeout: 30 seconds
5. raw/draft-faq.md    says 200 req/s without saying it replaces anything (a conflict)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

from wikiwright.core.vault import Vault
from wikiwright.ingest.plan import IngestPlan, source_page_name
from wikiwright.intake.extract import SourceText
from wikiwright.intake.ledger import FileRecord
from wikiwright.wiki.pages import Claim, Page, get_section, parse_claims, parse_page, render_page, set_section
from wikiwright.wiki.writer import PageChange

from tests.conftest import Services

ENTITY = "billing-api"


@dataclass(frozen=True)
class Step:
    path: str
    title: str
    day: date
    text: str
    claims: tuple[tuple[str, str], ...]  # (key, value) stated by the source
    replaces: bool = False  # the source says its values replace the old ones


STEPS = (
    Step("raw/design-doc.md", "Billing API design", date(2026, 3, 16),
         "# Billing API design\n\nThe billing API allows 100 requests per second per client.\n",
         (("billing-api.rate-limit", "100 requests per second per client"),)),
    Step("raw/team-notes.md", "Team notes", date(2026, 3, 20),
         "# Team notes\n\nThe payments team owns the billing API.\n",
         (("billing-api.owner", "the payments team"),)),
    Step("raw/inc-482.md", "INC-482 postmortem", date(2026, 4, 3),
         "# INC-482 postmortem\n\nFrom now on the billing API rate limit is 50 requests per second per "
         "client, replacing the old limit of 100.\n",
         (("billing-api.rate-limit", "50 requests per second per client"),), replaces=True),
    Step("raw/runbook.md", "Billing runbook", date(2026, 4, 10),
         "# Billing runbook\n\nBilling API calls time out after 30 seconds.\n",
         (("billing-api.timeout", "30 seconds"),)),
    Step("raw/draft-faq.md", "Draft FAQ", date(2026, 4, 12),
         "# Draft FAQ\n\nQ: What is the billing API rate limit? A: 200 requests per second per client.\n",
         (("billing-api.rate-limit", "200 requests per second per client"),)),
)


def _read(vault: Vault, page: str) -> str | None:
    path = vault.wiki / f"{page}.md"
    return path.read_text(encoding="utf-8") if path.exists() else None


def entity_text(vault: Vault, step: Step, source_stem: str) -> tuple[str, int, int]:
    """The billing-api page after ``step``: (text, claims added, claims superseded)."""
    current = _read(vault, ENTITY)
    if current is None:
        meta = {"type": "entity", "title": "Billing API", "summary": "The API for invoices and payments.",
                "sources": [], "updated": step.day, "tags": [], "aliases": []}
        body = "# Billing API\n\nThe billing API serves invoices and payments.\n\n## Claims\n"
    else:
        page = parse_page(current)
        meta, body = dict(page.meta), page.body
    claims, _ = parse_claims(body)
    section = get_section(body, "Claims") or "## Claims\n"
    lines = section.rstrip("\n").split("\n")
    superseded = 0
    for key, _value in step.claims:
        if not step.replaces:
            continue
        for claim in claims:
            if claim.key == key and claim.is_current:
                old_line = claim.render()
                lines = [claim.with_status("superseded", source_stem).render() if ln == old_line else ln
                         for ln in lines]
                superseded += 1
    for key, value in step.claims:
        lines.append(Claim(key, value, step.day.isoformat(), source_stem).render())
    body = set_section(body, "Claims", "\n".join(lines) + "\n")
    meta["sources"] = [*meta.get("sources", []), step.path]
    meta["updated"] = step.day
    return render_page(Page(meta, body)), len(step.claims), superseded


def source_text(step: Step, sha256: str) -> str:
    meta = {"type": "source", "title": step.title, "summary": step.text.splitlines()[2][:200],
            "sources": [step.path], "updated": step.day, "tags": ["source"], "aliases": [],
            "source_path": step.path, "sha256": sha256}
    return render_page(Page(meta, f"# {step.title}\n\n{step.text.splitlines()[2]}\n"))


class StoryPlanner:
    engine = "handmade-story"

    def __init__(self, services: Services) -> None:
        self.services = services
        self.steps = {step.path: step for step in STEPS}

    def plan(self, record: FileRecord, source: SourceText, data: bytes, today: date) -> IngestPlan:
        step = self.steps[record.path]
        vault = self.services.vault
        page = source_page_name(self.services.ledger, vault, record.path)
        stem = page.rsplit("/", 1)[-1]
        text, added, superseded = entity_text(vault, step, stem)
        changes = [PageChange(page, source_text(step, record.sha256), reason="source page"),
                   PageChange(ENTITY, text, base=_read(vault, ENTITY), reason="claims")]
        return IngestPlan(record=record, title=step.title, source_page=page, changes=changes,
                          engine=self.engine, claims_added=added, claims_superseded=superseded)


def build_story(services: Services, upto: int = 5, steps: tuple[Step, ...] = STEPS) -> list[str]:
    """Ingest the first ``upto`` of ``steps``, one commit each; returns the ingest commit shas."""
    planner = StoryPlanner(services)
    planner.steps.update({step.path: step for step in steps})
    services.pipeline.planner = planner
    overview = services.vault.wiki / "overview.md"
    # The entity page is linked from the overview, so lint has no orphan to report.
    overview.write_text(overview.read_text() + "\nStart at [[billing-api]].\n")
    services.repo.commit_paths(["wiki/overview.md"], "overview: link the billing API",
                               {"Wikiwright-Operation": "user-edit"})
    commits = []
    for step in steps[:upto]:
        services.drop(Path(step.path).name, step.text)
        results = services.drain()
        assert [r.state for r in results] == ["ingested"], results
        commits.append(results[0].commit)
    return commits
