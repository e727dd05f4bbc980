"""Recognise the daemon's own pages when they come back through raw/ (a self-feeding loop).

A page copied from ``wiki/`` into ``raw/`` (by a person, a sync tool or an export script)
would be ingested into a page about itself, whose copy would be ingested again, and so on;
with a model that costs money each round. Such a source is skipped with
:data:`SELF_FEEDING_RULE`. It is recognised by

- a marker only the daemon writes: the generated index block, or front matter with a page
  ``type`` and one of the keys the engines stamp on their pages (``engine``, ``source_path``,
  ``sha256``); or
- its content: the git blob id of the bytes is one a commit of the daemon's, made here, put
  under ``wiki/``. What came from another machine does not count — neither a commit's author
  name (whatever its maker wrote: a commit "by wikiwright" holding a person's bytes under
  wiki/ would have them skipped) nor the ledger's page blobs (sync records every page it
  brings in there, as the base of the daemon's next change). Other machines' pages carry
  their front matter, recognised by the marker.
"""

from __future__ import annotations

import logging

from ..intake.ledger import Ledger
from ..vcs.queries import local_commit_with_object
from ..vcs.repo import GitRepo, git_blob_id
from ..wiki.index import INDEX_START
from ..wiki.pages import PAGE_TYPES, FrontMatterError, parse_page

log = logging.getLogger(__name__)

SELF_FEEDING_RULE = "self-feeding: this is one of wikiwright's own pages"
ENGINE_KEYS = ("engine", "source_path", "sha256")


def has_page_marker(text: str) -> bool:
    if INDEX_START in text:
        return True
    try:
        meta = parse_page(text).meta
    except FrontMatterError:
        return False
    return str(meta.get("type", "")) in PAGE_TYPES and any(key in meta for key in ENGINE_KEYS)


def in_wiki_history(repo: GitRepo, blob: str, author: str) -> bool:
    """True when a commit by the daemon (``author``) made on this machine (on no remote-tracking
    branch) put exactly these bytes under wiki/."""
    if not repo.has_blob(blob):
        return False  # the common case: bytes git has never seen; asked of the repository's object reader
    return local_commit_with_object(repo, blob, author, "wiki") is not None


def is_own_page(ledger: Ledger, repo: GitRepo, data: bytes, author: str) -> bool:
    """``ledger`` is not consulted: its page blobs include what sync brought in (see above)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    if text and has_page_marker(text):
        return True
    return in_wiki_history(repo, git_blob_id(data), author)
