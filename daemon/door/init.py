"""``wikiwright init``: the vault's layout, made through the door like every other change.

Folders are made directly (git does not track them); every file goes through one ``init``
operation: written only where nothing is yet (compare-and-swap against "absent"), a person's
existing files committed first under their own name, one commit with trailers.
"""

from __future__ import annotations

from pathlib import Path

from ..core.config import load_config
from ..core.errors import VaultError
from ..core.obsidian import write_ignore_filters
from ..core.opkinds import OpKind
from ..core.resources import read_shipped_text
from ..core.vault import GITIGNORE_LINES, Vault
from ..intake.ledger import Ledger
from ..vcs.repo import GitRepo
from ..wiki.catalog import Catalog
from ..wiki.index import empty_page
from ..wiki.reviewfile import HEADER as REVIEW_HEADER
from .door import Door


def _with_ignores(text: str | None) -> str:
    existing = text or ""
    missing = [line for line in GITIGNORE_LINES if line not in existing.splitlines()]
    if not missing:
        return existing
    prefix = existing if not existing or existing.endswith("\n") else existing + "\n"
    return prefix + "\n".join(missing) + "\n"


def init_vault(root: Path, author_name: str, author_email: str) -> tuple[Vault, list[str]]:
    """Create the vault layout, git-initialise it and make the first commit.

    Returns the vault and the list of things created; an empty list means the vault was
    already complete and nothing was changed.
    """
    root = root.expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise VaultError(f"{root} exists and is not a folder")
    vault = Vault(root)
    created: list[str] = []
    for folder in (vault.root, vault.raw, vault.logs, vault.wiki, vault.sources_dir, vault.state):
        if not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)
            created.append(folder.relative_to(root.parent).as_posix() + "/")
    if write_ignore_filters(root):  # raw/ and .wikiwright/ out of Obsidian's search and graph
        created.append(".obsidian/app.json")
    repo = GitRepo(root, author_name, author_email)
    if repo.init_if_missing():
        created.append(".git/")
    files = {
        "SCHEMA.md": read_shipped_text("config", "SCHEMA.md"),
        "REVIEW.md": REVIEW_HEADER,
        "wiki/index.md": empty_page("index"),
        "wiki/log.md": empty_page("log"),
        "wiki/overview.md": empty_page("overview"),
    }
    # Before this there is no vault for a VaultContext to open (its folder, state folder, config
    # and repository are what this makes): init is the one place that opens its own parts, for
    # the one operation that creates them, and closes them when it is done.
    ledger, catalog = Ledger(vault.db_path), Catalog(vault)
    try:
        door = Door(load_config(root), vault, ledger, catalog, repo)
        with door.operation(OpKind.INIT, "initialise vault") as op:
            op.settle([*files, ".gitignore"])  # files already there are the person's: theirs first
            for rel, text in files.items():
                if not (root / rel).exists() and op.write_file(rel, text, None):
                    created.append(rel)
            if op.edit_file(".gitignore", _with_ignores):
                created.append(".gitignore")
            if created:
                if (root / ".obsidian" / "app.json").exists():
                    op.add_paths([".obsidian/app.json"])  # the vault's Obsidian filters travel with it
                op.always_log = True  # a new folder or repository is worth its commit too
                op.rebuild_index()
    finally:
        catalog.close()
        ledger.close()
        repo.close()
    return vault, created
