"""Cost bounded per source: an estimate before the first model call, and what happens over it.

The estimate is made from the prompts the ingest would send (code builds the first one for
real; the other parts differ only by their text) plus an expected reply per call. Over
``llm.max_tokens_per_source`` a source either waits in REVIEW.md for a person's tick
(``llm.over_cost = "review"``: nothing is spent before) or is ingested by a cheaper plan
(``"outline"``: the source's outline and only the sections that concern pages of the wiki).
A tick is remembered in the ledger by content hash, so the approved version goes through at
full size and a changed file asks again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from ..core.opkinds import FixAction
from ..intake.ledger import FileRecord, Ledger
from ..wiki.catalog import Catalog
from ..wiki.reviewfile import Proposal, proposal

CHARS_PER_TOKEN = 4
COSTLY_SOURCE = "costly-source"
COSTLY_HEADING = "Costly sources waiting for approval"
OUTLINE_ITEMS = 80  # headings listed in a cheaper plan's outline
_HEADING_RE = re.compile(r"^#{1,6}[ \t]+\S", re.MULTILINE)
BLOCK_CHARS = 2000  # a source with no headings is cut into blocks of about this size
WAITING_REASON = "waiting for approval in REVIEW.md"
# A waiting source is looked at again this often (a rejected one is then skipped); a tick
# wakes it at once.
APPROVAL_RECHECK_SECONDS = 3600.0


@dataclass(frozen=True)
class CostEstimate:
    calls: int
    tokens_in: int
    tokens_out: int

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out


def estimate(prompt_chars: list[int], reply_tokens: int) -> CostEstimate:
    """Tokens of ``prompt_chars`` (one entry per call) plus ``reply_tokens`` expected per call."""
    tokens_in = sum(chars // CHARS_PER_TOKEN + 1 for chars in prompt_chars)
    return CostEstimate(len(prompt_chars), tokens_in, reply_tokens * len(prompt_chars))


def expected_reply_tokens(reply_budget_tokens: int) -> int:
    """A reply uses about a quarter of its budget (the budget is a cap for the worst case)."""
    return max(200, reply_budget_tokens // 4)


# -- approval ------------------------------------------------------------------------------------

def _approval_key(sha256: str) -> str:
    return f"cost-approved:{sha256}"


def is_approved(ledger: Ledger, sha256: str) -> bool:
    return bool(ledger.get_kv(_approval_key(sha256), ""))


def approve(ledger: Ledger, path: str, sha256: str) -> bool:
    """A person ticked the source in REVIEW.md: remember it and wake the waiting job.

    True when the job was waiting (it is due now)."""
    ledger.set_kv(_approval_key(sha256), "1")
    return ledger.wake(path, sha256, "approved in REVIEW.md; waiting for a worker")


def waiting_reason(est: CostEstimate, bound: int) -> str:
    return (f"{WAITING_REASON}: this source would cost about {est.tokens:,} tokens in {est.calls} model "
            f"call(s), over llm.max_tokens_per_source ({bound:,})")


def costly_proposal(record: FileRecord, tokens: int, calls: int, bound: int) -> Proposal:
    """The REVIEW.md line a person ticks to let the source in (one per version of the file)."""
    description = (f"`{record.path}`: this source would cost about {tokens:,} tokens in {calls} model "
                   f"call(s), over llm.max_tokens_per_source ({bound:,}); tick to ingest it")
    return proposal(COSTLY_SOURCE, description, (),
                    {"action": FixAction.INGEST_SOURCE, "path": record.path, "sha256": record.sha256,
                     "tokens": tokens, "calls": calls},
                    facts={"source": record.sha256}, heading=COSTLY_HEADING)


# -- the cheaper plan ----------------------------------------------------------------------------

def _sections(text: str) -> list[tuple[str, str]]:
    """(title, text) of each part of the source: its markdown sections, else blocks of paragraphs."""
    starts = [m.start() for m in _HEADING_RE.finditer(text)]
    if len(starts) >= 2:
        bounds = [0, *starts] if starts[0] > 0 else starts
        bounds.append(len(text))
        out: list[tuple[str, str]] = []
        for a, b in pairwise(bounds):
            chunk = text[a:b]
            if chunk.strip():
                first = chunk.strip().splitlines()[0].lstrip("#").strip()
                out.append((first[:100], chunk))
        return out
    blocks: list[str] = []
    current = ""
    for block in re.split(r"(?<=\n\n)", text):
        if current and len(current) + len(block) > BLOCK_CHARS:
            blocks.append(current)
            current = ""
        current += block
    if current.strip():
        blocks.append(current)
    return [(chunk.strip().splitlines()[0][:100], chunk) for chunk in blocks if chunk.strip()]


def outline_plan(text: str, catalog: Catalog, max_chars: int) -> str:
    """The source's outline and, within ``max_chars``, the sections that concern the wiki
    (they name a page, or state a claim a page holds), most concerned first, in source order."""
    sections = _sections(text)
    scored = []
    for index, (_, chunk) in enumerate(sections):
        score = 2 * len(catalog.mentioned_pages(chunk)[:10]) + 3 * len(catalog.claim_pages(chunk, limit=5))
        if score:
            scored.append((score, index))
    outline = "\n".join(f"- {title}" for title, _ in sections[:OUTLINE_ITEMS])
    if len(sections) > OUTLINE_ITEMS:
        outline += f"\n- [… {len(sections) - OUTLINE_ITEMS} more]"
    head = ("[A cheaper plan: this source is over the cost bound, so only its outline and the sections that "
            "concern pages of the wiki are shown.]\nOutline:\n" + outline + "\n\n")
    room = max(0, max_chars - len(head))
    kept: list[int] = []
    for _, index in sorted(scored, key=lambda t: (-t[0], t[1])):
        size = len(sections[index][1])
        if size <= room:
            kept.append(index)
            room -= size
    return head + "".join(sections[i][1] for i in sorted(kept))
