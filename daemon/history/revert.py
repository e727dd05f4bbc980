"""Undo exactly one ingest with a new commit, keeping every later change.

Never ``git revert``, checkout or reset on the person's tree: for each page the ingest
touched we take its text before the ingest (``sha^``), after it (``sha``) and now (disk), and
build the new text in Python:

- front matter key by key: list values lose what the ingest added and regain what it removed;
  a scalar goes back only if nothing changed it since (a later ``updated:`` wins);
- the body by reverse patch: each hunk of the ingest's diff is located in today's text by its
  exact lines (nearest to where it should be when a block repeats) and swapped back. Unlike a
  line-based 3-way merge, a later ingest that appended next to this one's lines does not
  conflict, because nothing it wrote is touched;
- claims first, to explain: when a claim this ingest added was later superseded or disputed by
  another source, or a claim it struck was changed again since, undoing it would rewrite the
  later source's story, so the revert stops and says which commit depends on it.

A page the ingest created is removed if nobody changed it since; otherwise the revert stops.
When anything cannot be undone exactly, nothing is written. The source is recorded as
``reverted`` in the ledger, so rescans do not ingest it again by themselves.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import itertools
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import PurePosixPath
from typing import Any

from ..core.errors import NotFound, RevertBlocked, WikiwrightError
from ..core.opkinds import OpKind
from ..core.vaultpaths import INDEX_PAGE, LOG_PAGE, is_log_file
from ..door import Door, Operation
from ..history.lookup import bodies_mentioning
from ..history.regenerate import Regenerator, mask_overview
from ..history.view import source_path_of
from ..ingest.terms import TermIndex
from ..vcs.queries import is_ancestor, paths_changed, resolve_commit
from ..vcs.repo import CommitInfo
from ..wiki.index import is_group_page_name
from ..wiki.pages import Claim, FrontMatterError, iter_links, link_key, parse_claims, parse_page, render_front_matter
from ..wiki.writer import PageChange

log = logging.getLogger(__name__)

_MISSING: Any = object()
_HEX_RE = re.compile(r"^[0-9a-fA-F]{4,40}$")
SPECIAL = {INDEX_PAGE, LOG_PAGE}  # rebuilt or appended by the door, never reverse-patched (so are log archives)


@dataclass(frozen=True)
class IngestRef:
    commit: CommitInfo
    source_path: str
    sha256: str

    @property
    def title(self) -> str:
        return self.commit.subject.removeprefix("ingest: ").strip() or self.source_path


@dataclass
class PagePlan:
    page: str  # name under wiki/ without .md
    action: str  # "write" | "delete" | "none"
    text: str = ""
    current: str | None = None
    problems: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)  # claim lines made current again
    removed: list[str] = field(default_factory=list)  # claim lines taken out


@dataclass
class RevertResult:
    ingest: IngestRef
    commit: str | None
    pages: list[str]
    deleted: list[str]
    restored: list[str]
    removed: list[str]
    warnings: list[str]


# -- finding the ingest ----------------------------------------------------------------------

def find_ingest(session: Operation, target: str) -> IngestRef:
    """The ingest commit named by a commit sha, a source path (``raw/x.md``), a source page
    name (``src-x``) or a content hash prefix."""
    repo = session.repo
    target = target.strip()
    commit: CommitInfo | None = None
    if _HEX_RE.match(target):
        full = resolve_commit(repo, target)
        if full:
            found = repo.log("-1", full)
            commit = found[0] if found else None
    if commit is None:
        commit = _commit_for_source(session, target)
    if commit is None:
        raise NotFound(f"{target!r} names no ingest: give the commit (see `wikiwright history --kind "
                       "ingest`) or the source's path in raw/")
    kind = commit.trailers.get("Wikiwright-Operation", "")
    if kind != "ingest":
        raise WikiwrightError(f"commit {commit.sha[:10]} ({commit.subject}) is {kind or 'not a wikiwright'} "
                              "operation, not an ingest; only ingests can be reverted")
    source_trailer = commit.trailers.get("Wikiwright-Source", "")
    match = re.search(r"sha256:([0-9a-f]{64})", source_trailer)
    return IngestRef(commit, source_path_of(commit.trailers), match.group(1) if match else "")


def _commit_for_source(session: Operation, target: str) -> CommitInfo | None:
    vault, ledger, repo = session.vault, session.ledger, session.repo
    wanted = target.removeprefix("./")
    path = PurePosixPath(wanted)
    candidates = {wanted, f"raw/{wanted}"}
    if path.is_absolute():
        with contextlib.suppress(ValueError):  # outside the vault: not one of its sources
            candidates.add(vault.rel(vault.root / path))
    stem = link_key(wanted.removesuffix(".md"))
    sha = ""
    for source in ledger.sources():
        if (source.path in candidates or link_key(source.page) == stem
                or (len(wanted) >= 8 and source.sha256.startswith(wanted.lower()))):
            sha = source.commit_sha
            break
    if not sha:
        for candidate in sorted(candidates):
            record = ledger.get_file(candidate)
            if record is not None and record.commit_sha:
                sha = record.commit_sha
                break
    if sha:
        found = repo.log("-1", sha)
        return found[0] if found else None
    for candidate in sorted(candidates):
        found = repo.log("-F", f"--grep=Wikiwright-Source: {candidate} sha256:", "--grep=Wikiwright-Operation: ingest",
                         "--all-match", limit=1)
        if found:
            return found[0]
    return None


# -- planning one page ---------------------------------------------------------------------

def _claim_id(claim: Claim) -> tuple[str, str, str, str]:
    return (claim.key.casefold(), " ".join(claim.value.split()).casefold(), claim.as_of, link_key(claim.source))


def _claims(text: str | None) -> dict[tuple[str, str, str, str], Claim]:
    if text is None:
        return {}
    try:
        body = parse_page(text).body
    except FrontMatterError:
        body = text
    return {_claim_id(c): c for c in parse_claims(body)[0]}


def _short(claim: Claim) -> str:
    return f"`{claim.key}`: {claim.value} (as of {claim.as_of}, [[{claim.source}]])"


def _claim_problems(before: str | None, after: str, current: str, history: Any) -> list[str]:
    """Claims this ingest added or struck that a later change built on."""
    problems = []
    b, a, c = _claims(before), _claims(after), _claims(current)
    for cid, mine in a.items():
        old = b.get(cid)
        if old is not None and old.status == mine.status and old.by == mine.by:
            continue  # the ingest did not touch this claim
        now = c.get(cid)
        if now is not None and now.status == mine.status and link_key(now.by) == link_key(mine.by):
            continue  # still as the ingest left it: the reverse patch undoes it
        by_commit = history(cid, now)
        where = f" in commit {by_commit}" if by_commit else " since"
        if now is None:
            problems.append(f"{_short(mine)}, written by this ingest, was removed or rewritten{where}")
        elif old is None and now.status in ("superseded", "disputed"):
            by = f" by [[{now.by}]]" if now.by else ""
            problems.append(f"a later change depends on it: {_short(mine)}, added by this ingest, was "
                            f"{now.status}{by}{where}; revert that ingest first")
        else:
            problems.append(f"{_short(mine)}, which this ingest set to {mine.status}, is {now.status} now "
                            f"(changed{where})")
    return problems


def _merge_meta(before: dict[str, Any], after: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    result = dict(current)
    for key in [*before, *(k for k in after if k not in before)]:
        old, mine = before.get(key, _MISSING), after.get(key, _MISSING)
        if old == mine:
            continue
        now = current.get(key, _MISSING)
        if isinstance(mine, list) and isinstance(now, list) and (old is _MISSING or isinstance(old, list)):
            old_list = old if isinstance(old, list) else []
            added = [x for x in mine if x not in old_list]
            dropped = [x for x in old_list if x not in mine]
            merged = [x for x in now if x not in added] + [x for x in dropped if x not in now]
            if old is _MISSING and not merged:
                result.pop(key, None)
            else:
                result[key] = merged
        elif now == mine:
            if old is _MISSING:
                result.pop(key, None)
            else:
                result[key] = old
        # else: changed again since; the later value stands.
    return result


def _split(text: str) -> tuple[dict[str, Any] | None, str, str]:
    """(meta or None when unparseable, front matter text, body)."""
    try:
        page = parse_page(text)
    except FrontMatterError:
        return None, "", text
    front = text[: len(text) - len(page.body)] if text.endswith(page.body) else ""
    return page.meta, front, page.body


def reverse_patch(before: str, after: str, current: str) -> tuple[str | None, str]:
    """Apply the change ``after -> before`` to ``current``; (text, "") or (None, why not)."""
    a = after.splitlines(keepends=True)
    b = before.splitlines(keepends=True)
    cur = current.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    edits: list[tuple[int, int, list[str]]] = []
    shift = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old, new = a[i1:i2], b[j1:j2]
        expected = i1 + shift
        if old:
            starts = [k for k in range(len(cur) - len(old) + 1) if cur[k : k + len(old)] == old]
            if len(starts) > 1:
                with_context = [
                    k for k in starts
                    if (i1 == 0 or (k > 0 and cur[k - 1] == a[i1 - 1]))
                    and (i2 >= len(a) or (k + len(old) < len(cur) and cur[k + len(old)] == a[i2]))
                ]
                starts = with_context or starts
            if not starts:
                return None, f"lines it wrote were changed since: {old[0].strip()[:100]!r}"
            start = min(starts, key=lambda k: (abs(k - expected), k))
            edits.append((start, start + len(old), new))
        else:
            prev = a[i1 - 1] if i1 > 0 else None
            nxt = a[i1] if i1 < len(a) else None

            after_prev = [(p == 0) if prev is None else (p > 0 and cur[p - 1] == prev) for p in range(len(cur) + 1)]
            before_next = [(p == len(cur)) if nxt is None else (p < len(cur) and cur[p] == nxt)
                           for p in range(len(cur) + 1)]
            spots = [p for p in range(len(cur) + 1) if after_prev[p] and before_next[p]]
            if not spots:  # one anchor is enough when the other side was changed by someone else
                spots = [p for p in range(len(cur) + 1) if after_prev[p] or before_next[p]]
            if not spots:
                return None, f"the place it removed lines from has changed since: {new[0].strip()[:100]!r}"
            start = min(spots, key=lambda p: (abs(p - expected), p))
            edits.append((start, start, new))
        shift = edits[-1][0] - i1
    edits.sort(key=lambda e: (e[0], e[1]))
    for (s1, e1, _), (s2, _e2, _) in itertools.pairwise(edits):
        if s2 < e1 or (s2 == e1 and s1 == s2):
            return None, "its changes overlap with later changes to the same lines"
    out = list(cur)
    for start, end, new in reversed(edits):
        out[start:end] = new
    return "".join(out), ""


def _uncreate(plan: PagePlan, after: str, current: str, source: str) -> None:
    """A page this ingest created that later changes built on: what the ingest wrote goes
    (its lines, located by content; its source in ``sources``), what came later stays, under
    the page's headings. Nothing left but headings: the page goes."""
    meta_a, _, body_a = _split(after)
    meta_c, front_c, body_c = _split(current)
    mine = [line for line in body_a.splitlines(keepends=True) if line.strip() and not line.startswith("#")]
    lines = body_c.splitlines(keepends=True)
    for line in mine:
        if line in lines:
            lines.remove(line)
    # Headings whose section the ingest had filled and nothing later did go too (not the title).
    kept: list[str] = []
    for i, line in enumerate(lines):
        if line.startswith("## "):
            rest = next((x for x in lines[i + 1:] if x.strip()), "")
            if not rest or rest.startswith("## "):
                continue
        kept.append(line)
    text_body = re.sub(r"\n{3,}", "\n\n", "".join(kept))
    if not any(line.strip() and not line.startswith("#") for line in kept):
        plan.action = "delete"
        plan.removed = [_short(c) for c in _claims(current).values()]
        return
    front = front_c
    if meta_c is not None:
        sources = meta_c.get("sources")
        if isinstance(sources, list) and source:
            merged = dict(meta_c)
            merged["sources"] = [s for s in sources if link_key(str(s)) != link_key(source)
                                 and str(s) != f"raw/{source}"]
            front = render_front_matter(merged) if merged != meta_c else front_c
    plan.action, plan.text = "write", front + text_body
    old_claims, new_claims = _claims(current), _claims(plan.text)
    plan.removed = [_short(c) for cid, c in old_claims.items() if cid not in new_claims]
    del meta_a


def plan_page(page: str, before: str | None, after: str | None, current: str | None,
              later: Callable[[], list[CommitInfo]], history: Any, source: str = "") -> PagePlan:
    """``later``: the commits that changed the page since the ingest, asked for only when a
    problem is explained (a path-limited log walks the whole history)."""
    plan = PagePlan(page, "none", current=current)
    if after is None:  # the ingest removed the page: bring it back if nobody re-made it
        if current is None and before is not None:
            plan.action, plan.text = "write", before
        elif current != before:
            plan.problems.append(f"wiki/{page}.md was removed by this ingest and exists again now")
        return plan
    if current is None:
        plan.problems.append(f"wiki/{page}.md was deleted after this ingest"
                             + (f" (commit {commits[0].sha[:10]})" if (commits := later()) else ""))
        return plan
    if before is None:  # the ingest created the page
        if current == after:
            plan.action = "delete"
            plan.removed = [_short(c) for c in _claims(after).values()]
            return plan
        plan.problems += _claim_problems(None, after, current, history)
        if not plan.problems:
            _uncreate(plan, after, current, source)
        return plan
    plan.problems += _claim_problems(before, after, current, history)
    if plan.problems:
        return plan
    meta_b, _, body_b = _split(before)
    meta_a, _, body_a = _split(after)
    meta_c, front_c, body_c = _split(current)
    if meta_b is not None and meta_a is not None and meta_c is not None:
        merged = _merge_meta(meta_b, meta_a, meta_c)
        front = render_front_matter(merged) if merged != meta_c else front_c
        body, why = reverse_patch(body_b, body_a, body_c)
        text = None if body is None else front + body
    else:
        text, why = reverse_patch(before, after, current)
    if text is None:
        plan.problems.append(f"wiki/{page}.md: cannot undo exactly: {why}")
        return plan
    if text != current:
        plan.action, plan.text = "write", text
    old_claims, new_claims = _claims(current), _claims(text)
    for cid, claim in new_claims.items():
        was = old_claims.get(cid)
        if claim.is_current and was is not None and not was.is_current:
            plan.restored.append(_short(claim))
    plan.removed = [_short(c) for cid, c in old_claims.items() if cid not in new_claims]
    return plan


# -- the operation -------------------------------------------------------------------------

def _history_finder(session: Operation, sha: str, path: str, later: Callable[[], list[CommitInfo]]) -> Any:
    def find(cid: tuple[str, str, str, str], now: Claim | None) -> str:
        """The first later commit where the claim stopped being as the ingest left it."""
        for commit in reversed(later()):  # oldest first
            text = session.repo.show(commit.sha, path)
            found = _claims(text).get(cid)
            if found is None or (now is not None and found.status == now.status):
                return f"{commit.sha[:10]} ({commit.subject})"
        return ""

    return find


def revert_ingest(door: Door, terms: TermIndex, target: str, *, today: date | None = None) -> RevertResult:
    """Undo one ingest as one operation through the door (all or nothing). ``terms``: the
    process's term index (the offline engine's pages are recomputed without the source)."""
    with door.operation(OpKind.REVERT, f"undo ingest of {target}", today=today) as op:
        result = _revert(op, terms, target, today or date.today())
    result.commit = op.commit_sha
    return result


def _source_stem(ref: IngestRef, session: Operation, pages: list[str]) -> str:
    """The stem of the ingest's own source page (``src-x``)."""
    if ref.sha256:
        record = session.ledger.source(ref.sha256)
        if record is not None and record.page:
            return record.page.rsplit("/", 1)[-1]
    named = [p.removeprefix("wiki/").removesuffix(".md")
             for p in ref.commit.trailers.get("Wikiwright-Pages", "").split(", ")]
    own = [p for p in [*named, *pages] if p.startswith("sources/")]
    return own[0].rsplit("/", 1)[-1] if own else ""


def _revert(session: Operation, terms: TermIndex, target: str, today: date) -> RevertResult:
    ref = find_ingest(session, target)
    repo, sha = session.repo, ref.commit.sha
    done = repo.log("-F", f"--grep=Wikiwright-Reverts: {sha}", limit=1)
    if done:
        raise WikiwrightError(f"the ingest of {ref.source_path} ({sha[:10]}) was already reverted by "
                              f"{done[0].sha[:10]}")
    if not is_ancestor(repo, sha, "HEAD"):
        raise WikiwrightError(f"commit {sha[:10]} is not on the current branch")
    paths = [p for p in paths_changed(repo, sha) if p.startswith("wiki/") and p.endswith(".md") and p not in SPECIAL
             and not is_log_file(p)]
    names = [p.removeprefix("wiki/").removesuffix(".md") for p in paths]
    stem = _source_stem(ref, session, names)
    own = f"sources/{stem}" if stem else ""
    regen = Regenerator(session, terms, stem, today)
    # The source leaves the term index in a trial (the pages are recomputed as if it had gone),
    # made for good only once the revert commits (the door makes the delta).
    with regen.index.trial() as forgotten:
        result = _revert_with(session, ref, paths, own, regen)
    if forgotten:  # nothing when this machine's index never recorded the source
        session.apply_after_commit(forgotten)
    return result


def _revert_with(session: Operation, ref: IngestRef, paths: list[str], own: str, regen: Regenerator) -> RevertResult:
    repo, sha = session.repo, ref.commit.sha
    plans: list[PagePlan] = []
    generated: list[str] = []  # pages recomputed from the term index, not reverse-patched
    overview: tuple[str | None, str | None] | None = None
    own_current: str | None = None
    warnings: list[str] = []
    for path in paths:
        page = path.removeprefix("wiki/").removesuffix(".md")
        before = repo.show(f"{sha}^", path)
        after = repo.show(sha, path)
        if _sub_index(page, after or before or ""):
            continue  # index.md's own pages (index-sources.md, …) are rebuilt with it, like index.md
        if page == own:
            own_current = session.read(page)
            continue
        if page.startswith("sources/") or ("/" not in page and page != "overview" and regen.engine_page(page)):
            generated.append(page)  # another source's "Related pages", a concept page: recomputed
            continue
        current = session.read(page)
        later = functools.cache(functools.partial(repo.log, f"{sha}..HEAD", "--", path))
        if page == "overview":
            # Its generated block is rendered again below; the rest (a model's additions) is
            # reverse-patched like any page.
            overview = (before, after)
            before, after, current = mask_overview(before), mask_overview(after), mask_overview(current)
        plans.append(plan_page(page, before, after, current, later, _history_finder(session, sha, path, later),
                               own.rsplit("/", 1)[-1]))
    problems = [p for plan in plans for p in plan.problems]
    if problems:
        raise RevertBlocked(
            f"not reverting the ingest of {ref.source_path} ({sha[:10]}); nothing was changed:\n"
            + "\n".join(f"  - {p}" for p in problems)
        )
    if overview is not None:
        for plan in plans:
            if plan.page == "overview":
                plan.current = session.read("overview")  # its block is rendered again below
    # The source leaves the term index; what depended on it is recomputed.
    regenerated = regen.run(generated)
    warnings += regenerated.notes
    deletes = [(p.page, p.current) for p in plans if p.action == "delete" and p.current is not None]
    if own and own_current is not None:
        if regen.person.touched(own):
            warnings.append(f"wiki/{own}.md was edited by a person since; kept (its source is reverted)")
        else:
            deletes.insert(0, (own, own_current))
    deletes += list(regenerated.deletes.items())
    deleted = [page for page, text in deletes if session.delete_page(page, text)]
    warnings += [f"wiki/{page}.md changed while reverting and was kept as it is"
                 for page, _ in deletes if page not in deleted]
    changes = [PageChange(p.page, p.text, base=p.current, reason="revert") for p in plans if p.action == "write"]
    changes += [PageChange(page, new, base=old, reason="revert: recomputed without the source")
                for page, (old, new) in regenerated.edits.items() if page not in deleted]
    outcome = session.write(changes)
    block = regen.overview()
    if block is not None:
        outcome_block = session.write([block])
        outcome.written += outcome_block.written
        outcome.conflicts += outcome_block.conflicts
    warnings += [c.reason for c in outcome.conflicts]
    warnings += _dangling_links(session, deleted)
    restored = [line for plan in plans for line in plan.restored]
    removed = [line for plan in plans for line in plan.removed]
    details = [f"undoes {sha[:10]} (ingest of `{ref.source_path}`)"]
    if deleted:
        details.append("removed pages it created or that no longer have two sources: "
                       + ", ".join(f"`wiki/{p}.md`" for p in deleted))
    if regenerated.edits:
        details.append("recomputed without it: " + ", ".join(f"`wiki/{p}.md`" for p in sorted(regenerated.edits)))
    details += [f"current again: {line}" for line in restored]
    details += [f"note: {w}" for w in warnings]
    trailers = {
        "Wikiwright-Reverts": sha,
        "Wikiwright-Source": f"{ref.source_path} (reverted)",
    }
    if restored or removed:
        trailers["Wikiwright-Claims"] = f"restored {len(restored)}, removed {len(removed)}"
    session.title = f"undo ingest of {ref.title}"
    session.details += details
    session.trailers.update(trailers)
    session.always_log = True
    if ref.sha256:
        session.ledger_after_commit("set_source_state", ref.sha256, "reverted")
    return RevertResult(ref, None, [*outcome.written], deleted, restored, removed, warnings)


def _sub_index(name: str, text: str) -> bool:
    """A page index.md moved a group to (``index-sources``) or one of its parts
    (``index/sources-003``): rebuilt with index.md."""
    if not is_group_page_name(name):
        return False
    meta, _, _ = _split(text)
    return meta is not None and meta.get("type") == "index"


def _dangling_links(session: Operation, deleted: list[str]) -> list[str]:
    """Pages that still link to a page the revert removed (lint will flag them too)."""
    if not deleted:
        return []
    gone = {link_key(page): page for page in deleted}
    notes = []
    for name, text in bodies_mentioning(session, gone):  # a link to a page names its file
        if name in deleted or name in ("index", "log") or _sub_index(name, text):
            continue  # index.md and its pages (index-sources.md, …) are rebuilt without it; log.md is history
        keys = {link_key(link.target) for link in iter_links(text)}
        if keys & set(gone):  # the catalogue's copy may predate this operation's own edits
            keys = {link_key(link.target) for link in iter_links(session.read(name) or "")}
        hits = sorted(gone[key] for key in keys if key in gone)
        for page in hits:
            notes.append(f"wiki/{name}.md still links to [[{page.rsplit('/', 1)[-1]}]], removed by this revert")
    return notes
