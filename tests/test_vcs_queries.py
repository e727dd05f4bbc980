"""vcs/queries.py on a real repository: the answers callers outside vcs/ rely on, including
names git would quote or match as patterns, and the "no" answers that are exit statuses."""

from __future__ import annotations

from pathlib import Path

import pytest
from wikiwright.vcs import queries
from wikiwright.vcs.repo import GitRepo

from tests.helpers import git


@pytest.fixture
def repo(tmp_path: Path, isolated_env: dict[str, str]) -> GitRepo:
    root = tmp_path / "vault"
    (root / ".wikiwright").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    found = GitRepo(root)
    found.commit_contents({"wiki/a.md": b"alpha\n", "raw/na\u00efve [1].md": b"x\n"}, "first", {"Kind": "one"})
    found.commit_contents({"wiki/b.md": b"Beta widgets\n"}, "second", {"Kind": "two"})
    return found


def test_commits_ancestry_and_changed_paths(repo: GitRepo) -> None:
    second, first = queries.rev_list(repo, "HEAD")
    assert queries.rev_list(repo, "HEAD", grep="Kind: one") == [first]
    assert queries.rev_list(repo, "no-such-branch") == []
    assert queries.resolve_commit(repo, first[:10]) == first and queries.resolve_commit(repo, "nope") is None
    assert queries.is_ancestor(repo, first, second) and not queries.is_ancestor(repo, second, first)
    assert not queries.is_ancestor(repo, "0" * 40, second)  # unknown: a "no", not an error
    assert queries.ancestors_among(repo, {first, second}, first) == {first}
    assert queries.ancestors_among(repo, {first}, "refs/remotes/origin/main") == set()
    assert queries.merge_base(repo, first, second) == first
    assert queries.paths_changed(repo, first) == ["raw/na\u00efve [1].md", "wiki/a.md"]  # a root commit, unquoted
    assert queries.paths_changed_by(repo, [first, second]) == {"raw/na\u00efve [1].md", "wiki/a.md", "wiki/b.md"}
    assert [c.sha for c in queries.commit_authors(repo, "HEAD")] == [second, first]
    assert queries.paths_in_history(repo, ":(glob)wiki/**/b.md", "wiki/b.md") == ["wiki/b.md"]
    assert queries.all_commits(repo) == {first, second}
    assert queries.unpublished_commits(repo) == {first, second}  # no remote-tracking branch holds them


def test_files_matching_words_and_tracked_names(repo: GitRepo) -> None:
    git(repo.root, "checkout", "-q", "--", ".")
    assert queries.files_containing(repo, ["WIDGETS"], "wiki") == ["wiki/b.md"]  # case-insensitive
    assert queries.files_containing(repo, ["gamma"], "wiki") == []  # no match: exit status 1
    # Matched literally: "[1]" is no character class, so "raw/naïve 1.md" would not match.
    assert queries.tracked(repo, "raw/na\u00efve [1].md") == ["raw/na\u00efve [1].md"]
    assert queries.tracked(repo, "raw/na\u00efve 1.md") == []
    (repo.root / "wiki" / "a.md").write_text("changed\n", encoding="utf-8")
    (repo.root / "wiki" / "new.md").write_text("new\n", encoding="utf-8")
    assert {(s.code, s.path) for s in queries.worktree_status(repo, "wiki")} == {(" M", "wiki/a.md"),
                                                                               ("??", "wiki/new.md")}


def test_refs_read_and_updated_in_one_batch(repo: GitRepo) -> None:
    second, first = queries.rev_list(repo, "HEAD")
    queries.update_refs(repo, {"refs/claims/one": first, "refs/claims/two": second})
    assert queries.for_each_ref(repo, ["refs/claims/"], ("refname", "objectname", "contents:subject")) == [
        ("refs/claims/one", first, "first"), ("refs/claims/two", second, "second")]
    queries.update_refs(repo, {"refs/claims/one": None, "refs/claims/three": first})
    assert [ref for ref, in queries.for_each_ref(repo, ["refs/claims/"])] == ["refs/claims/three",
                                                                                 "refs/claims/two"]
