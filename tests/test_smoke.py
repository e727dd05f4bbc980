from __future__ import annotations

from tests.conftest import Services
from tests.helpers import git, ingest_commits


def test_drop_one_markdown_file_gives_a_committed_source_page(services: Services) -> None:
    services.drop("notes.md", "# Billing API\n\nThe billing API allows 100 requests per second per client.\n")
    results = services.drain()
    assert [r.state for r in results] == ["ingested"]
    page = services.vault.wiki / "sources" / "src-notes.md"
    assert "100 requests per second" in page.read_text()
    assert len(ingest_commits(services.vault.root)) == 1
    assert "[[src-notes|Billing API]]" in (services.vault.wiki / "index.md").read_text()
    assert "## [" in (services.vault.wiki / "log.md").read_text()
    assert git(services.vault.root, "status", "--porcelain", "--", "wiki").strip() == ""
