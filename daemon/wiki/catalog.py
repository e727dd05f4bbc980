"""The page catalogue: one row per page (type, title, aliases, summary) plus SQLite FTS5.

It is refreshed incrementally from file stats, so building index.md, finding pages a source
mentions, routing and search all cost in proportion to what changed, not to the wiki's size.
The catalogue is a cache: deleting ``.wikiwright/`` loses nothing, ``wikiwright reindex``
rebuilds it from the pages.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..core.sqlitedb import Schema, open_db
from ..core.vault import Vault
from ..core.vaultpaths import is_log_file
from ..wiki.pages import FrontMatterError, link_key, parse_claims, parse_page

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
    name TEXT PRIMARY KEY,          -- path under wiki/ without .md, e.g. sources/src-notes
    type TEXT NOT NULL DEFAULT '',
    title TEXT NOT NULL DEFAULT '',
    summary TEXT NOT NULL DEFAULT '',
    aliases TEXT NOT NULL DEFAULT '[]',
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    error TEXT NOT NULL DEFAULT '',
    fts_rowid INTEGER NOT NULL DEFAULT -1,  -- its row in pages_fts (-1: none), deleted by rowid when it changes
    link_key TEXT NOT NULL DEFAULT ''       -- how a [[link]] names it by file name (pages.link_key)
);
CREATE INDEX IF NOT EXISTS pages_link_key ON pages(link_key);
CREATE VIRTUAL TABLE IF NOT EXISTS pages_fts USING fts5(
    name UNINDEXED, title, aliases, body, tokenize = 'unicode61 remove_diacritics 2'
);
-- A page's title and aliases, case-folded: what a [[link]] may name it by besides its file name.
CREATE TABLE IF NOT EXISTS page_names (
    key TEXT NOT NULL,
    page TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS page_names_key ON page_names(key);
CREATE INDEX IF NOT EXISTS page_names_page ON page_names(page);
-- The claim index: every current (or disputed) claim of every page, and the words of its key
-- and value, so an ingest finds the pages stating what a source states without reading them.
CREATE TABLE IF NOT EXISTS claims (
    id INTEGER PRIMARY KEY,
    page TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    key_terms INTEGER NOT NULL,     -- distinct words of the key
    value_terms INTEGER NOT NULL,   -- distinct words of the value
    attr_terms INTEGER NOT NULL DEFAULT 0  -- distinct words of the key's last part (its attribute)
);
CREATE INDEX IF NOT EXISTS claims_page ON claims(page);
CREATE INDEX IF NOT EXISTS claims_key ON claims(key);
CREATE TABLE IF NOT EXISTS claim_terms (
    term TEXT NOT NULL,
    claim INTEGER NOT NULL,
    field TEXT NOT NULL             -- k key | r key's attribute (counts as k too) | v value | a page's title, aliases
);
CREATE INDEX IF NOT EXISTS claim_terms_term ON claim_terms(term);
CREATE INDEX IF NOT EXISTS claim_terms_claim ON claim_terms(claim);
-- What a claim is about beyond its key: the words of the sentence a source page quotes for it
-- (its Statements section), by claim key, so a correction in other words still reaches it.
CREATE TABLE IF NOT EXISTS statement_terms (
    term TEXT NOT NULL,
    key TEXT NOT NULL,
    page TEXT NOT NULL              -- the source page quoting it
);
CREATE INDEX IF NOT EXISTS statement_terms_term ON statement_terms(term);
CREATE INDEX IF NOT EXISTS statement_terms_page ON statement_terms(page);
-- Every page row changed (added, updated, removed), in order, by any process: what a reader
-- keeping something built from the rows (index.md's groups, wiki/index.py) must look at again.
CREATE TABLE IF NOT EXISTS page_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL
);
-- Where index.md's group pages list each page (wiki/index.py): the part of its group it was
-- given when it joined, and its place there. Kept across a rebuild of the rows above; the part
-- pages themselves say the same, so a catalogue made again from the pages finds it there.
CREATE TABLE IF NOT EXISTS index_parts (
    page TEXT PRIMARY KEY,
    type TEXT NOT NULL,             -- the page type (group) it was placed in
    part INTEGER NOT NULL,
    place INTEGER NOT NULL
);
"""
# Bumped when a table above is added: an older catalogue is rebuilt once (it is a cache).
# 2: claim terms read camelCase and abbreviations; 3: what a claim is about (issue 22);
# 4: pages_fts rows found by rowid, links resolved by index (issue 24: cost flat in the wiki's size)
# 5: page_changes (index.md updated from the pages that changed)
CATALOG_VERSION = 5
SCHEMA_VERSION = 4  # 2: pages.fts_rowid, pages.link_key, page_names; 3: page_changes; 4: index_parts
KEPT_CHANGES = 5000  # page_changes rows kept; a reader further behind builds again from every row
_STATEMENT_RE = re.compile(r"^- `(?P<key>[^`\n]+)`: .*? — “(?P<quote>.*)”\s*$", re.MULTILINE)
MAX_ABOUT_TERMS = 16  # words of a quoted sentence kept for a claim (its subject, not its every word)
_WORD_RE = re.compile(r"\w+", re.UNICODE)
# Titles shorter than this are too common to link automatically.
MIN_LINK_TITLE = 3
MAX_TITLE_WORDS = 8


@dataclass(frozen=True)
class PageEntry:
    name: str
    type: str
    title: str
    summary: str
    aliases: tuple[str, ...]
    error: str = ""

    @property
    def stem(self) -> str:
        return self.name.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class ClaimHit:
    """A claim whose key (and maybe value) a text states: the page holding it must be routed."""

    page: str
    key: str
    value: str
    key_share: float  # share of the key's words found in the text
    value_hits: int  # words of the value found in the text (the old number of a correction)
    by_key: bool = True  # False: reached by its attribute and what it is about, not by its key

    @property
    def score(self) -> float:
        return 2 * self.key_share + min(self.value_hits, 4) / 4


@dataclass(frozen=True)
class SearchHit:
    name: str
    title: str
    score: float
    snippet: str


def _name_key(label: str) -> str:
    """A title or alias as :meth:`Catalog.resolve` compares it with a link's key."""
    return label.casefold()


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD_RE.findall(text)]


# Words too common to say what a claim is about.
_CLAIM_STOPWORDS = frozenset({"a", "an", "and", "as", "at", "by", "for", "from", "in", "is", "it", "of", "on", "or",
                              "per", "the", "to", "with"})


# Words of a quoted sentence that say nothing of what it is about.
_SUBJECT_STOPWORDS = frozenset({"are", "was", "were", "been", "being", "has", "have", "had", "not", "now", "this",
                                "that", "these", "those", "its", "our", "their", "we", "they", "will", "would",
                                "can", "could", "should", "may", "must", "all", "any", "each", "every", "than",
                                "then", "also", "into", "over", "under", "after", "before", "since", "until",
                                "longer", "more", "less", "only", "just", "still", "going", "forward", "day",
                                "days", "week", "weeks", "month", "months", "year", "years", "kept", "keep",
                                "set", "get", "got", "use", "used", "uses", "allow", "allows", "say", "says"})


# camelCase and PascalCase keys (``RateLimit``, ``maxRPS``) are read as their words.
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# Abbreviations common in claim keys and values, read as the words they stand for on both sides
# (a key's ``gw`` and a source's "gateway" meet at ``gateway``; ``rps`` at "requests per second").
_ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    "gw": ("gateway",), "db": ("database",), "req": ("request",), "resp": ("response",),
    "rps": ("request", "second"), "qps": ("query", "second"), "msg": ("message",), "env": ("environment",),
    "prod": ("production",), "repo": ("repository",), "auth": ("authentication",), "cfg": ("configuration",),
    "config": ("configuration",), "max": ("maximum",), "lim": ("limit",), "ttl": ("time", "live"),
    "sec": ("second",), "ms": ("millisecond",), "mem": ("memory",), "svc": ("service",), "addr": ("address",),
    "num": ("number",), "conn": ("connection",), "perf": ("performance",), "dept": ("department",),
}


def claim_terms(text: str) -> set[str]:
    """The words a claim key or value is matched by: case-folded, camelCase split, a plural ``s``
    dropped (``logs`` finds ``log-retention``), common abbreviations read as their words (``gw``
    finds "gateway"), very common words left out."""
    found: set[str] = set()
    for word in _WORD_RE.findall(_CAMEL_RE.sub(" ", text.replace("_", " "))):
        word = word.casefold()
        if word in _CLAIM_STOPWORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        found.update(_ABBREVIATIONS.get(word, (word,)))
    return found


def _is_log_archive(name: str) -> bool:
    """log.md's archives (wiki/log/2026-12.md) are history, not pages: no row, no search hit,
    no index.md line (log.md itself keeps its row, as a special page)."""
    return name.startswith("log/") and is_log_file(f"wiki/{name}.md")


class Catalog:
    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        # A cache (rebuilt by `reindex`): no need to survive a power cut.
        self._db = open_db(vault.state / "catalog.db", Schema("catalog", SCHEMA_VERSION, _SCHEMA),
                           synchronous="NORMAL", autocommit=False)
        self._lock = threading.RLock()
        if int(self._db.execute("PRAGMA user_version").fetchone()[0]) < CATALOG_VERSION:
            with self._db:  # an older claim index: index every page again on the next refresh
                for table in ("claims", "claim_terms", "statement_terms"):
                    self._db.execute(f"DROP TABLE IF EXISTS {table}")
                for table in ("pages", "pages_fts", "page_names"):
                    self._db.execute(f"DELETE FROM {table}")
            self._db.executescript(_SCHEMA)
            with self._db:
                # Emptied, not dropped: change numbers go on from where they were, so a reader of
                # the log (another process's index builder) sees it was cut and builds again.
                self._db.execute("DELETE FROM page_changes")
                self._db.execute(f"PRAGMA user_version={CATALOG_VERSION}")
        self._phrases: dict[tuple[str, ...], set[str]] | None = None
        self._phrases_of: dict[str, list[tuple[str, ...]]] = {}

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- refresh -----------------------------------------------------------------

    def scan(self) -> dict[str, tuple[int, int]]:
        """(size, mtime_ns) of every page on disk; touches no database, so it may run in a
        thread beside a query (search overlaps the two)."""
        return self._scan()

    def _scan(self) -> dict[str, tuple[int, int]]:
        found: dict[str, tuple[int, int]] = {}
        # Plain strings, not Path objects: this runs before every search, over every page,
        # and pathlib's parsing was most of its cost at 10,000 pages.
        root = os.fspath(self.vault.wiki)
        cut = len(root) + 1
        stack = [root]
        while stack:
            folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.name.endswith(".md") and entry.is_file(follow_symlinks=False):
                    rel = entry.path[cut:-3]
                    rel = rel.replace(os.sep, "/") if os.sep != "/" else rel
                    if _is_log_archive(rel):
                        continue
                    st = entry.stat(follow_symlinks=False)
                    found[rel] = (st.st_size, st.st_mtime_ns)
        return found

    def refresh(self, names: list[str] | None = None, *, scanned: dict[str, tuple[int, int]] | None = None,
                ) -> list[str]:
        """Bring the catalogue up to date; returns the names that changed.

        With ``names``, only those pages are looked at (cheap, after our own writes); with
        ``scanned``, a :meth:`scan` result taken a moment ago stands in for a new one.
        """
        with self._lock:
            # Only the rows asked about: after an ingest's own writes this is a few lookups by
            # name, not a read of the whole table (issue 24).
            known = {row[0]: ((row[1], row[2]), int(row[3])) for row in self._known_rows(names)}
            if names is None:
                on_disk = scanned if scanned is not None else self._scan()
                candidates = set(on_disk) | set(known)
            else:
                on_disk = {}
                for name in names:
                    if _is_log_archive(name):
                        continue
                    path = self.vault.wiki / f"{name}.md"
                    try:
                        st = path.lstat()
                    except (FileNotFoundError, NotADirectoryError):  # a folder that became a page
                        continue
                    on_disk[name] = (st.st_size, st.st_mtime_ns)
                candidates = set(names)
            changed = []
            with self._db:
                for name in sorted(candidates):
                    stat = on_disk.get(name)
                    old = known.get(name)
                    if stat is None:
                        if old is not None:
                            self._db.execute("DELETE FROM pages WHERE name=?", (name,))
                            self._db.execute("DELETE FROM pages_fts WHERE rowid=?", (old[1],))
                            self._db.execute("DELETE FROM page_names WHERE page=?", (name,))
                            self._forget_claims(name)
                            changed.append(name)
                        continue
                    if old is not None and old[0] == stat:
                        continue
                    self._index_page(name, stat, None if old is None else old[1])
                    changed.append(name)
                if changed:
                    self._db.executemany("INSERT INTO page_changes(name) VALUES (?)", [(n,) for n in changed])
                    self._db.execute("DELETE FROM page_changes WHERE seq <= "
                                     "(SELECT max(seq) FROM page_changes) - ?", (KEPT_CHANGES,))
            if changed:
                self._update_phrases(changed)
            return changed

    def _known_rows(self, names: list[str] | None) -> list[tuple[str, int, int, int]]:
        return self._rows_by_key("SELECT name, size, mtime_ns, fts_rowid FROM pages", "name", names)

    def _rows_by_key(self, query: str, key: str, names: list[str] | None) -> list[Any]:
        """The rows of ``query`` whose ``key`` is one of ``names`` (looked up by key, 500 to a
        statement), or every row when ``names`` is None. The caller holds the lock."""
        if names is None:
            return self._db.execute(query).fetchall()
        rows: list[Any] = []
        for start in range(0, len(names), 500):
            chunk = names[start : start + 500]
            rows += self._db.execute(f"{query} WHERE {key} IN ({','.join('?' * len(chunk))})", chunk).fetchall()
        return rows

    def _index_page(self, name: str, stat: tuple[int, int], fts_rowid: int | None = None) -> None:
        """(Re)index one page; ``fts_rowid``: its row in pages_fts so far (None: a page new to the catalogue)."""
        known = fts_rowid is not None
        path = self.vault.wiki / f"{name}.md"
        error = ""
        meta: dict[str, object] = {}
        body = ""
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
            page = parse_page(text)
            meta, body = page.meta, page.body
        except FrontMatterError as exc:
            error = str(exc)
            body = text
        except OSError as exc:
            error = f"unreadable: {exc.strerror}"
        title = str(meta.get("title") or name.rsplit("/", 1)[-1])
        raw_aliases = meta.get("aliases") or []
        aliases = [str(a) for a in raw_aliases] if isinstance(raw_aliases, list) else [str(raw_aliases)]
        page_type = str(meta.get("type") or ("source" if name.startswith("sources/") else ""))
        if known:
            # By rowid: ``name`` is UNINDEXED in FTS5, so a delete by name would read the whole table.
            self._db.execute("DELETE FROM pages_fts WHERE rowid=?", (fts_rowid,))
            self._db.execute("DELETE FROM page_names WHERE page=?", (name,))
        row = self._db.execute(
            "INSERT INTO pages_fts(name, title, aliases, body) VALUES (?,?,?,?)",
            (name, title, " ".join(aliases), body),
        ).lastrowid
        self._db.execute(
            "INSERT OR REPLACE INTO pages(name, type, title, summary, aliases, size, mtime_ns, error, fts_rowid,"
            " link_key) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (name, page_type, title, str(meta.get("summary") or ""), json.dumps(aliases), *stat, error, row,
             link_key(name)),
        )
        self._db.executemany("INSERT INTO page_names(key, page) VALUES (?,?)",
                             [(key, name) for key in dict.fromkeys(_name_key(label) for label in [title, *aliases])])
        if known:
            self._forget_claims(name)
        if "Claims" in body or "claims" in body:
            self._index_claims(name, body, [title, *aliases])
        if "## Statements" in body:
            self._index_statements(name, body)

    def _forget_claims(self, name: str) -> None:
        self._db.execute("DELETE FROM claim_terms WHERE claim IN (SELECT id FROM claims WHERE page=?)", (name,))
        self._db.execute("DELETE FROM claims WHERE page=?", (name,))
        self._db.execute("DELETE FROM statement_terms WHERE page=?", (name,))

    def _index_claims(self, name: str, body: str, labels: list[str]) -> None:
        claims, _ = parse_claims(body)
        about = claim_terms(" ".join([name.rsplit("/", 1)[-1], *labels]))
        for claim in claims:
            if claim.status not in ("current", "disputed"):
                continue
            key_words = claim_terms(claim.key)
            attribute = claim_terms(claim.key.rsplit(".", 1)[-1]) if "." in claim.key else set()
            value_words = claim_terms(claim.value)
            cur = self._db.execute(
                "INSERT INTO claims(page, key, value, key_terms, value_terms, attr_terms) VALUES (?,?,?,?,?,?)",
                (name, claim.key, claim.value, len(key_words), len(value_words), len(attribute)),
            )
            ident = cur.lastrowid
            self._db.executemany(
                "INSERT INTO claim_terms(term, claim, field) VALUES (?,?,?)",
                [(w, ident, "r" if w in attribute else "k") for w in key_words]
                + [(w, ident, "v") for w in value_words] + [(w, ident, "a") for w in about - key_words],
            )

    def _index_statements(self, name: str, body: str) -> None:
        """The quoted sentence of each claim a source page states: its words say what the claim
        is about (``raw events`` for ``ingest-api.data-retention``)."""
        rows = []
        for match in _STATEMENT_RE.finditer(body):
            key = match.group("key")
            words = claim_terms(match.group("quote")) - claim_terms(key)
            words = {w for w in words if len(w) > 2 and not w.isdigit() and w not in _SUBJECT_STOPWORDS}
            rows += [(w, key, name) for w in sorted(words)[:MAX_ABOUT_TERMS]]
        self._db.executemany("INSERT INTO statement_terms(term, key, page) VALUES (?,?,?)", rows)

    # -- queries -----------------------------------------------------------------

    def entries(self) -> list[PageEntry]:
        with self._lock:
            rows = self._db.execute(
                "SELECT name, type, title, summary, aliases, error FROM pages ORDER BY name"
            ).fetchall()
        # Most pages have no aliases: skip the JSON parser for those (10,000 pages per ingest).
        return [PageEntry(r[0], r[1], r[2], r[3], () if r[4] == "[]" else tuple(json.loads(r[4])), r[5])
                for r in rows]

    def changes_since(self, seq: int) -> tuple[int, list[str]] | None:
        """The newest change number and the pages whose rows changed after change ``seq``, by
        any process (None: ``seq`` is older than the changes kept; read every entry again).
        ``changes_since(-1)`` gives the current number."""
        with self._lock:
            # Two statements: SQLite reads a lone max() or min() off the key, both at once by a scan.
            newest = self._db.execute("SELECT max(seq) FROM page_changes").fetchone()[0]
            oldest = self._db.execute("SELECT min(seq) FROM page_changes").fetchone()[0]
            if seq < 0:
                return int(newest or 0), []
            if newest is None or newest < seq or seq < int(oldest) - 1:
                # Emptied or started again (a rebuilt catalogue), or the reader is further behind
                # than the changes kept: what it built must be built again.
                return None if seq or newest is not None else (0, [])
            if newest == seq:
                return seq, []
            rows = self._db.execute("SELECT DISTINCT name FROM page_changes WHERE seq > ?", (seq,)).fetchall()
        return int(newest), sorted(str(r[0]) for r in rows)

    def index_parts(self, names: list[str] | None = None) -> dict[str, tuple[str, int, int]]:
        """page -> (type, part, place) where index.md's group pages list it (wiki/index.py), for
        these pages (by key) or every one."""
        with self._lock:
            rows = self._rows_by_key("SELECT page, type, part, place FROM index_parts", "page", names)
        return {str(r[0]): (str(r[1]), int(r[2]), int(r[3])) for r in rows}

    def set_index_parts(self, placed: dict[str, tuple[str, int, int]], removed: list[str]) -> None:
        """Record where pages were placed in index.md's group pages, and forget ``removed``."""
        with self._lock, self._db:
            self._db.executemany("INSERT OR REPLACE INTO index_parts(page, type, part, place) VALUES (?,?,?,?)",
                                 [(name, *slot) for name, slot in placed.items()])
            self._db.executemany("DELETE FROM index_parts WHERE page=?", [(name,) for name in removed])

    def get(self, name: str) -> PageEntry | None:
        with self._lock:
            row = self._db.execute(
                "SELECT name, type, title, summary, aliases, error FROM pages WHERE name=?", (name,)
            ).fetchone()
        return PageEntry(row[0], row[1], row[2], row[3], tuple(json.loads(row[4])), row[5]) if row else None

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM pages").fetchone()[0])

    def resolve(self, link: str) -> str | None:
        """The page a ``[[link]]`` points at (by file name, then title or alias), or None.

        Two lookups by index (the first name in order when several pages match)."""
        key = link_key(link)
        with self._lock:
            row = self._db.execute("SELECT name FROM pages WHERE link_key=? ORDER BY name LIMIT 1", (key,)).fetchone()
            if row is None:
                row = self._db.execute("SELECT page FROM page_names WHERE key=? ORDER BY page LIMIT 1",
                                       (key,)).fetchone()
        return str(row[0]) if row else None

    def _phrase_map(self) -> dict[tuple[str, ...], set[str]]:
        if self._phrases is None:
            self._phrases = {}
            self._phrases_of = {}
            for entry in self.entries():
                self._add_phrases(entry)
        return self._phrases

    def _add_phrases(self, entry: PageEntry) -> None:
        assert self._phrases is not None
        if entry.stem in {"index", "log", "overview"} or entry.type == "index" or entry.error:
            return  # index.md's own pages ("Index — Sources, part 3") are not what a source mentions
        added = []
        for label in (entry.title, *entry.aliases):
            words = tuple(_words(label))
            if not words or len(words) > MAX_TITLE_WORDS or len(" ".join(words)) < MIN_LINK_TITLE:
                continue
            if len(words) == 1 and words[0].isdigit():
                continue
            self._phrases.setdefault(words, set()).add(entry.name)
            added.append(words)
        self._phrases_of[entry.name] = added

    def _update_phrases(self, changed: list[str]) -> None:
        """Keep the phrase map in step with changed pages instead of rebuilding it over the
        whole wiki after every ingest (that was O(pages) per ingest)."""
        if self._phrases is None:
            return
        if len(changed) > 200:
            self._phrases = None  # cheaper to rebuild on next use
            return
        for name in changed:
            for words in self._phrases_of.pop(name, ()):
                holders = self._phrases.get(words)
                if holders is not None:
                    holders.discard(name)
                    if not holders:
                        del self._phrases[words]
            entry = self.get(name)
            if entry is not None:
                self._add_phrases(entry)

    def mentioned_pages(self, text: str, exclude: set[str] | None = None) -> list[str]:
        """Pages whose title or an alias occurs in ``text`` as whole words, first mention first.

        Cost grows with the text, not with the number of pages.
        """
        with self._lock:
            phrases = self._phrase_map()
        words = _words(text)
        seen: dict[str, int] = {}
        for start in range(len(words)):
            for length in range(1, MAX_TITLE_WORDS + 1):
                if start + length > len(words):
                    break
                for name in phrases.get(tuple(words[start : start + length]), ()):
                    if name not in seen and (not exclude or name not in exclude):
                        seen[name] = start
        return sorted(seen, key=lambda n: (seen[n], n))

    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        """Ranked full-text search over title, aliases and body (BM25)."""
        terms = [w for w in _WORD_RE.findall(query)]
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        with self._lock:
            rows = self._db.execute(
                "SELECT name, title, bm25(pages_fts, 0.0, 10.0, 5.0, 1.0) AS rank,"
                " snippet(pages_fts, 3, '**', '**', ' … ', 16)"
                " FROM pages_fts WHERE pages_fts MATCH ? ORDER BY rank LIMIT ?",
                (match, limit),
            ).fetchall()
        return [SearchHit(r[0], r[1], -float(r[2]), r[3]) for r in rows]

    def phrase_pages(self, phrase: str, limit: int = 200) -> list[str]:
        """Pages whose body contains the words of ``phrase`` in sequence (an FTS5 phrase query).

        Finds every page stating a claim key (``billing-api.rate-limit``) without reading the wiki.
        """
        terms = _WORD_RE.findall(phrase)
        if not terms:
            return []
        match = "body : \"" + " ".join(t.replace('"', '""') for t in terms) + "\""
        with self._lock:
            rows = self._db.execute(
                "SELECT name FROM pages_fts WHERE pages_fts MATCH ? LIMIT ?", (match, limit)
            ).fetchall()
        return [str(r[0]) for r in rows]

    def claim_pages(self, text: str, limit: int = 12) -> list[ClaimHit]:
        """Claims ``text`` speaks about, best first.

        By its key: every word of the key occurs in the text (one may be missing from a key of
        three or more words when a word of the value occurs too). By what it is about: every word
        of the key's attribute (``data-retention``) occurs, and a word of its subject — the page's
        title or aliases, or the sentence a source quoted for it (``raw events``) — occurs too;
        so a correction that shares no word with the key's subject still reaches it.

        One claim per page (its best); cost grows with the text's distinct words and the claims
        sharing them, not with the number of pages.
        """
        terms = sorted(claim_terms(text))
        if not terms:
            return []
        hits: dict[int, list[int]] = {}  # claim -> [key words (attribute's included), value, attribute, about]
        keyed_about: dict[str, int] = {}  # claim key -> words of its quoted sentences found
        slot = {"k": 0, "v": 1, "r": 2, "a": 3}
        with self._lock:
            for start in range(0, len(terms), 500):
                chunk = terms[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for claim, field, count in self._db.execute(
                    f"SELECT claim, field, count(*) FROM claim_terms WHERE term IN ({marks}) GROUP BY claim, field",
                    chunk,
                ):
                    counts = hits.setdefault(claim, [0, 0, 0, 0])
                    counts[slot.get(field, 3)] += count
                    if field == "r":
                        counts[0] += count
                for key, count in self._db.execute(
                    f"SELECT key, count(DISTINCT term) FROM statement_terms WHERE term IN ({marks}) GROUP BY key",
                    chunk,
                ):
                    keyed_about[key] = keyed_about.get(key, 0) + int(count)
            quoted_keys = [k for k, n in keyed_about.items() if n >= 2]
            keyed = [ident for ident, (k, v, r, _) in hits.items() if k >= 2 or (k >= 1 and v >= 1) or r >= 1]
            rows = []
            for start in range(0, len(keyed), 500):
                chunk = [str(i) for i in keyed[start : start + 500]]
                rows += self._db.execute(
                    f"SELECT id, page, key, value, key_terms, attr_terms FROM claims WHERE id IN ({','.join(chunk)})"
                ).fetchall()
            seen = {row[0] for row in rows}
            for start in range(0, len(quoted_keys), 500):
                chunk = quoted_keys[start : start + 500]
                rows += [row for row in self._db.execute(
                    f"SELECT id, page, key, value, key_terms, attr_terms FROM claims WHERE key IN "
                    f"({','.join('?' * len(chunk))})", chunk).fetchall() if row[0] not in seen]
        best: dict[str, ClaimHit] = {}
        for ident, page, key, value, key_terms, attr_terms in rows:
            found_key, found_value, found_attr, found_about = hits.get(ident, [0, 0, 0, 0])
            missing = key_terms - found_key
            by_key = not (missing > 1 or (missing == 1 and (key_terms < 3 or found_value == 0)))
            quoted = keyed_about.get(key, 0)
            about = found_about + quoted
            # Its attribute and a word of its subject, or two words of the sentence it was quoted from.
            by_subject = (attr_terms >= 1 and found_attr >= attr_terms and about >= 1) or quoted >= 2
            if not (by_key or by_subject):
                continue
            share = found_key / max(1, key_terms)
            if not by_key:  # reached by what it is about: ranked below every claim reached by its key
                share = min(share, 0.45) * min(about, 3) / 3
            hit = ClaimHit(page, key, value, share, found_value, by_key)
            if page not in best or hit.score > best[page].score:
                best[page] = hit
        return sorted(best.values(), key=lambda h: (-h.score, h.page))[:limit]

    def claim_keys(self) -> list[str]:
        """Every key of a current claim (a model's key is matched against these before a new one is made)."""
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT key FROM claims").fetchall()
        return [str(r[0]) for r in rows]

    def claim_key_pages(self, key: str) -> list[str]:
        """Pages holding a current claim with exactly this key."""
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT page FROM claims WHERE key=?", (key,)).fetchall()
        return [str(r[0]) for r in rows]

    def rebuild(self) -> int:
        with self._lock, self._db:
            self._db.execute("DELETE FROM pages")
            self._db.execute("DELETE FROM pages_fts")
            self._db.execute("DELETE FROM page_names")
            self._db.execute("DELETE FROM claims")
            self._db.execute("DELETE FROM claim_terms")
            self._db.execute("DELETE FROM statement_terms")
            self._db.execute("DELETE FROM page_changes")
        self.refresh()
        return self.count()

    def iter_bodies(self) -> Iterator[tuple[str, str]]:
        for entry in self.entries():
            path = self.vault.wiki / f"{entry.name}.md"
            try:
                yield entry.name, path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
