"""The one door every change to the vault passes through (issue 15).

::

    from ..door import Door, OpKind, PageChange

    door = ctx.door                        # the VaultContext's (its ledger, catalogue, repository); recovery
    with door.operation(OpKind.LINT_FIX, "title") as op:      # the vault's write lock
        text = op.read("topics/x")        # the person's uncommitted edits committed first, as theirs
        op.write([PageChange("topics/x", new_text, base=text)])   # CAS + three-way merge;
                                          # unmergeable: person's text kept, REVIEW.md proposal
        op.edit_file("REVIEW.md", mutate) # other vault files (REVIEW.md, .gitignore, wiki/*), CAS too
        op.propose("held-back", [proposal])   # REVIEW.md proposals through wiki/reviewfile.py
        op.add_paths(["raw/x.md"])        # committed as they are on disk
        op.details.append("…"); op.trailers["Wikiwright-Source"] = "…"
        op.ledger_after_commit("set_kv", key, value)   # journaled, made even after a crash
        op.apply_after_commit(delta)      # a StateDelta (the term index's): journaled the same way
        op.after_commit(lambda sha: ...)  # e.g. ledger.finish_ingested (not journaled)
    # exit: index.md (generated block, CAS), one log.md entry, exactly one commit with
    # trailers, ledger updates, journal cleared; an exception undoes every file written.
    op.commit_sha

Details in :mod:`.door` (the rules) and :mod:`.journal` (crash safety).
"""

from ..core.opkinds import OpKind
from ..wiki.writer import Conflict, PageChange, WriteOutcome
from .door import COMMIT, Door, Operation

__all__ = ["COMMIT", "Conflict", "Door", "OpKind", "Operation", "PageChange", "WriteOutcome"]
