"""index.md updated from the pages that changed equals a full rebuild from every entry (issue 24):
real pages on disk, the real catalogue (its change log), the real door."""

from __future__ import annotations

import random
from pathlib import Path

from wikiwright.core.vault import Vault
from wikiwright.wiki.catalog import Catalog
from wikiwright.wiki.index import IndexBuilder, block_of, render_index
from wikiwright.wiki.writer import PageChange

from tests.conftest import Services

TYPES = ["source", "entity", "concept", "topic", "answer", "zettel"]


def _page(page_type: str, title: str, summary: str) -> str:
    return f"---\ntype: {page_type}\ntitle: {title}\nsummary: {summary}\n---\n# {title}\n\nBody.\n"


def _write(vault: Vault, name: str, text: str) -> None:
    path = vault.wiki / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_incremental_index_equals_a_full_rebuild_through_adds_renames_moves_deletions_and_a_split(
        vault: Vault) -> None:
    rng = random.Random(7)
    catalog = Catalog(vault)
    catalog.refresh()
    builder = IndexBuilder(catalog)
    other = Catalog(vault)  # a second process's catalogue: its changes reach the builder too
    pages: dict[str, str] = {}
    written: dict[str, str] = {}
    split_seen = unsplit_seen = parts_seen = False
    try:
        for step in range(260):
            # Mostly adds (the index grows past its budget and splits), then renames, type
            # changes and deletions (it shrinks back under its budget: groups return to index.md).
            names = sorted(pages)
            roll = rng.random()
            if names and (step > 180 or roll < 0.15):
                changed = rng.sample(names, min(len(names), 1 if step <= 180 else 4))
                for name in changed:
                    (vault.wiki / f"{name}.md").unlink()
                    del pages[name]
            elif names and roll < 0.45:
                name = rng.choice(names)
                pages[name] = rng.choice(TYPES)
                title = rng.choice(["Zeta", "alpha", "Élan", "Mid"]) + f" {step}"
                _write(vault, name, _page(pages[name], title, f"now a {pages[name]}, step {step} " + "x" * 90))
                changed = [name]
            else:
                changed = []
                for n in range(rng.randint(1, 6)):
                    name = f"sources/src-{step}-{n}" if rng.random() < 0.5 else f"page-{step}-{n}"
                    pages[name] = "source" if name.startswith("sources/") else rng.choice(TYPES)
                    _write(vault, name, _page(pages[name], f"Title {rng.randint(0, 999)} {name}",
                                              f"summary of {name} " + "y" * rng.randint(0, 150)))
                    changed.append(name)
            (other if step % 5 == 0 else catalog).refresh(changed)
            if step in (120, 230):  # `wikiwright reindex` in another process: the change log starts again
                other.rebuild()
            # Every entry, where the catalogue says each was placed in its group's parts.
            expected = render_index(catalog.entries(), catalog.index_parts())
            rendered = builder.render()
            # What the door writes: the pages handed out, the others kept as they were, none beyond.
            written = {name: text for name, text in {**written, **rendered.pages}.items() if name in rendered.kept}
            assert (rendered.block, written) == expected, step
            split_seen |= bool(expected[1])
            unsplit_seen |= split_seen and not expected[1]
            parts_seen |= any("/" in name for name in expected[1])
    finally:
        catalog.close()
        other.close()
    assert split_seen and unsplit_seen  # the sequence crossed the budget both ways
    assert parts_seen  # and a group grew past one page's worth, into parts


def test_the_doors_index_md_equals_a_full_rebuild_after_many_operations(services: Services) -> None:
    door = services.pipeline.door
    for n in range(40):
        with door.operation("lint-fix", f"page {n}") as op:
            op.write([PageChange(f"thing-{n}", _page("entity" if n % 3 else "concept", f"Thing {n}", f"z {n}"),
                                 base=None)])
            op.write([PageChange(f"sources/src-{n}-{k}", _page("source", f"Source {n} {k}", "w" * 200), base=None)
                      for k in range(5)])
            if n % 7 == 6:  # a type change and a deletion along the way
                old = op.read(f"thing-{n - 2}")
                assert old is not None
                op.write([PageChange(f"thing-{n - 2}", old.replace("type: entity", "type: topic"), base=old)])
                gone = op.read(f"thing-{n - 4}")
                assert gone is not None and op.delete_page(f"thing-{n - 4}", gone)
    block, groups = render_index(services.catalog.entries(), services.catalog.index_parts())
    wiki: Path = services.vault.wiki
    assert block_of((wiki / "index.md").read_text()) + "\n" == block
    assert groups, "the index was expected over its budget"
    for stem, group_block in groups.items():
        assert block_of((wiki / f"{stem}.md").read_text()) + "\n" == group_block
