"""``wikiwright history``: the operations on the wiki, read from commit trailers.

Every commit the daemon makes carries ``Wikiwright-Operation: <kind>`` with a kind from the
one vocabulary (:class:`..core.opkinds.OpKind`) and, where they apply, ``Wikiwright-Source``
and ``Wikiwright-Pages``. A commit without that trailer is a person's own commit and is shown
as ``manual``. Names older commits used (``consolidation``) are read as today's kind, so
``--kind K`` selects every kind history prints. Read-only: safe while the daemon runs.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..core.errors import NotFound, WikiwrightError
from ..core.opkinds import OpKind, parse_kind
from ..core.vault import Vault
from ..vcs.queries import paths_in_history
from ..vcs.repo import CommitInfo, GitRepo
from ..wiki.catalog import Catalog

log = logging.getLogger(__name__)

KINDS = tuple(kind.value for kind in OpKind)
_ISO_DAY_RE = re.compile(r"^\d{4}-\d{1,2}-\d{1,2}")
_AGO_RE = re.compile(r"^(\d+)\s+(minute|hour|day|week|month|year)s?\s+ago$")
_UNIT_DAYS = {"minute": 1 / 1440, "hour": 1 / 24, "day": 1, "week": 7, "month": 30, "year": 365}


def kind_of(trailer: str) -> str:
    """The kind a ``Wikiwright-Operation`` value stands for today (old names mapped)."""
    try:
        return parse_kind(trailer).value
    except ValueError:
        return trailer.strip() or OpKind.MANUAL.value  # a kind from a newer wikiwright: shown as is


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``--since``: a date (``2026-04-01``, ``2026-04-01T09:30``), ``N days ago`` (minutes,
    hours, weeks, months, years), ``yesterday`` or ``today``. Anything else is an error, never
    "everything" (git's own parser reads ``2026-13-45`` and ``not a date`` as some date)."""
    value = " ".join(text.strip().lower().split())
    now = now or datetime.now().astimezone()
    if _ISO_DAY_RE.match(value):
        try:
            when = datetime.fromisoformat(value.replace(" ", "T"))
        except ValueError:
            raise WikiwrightError(f"--since {text!r} is not a real date (expected YYYY-MM-DD)") from None
        return when if when.tzinfo else when.astimezone()
    if value in ("today", "yesterday"):
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        return midnight - timedelta(days=1 if value == "yesterday" else 0)
    match = _AGO_RE.match(value)
    if match:
        return now - timedelta(days=int(match.group(1)) * _UNIT_DAYS[match.group(2)])
    raise WikiwrightError(f"--since {text!r} is not a date; use YYYY-MM-DD, 'N days ago' (or hours, weeks, "
                          f"months), 'yesterday' or 'today'")


@dataclass(frozen=True)
class Operation:
    sha: str
    date: str
    kind: str
    subject: str
    author: str
    source: str  # vault-relative path of the source, when the operation had one
    pages: tuple[str, ...]
    trailers: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "sha": self.sha, "date": self.date, "kind": self.kind, "subject": self.subject,
            "author": self.author, "source": self.source or None, "pages": list(self.pages),
            "trailers": self.trailers,
        }


def source_path_of(trailers: dict[str, str]) -> str:
    """``raw/x.md`` from a ``Wikiwright-Source: raw/x.md sha256:...`` trailer."""
    value = trailers.get("Wikiwright-Source", "").strip()
    return re.sub(r"\s+(sha256:[0-9a-f]+|\(.*\))$", "", value)


def operation_of(commit: CommitInfo) -> Operation:
    pages = tuple(p.strip() for p in commit.trailers.get("Wikiwright-Pages", "").split(",") if p.strip())
    return Operation(
        commit.sha, commit.date, kind_of(commit.trailers.get("Wikiwright-Operation", "manual")), commit.subject,
        commit.author, source_path_of(commit.trailers), pages, dict(commit.trailers),
    )


def page_path(vault: Vault, catalog: Catalog, repo: GitRepo, name: str) -> str:
    """The vault-relative path of a page named as a person would: ``billing-api``,
    ``[[Billing API]]``, ``wiki/sources/src-x.md``; pages deleted since are found in history."""
    raw = name.strip()
    if raw.startswith("[[") and raw.endswith("]]"):
        raw = raw[2:-2].split("|", 1)[0].split("#", 1)[0]
    raw = raw.removeprefix("./").removeprefix("wiki/").removesuffix(".md").strip()
    if not raw:
        raise WikiwrightError("history needs a page name, e.g. wikiwright history billing-api")
    if (vault.wiki / f"{raw}.md").is_file():
        return f"wiki/{raw}.md"
    catalog.refresh()
    found = catalog.resolve(raw)
    if found is not None:
        return f"wiki/{found}.md"
    stem = raw.rsplit("/", 1)[-1]
    paths = paths_in_history(repo, f":(glob)wiki/**/{stem}.md", f"wiki/{stem}.md")  # git errors: none
    if paths:
        return paths[0]
    raise NotFound(f"no page {name!r} in the wiki or its history")


def operations(
    repo: GitRepo,
    *,
    path: str | None = None,
    source: str | None = None,
    since: str | None = None,
    kind: str | None = None,
    limit: int | None = None,
    source_aliases: dict[str, str] | None = None,
) -> list[Operation]:
    """Operations newest first, filtered. ``source`` matches the source path (or a part of
    it), the content hash prefix, or a source page name given in ``source_aliases``."""
    if kind is not None:
        try:
            kind = parse_kind(kind).value
        except ValueError as exc:
            raise WikiwrightError(str(exc)) from None
    args: list[str] = []
    if since:
        args.append(f"--since={parse_since(since).isoformat()}")
    if path:
        args += ["--", path]
    wanted_source = None
    if source:
        wanted_source = (source_aliases or {}).get(source.casefold(), source).casefold()
        wanted_source = wanted_source.removeprefix("./")
    result: list[Operation] = []
    for commit in repo.log(*args):
        op = operation_of(commit)
        if kind and op.kind != kind:
            continue
        if wanted_source and wanted_source not in commit.trailers.get("Wikiwright-Source", "").casefold():
            continue
        result.append(op)
        if limit and len(result) >= limit:
            break
    return result


def format_operation(op: Operation) -> list[str]:
    date = op.date[:16].replace("T", " ")
    head = f"{op.sha[:10]} {date}  {op.kind:<15} {op.subject}"
    lines = [head]
    if op.source:
        lines.append(f"{'':>28}source: {op.source}")
    if op.pages:
        shown = ", ".join(op.pages[:6]) + (f" (+{len(op.pages) - 6} more)" if len(op.pages) > 6 else "")
        lines.append(f"{'':>28}pages: {shown}")
    for key in ("Wikiwright-Claims", "Wikiwright-Reverts", "Wikiwright-Retracted"):
        if key in op.trailers:
            lines.append(f"{'':>28}{key.removeprefix('Wikiwright-').lower()}: {op.trailers[key]}")
    return lines
