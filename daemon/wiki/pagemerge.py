"""Merging two machines' versions of one page, by what a page is made of.

A plain three-way text merge sees a page as lines; a page is front matter, a body, and a
``## Claims`` section. Merged separately they rarely conflict:

- **front matter**: key by key; a key only one side changed takes that side's value; lists
  both changed (``sources``, ``tags``, ``aliases``) are the union; ``updated`` the later date;
  any other key both changed takes the remote's value and is reported.
- **claims**: by claim (key, value, date, citing source): both machines' claims are kept; a
  claim one side struck through (superseded, disputed, retracted) stays struck — the
  supersession is re-applied whichever machine made it. Other lines of the section are kept
  from both sides.
- **the rest of the body**: the same three-way merge as a person's live edits. Where both
  changed the same lines, the remote's lines stay on the page (the published history wins,
  so two machines resolving at once end the same) and this machine's lines are returned as
  conflict hunks for REVIEW.md: no line is lost and no conflict marker is ever written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..wiki.pages import (
    Claim,
    FrontMatterError,
    Page,
    get_section,
    parse_claim_line,
    parse_page,
    render_page,
    set_section,
)

# merge3(base, ours, theirs, favour) -> (text, clean); favour "" leaves diff3-style markers.
Merge3 = Callable[[str, str, str, str], tuple[str, bool]]

CLAIMS = "Claims"
_PLACEHOLDER = "## Claims\n"
_MARK_OURS, _MARK_BASE, _MARK_SPLIT, _MARK_THEIRS = "<<<<<<< ", "||||||| ", "=======", ">>>>>>> "


@dataclass
class PageMerge:
    text: str
    clean: bool
    hunks: list[tuple[str, str]] = field(default_factory=list)  # (this machine's lines, the remote's)
    notes: list[str] = field(default_factory=list)


def resolve_marked(marked: str) -> tuple[str, list[tuple[str, str]]]:
    """Resolve a ``git merge-file --diff3`` text: where both sides only added lines (the base
    part is empty) both additions stay, the remote's first; elsewhere the remote's lines stay
    and this machine's are returned as (ours, theirs) hunks. The result has no marker."""
    out: list[str] = []
    hunks: list[tuple[str, str]] = []
    part: str | None = None
    ours: list[str] = []
    base: list[str] = []
    theirs: list[str] = []
    for line in marked.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        if part is None and line.startswith(_MARK_OURS):
            part, ours, base, theirs = "ours", [], [], []
        elif part == "ours" and line.startswith(_MARK_BASE):
            part = "base"
        elif part in ("ours", "base") and bare == _MARK_SPLIT:
            part = "theirs"
        elif part == "theirs" and line.startswith(_MARK_THEIRS):
            if not "".join(base).strip():
                out += theirs + [x for x in ours if x not in theirs]
            else:
                out += theirs
                hunks.append(("".join(ours), "".join(theirs)))
            part = None
        elif part == "ours":
            ours.append(line)
        elif part == "base":
            base.append(line)
        elif part == "theirs":
            theirs.append(line)
        else:
            out.append(line)
    return "".join(out), hunks


def merge_plain(base: str, ours: str, theirs: str, merge3: Merge3) -> PageMerge:
    """Line merge; see :func:`resolve_marked` for what happens where both sides changed lines."""
    marked, clean = merge3(base, ours, theirs, "")
    if clean:
        return PageMerge(marked, True)
    text, hunks = resolve_marked(marked)
    return PageMerge(text, not hunks, hunks)


def _split_claims(body: str) -> tuple[str, list[Claim], list[str], bool]:
    """(body with an empty Claims section, claims, other lines of the section, had a section)."""
    section = get_section(body, CLAIMS)
    if section is None:
        return body, [], [], False
    claims: list[Claim] = []
    other: list[str] = []
    for line in section.splitlines()[1:]:  # the heading line is the placeholder's
        claim = parse_claim_line(line)
        if claim is not None:
            claims.append(claim)
        elif line.strip():
            other.append(line)
    return set_section(body, CLAIMS, _PLACEHOLDER), claims, other, True


def _claim_id(claim: Claim) -> tuple[str, str, str, str]:
    return (claim.key, claim.value, claim.as_of, claim.source)


def merge_claims(base: list[Claim], ours: list[Claim], theirs: list[Claim]) -> list[Claim]:
    """Both sides' claims; a claim either side struck through stays struck."""
    def state(claim: Claim) -> tuple[str, str, str]:
        return (claim.status, claim.by, claim.note)

    base_ids = {_claim_id(c): c for c in base}
    ours_ids = {_claim_id(c): c for c in ours}
    theirs_ids = {_claim_id(c): c for c in theirs}
    merged: list[Claim] = []
    for claim in [*theirs, *(c for c in ours if _claim_id(c) not in theirs_ids)]:
        key = _claim_id(claim)
        other = ours_ids.get(key) if key in theirs_ids else None
        if other is None and key in base_ids and state(claim) == state(base_ids[key]):
            continue  # one side removed it (a revert or retraction), the other left it as it was
        if other is not None and claim.is_current and not other.is_current:
            claim = other  # the supersession made on this machine is re-applied
        merged.append(claim)
    return merged


def _merge_lists(base: Any, ours: Any, theirs: Any) -> list[Any]:
    out: list[Any] = []
    for value in [*(theirs or []), *(ours or [])]:
        if value not in out:
            out.append(value)
    removed = [v for v in (base or []) if v not in (ours or []) or v not in (theirs or [])]
    return [v for v in out if v not in removed]


def merge_meta(base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any],
               notes: list[str]) -> dict[str, Any]:
    missing = object()
    merged: dict[str, Any] = {}
    for key in [*theirs, *(k for k in ours if k not in theirs)]:
        b, o, t = base.get(key, missing), ours.get(key, missing), theirs.get(key, missing)
        if o == t:
            value = o
        elif o == b:
            value = t
        elif t == b:
            value = o
        elif isinstance(o, list) and isinstance(t, list):
            value = _merge_lists(b if isinstance(b, list) else [], o, t)
        elif key == "updated" and o is not missing and t is not missing:
            value = max(str(o), str(t))
            value = o if str(o) == value else t
        else:
            value = t if t is not missing else o
            notes.append(f"front matter `{key}`: this machine had {o!r}, the remote {t!r}; the remote's kept")
        if value is not missing:
            merged[key] = value
    return merged


def merge_page(base: str, ours: str, theirs: str, merge3: Merge3) -> PageMerge:
    """Merge two versions of a page; see the module docstring for the rules."""
    try:
        pages = [parse_page(text) for text in (base, ours, theirs)]
    except FrontMatterError:
        return merge_plain(base, ours, theirs, merge3)
    b, o, t = pages
    notes: list[str] = []
    meta = merge_meta(b.meta, o.meta, t.meta, notes)
    (b_body, b_claims, _b_other, _), (o_body, o_claims, o_other, o_has), (t_body, t_claims, t_other, t_has) = (
        _split_claims(p.body) for p in pages
    )
    body = merge_plain(b_body, o_body, t_body, merge3)
    text = body.text
    if o_has or t_has:
        claims = merge_claims(b_claims, o_claims, t_claims)
        other = [*t_other, *(line for line in o_other if line not in t_other)]
        section = "## Claims\n" + "".join(f"{c.render()}\n" for c in claims) + "".join(f"{x}\n" for x in other)
        if get_section(text, CLAIMS) is None:
            text = text.rstrip("\n") + "\n\n" if text.strip() else text
        text = set_section(text, CLAIMS, section)
    merged_text = text if not meta and not (o.meta or t.meta) else render_page(Page(meta, text))
    return PageMerge(merged_text, body.clean and not notes, body.hunks, notes)
