"""The optional model-assisted lint check: contradictions written only in prose.

Off by default (``lint.prose_check``) and only with a model configured. Pages go to the
model in small shards of linked pages (``lint.prose_shard_pages``), each page's prose cut to
a bounded size, and the run stops when ``lint.prose_token_budget`` (estimated tokens, prompt
plus reply) would be exceeded. The model only proposes: a finding is kept only when both
sentences it quotes occur verbatim in the pages it names (checked here, whitespace runs
aside); anything else is dropped and counted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..core.config import Config
from ..upkeep.lint import Finding, stem
from ..wiki.pages import get_section, iter_links, link_key

log = logging.getLogger(__name__)

KIND = "prose-contradiction"
MAX_PAGE_CHARS = 6000
MIN_QUOTE_CHARS = 12
CHARS_PER_TOKEN = 4
SYSTEM = (
    "You check wiki pages for contradictions between statements of fact. Report only pairs of "
    "sentences that cannot both be true. Quote each sentence exactly, character for character, as "
    "it appears in the page; do not paraphrase. Report nothing when unsure."
)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["contradictions"],
    "properties": {
        "contradictions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["page_a", "quote_a", "page_b", "quote_b", "why"],
                "properties": {
                    "page_a": {"type": "string"}, "quote_a": {"type": "string"},
                    "page_b": {"type": "string"}, "quote_b": {"type": "string"},
                    "why": {"type": "string"},
                },
            },
        },
    },
}


class JsonClient(Protocol):
    def complete_json(self, *, purpose: str, system: str, user: str, schema: dict[str, Any],
                      model: str | None = None, max_tokens: int | None = None) -> tuple[dict[str, Any], Any]: ...


@dataclass
class ProseResult:
    findings: list[Finding] = field(default_factory=list)
    shards_checked: int = 0
    shards_skipped: int = 0  # left for the next run: the token budget was spent
    dropped: int = 0  # model claims whose quotes were not verbatim in the pages
    tokens_used: int = 0


def _flat(text: str) -> str:
    return " ".join(text.split())


def prose_of(body: str) -> str:
    """The page text the check reads: everything but the Claims section (code checks those)."""
    claims = get_section(body, "Claims")
    if claims:
        body = body.replace(claims, "")
    return body[:MAX_PAGE_CHARS]


def make_shards(texts: Mapping[str, str], size: int) -> list[list[str]]:
    """Pages in groups of at most ``size``, linked pages together where possible."""
    names = sorted(texts)
    by_key = {link_key(stem(n)): n for n in names}
    neighbours = {
        n: [m for link in iter_links(texts[n]) if (m := by_key.get(link_key(link.target))) and m != n]
        for n in names
    }
    placed: set[str] = set()
    shards: list[list[str]] = []
    for name in names:
        if name in placed:
            continue
        shard: list[str] = []
        queue = [name]
        while queue and len(shard) < size:
            current = queue.pop(0)
            if current in placed:
                continue
            placed.add(current)
            shard.append(current)
            queue.extend(m for m in neighbours[current] if m not in placed)
        shards.append(shard)
    return shards


def verify(reply: Mapping[str, Any], texts: Mapping[str, str]) -> tuple[list[Finding], int]:
    """Keep the contradictions whose two quotes occur verbatim in the named pages."""
    flat = {name: _flat(text) for name, text in texts.items()}
    by_stem = {link_key(stem(n)): n for n in texts}
    kept: list[Finding] = []
    dropped = 0
    for item in reply.get("contradictions") or []:
        try:
            a = by_stem.get(link_key(str(item["page_a"]).strip("[] ")))
            b = by_stem.get(link_key(str(item["page_b"]).strip("[] ")))
            qa, qb = _flat(str(item["quote_a"])), _flat(str(item["quote_b"]))
        except (KeyError, TypeError):
            dropped += 1
            continue
        ok = (
            a is not None and b is not None and len(qa) >= MIN_QUOTE_CHARS and len(qb) >= MIN_QUOTE_CHARS
            and qa != qb and qa in flat[a] and qb in flat[b]
        )
        if not ok:
            dropped += 1
            continue
        assert a is not None and b is not None
        (pa, sa), (pb, sb) = sorted(((a, qa), (b, qb)))
        line = next((n for n, row in enumerate(texts[pa].splitlines(), 1) if sa[:40] in _flat(row)), 0)
        kept.append(Finding(
            KIND, pa, line,
            f"[[{stem(pa)}]] says \"{sa}\" but [[{stem(pb)}]] says \"{sb}\" (found by the model; quotes "
            f"checked); tick to dismiss",
            {"a": [pa, sa], "b": [pb, sb]}, tuple(sorted({pa, pb})),
        ))
    return kept, dropped


def run_prose_check(config: Config, texts: Mapping[str, str], client: JsonClient) -> ProseResult:
    """``texts``: page name -> page body. Calls the model once per shard within the budget."""
    result = ProseResult()
    prose = {name: prose_of(body) for name, body in texts.items() if prose_of(body).strip()}
    budget = config.lint.prose_token_budget
    reply_tokens = min(config.llm.reply_budget_tokens, 1500)
    shards = make_shards(prose, max(2, config.lint.prose_shard_pages))
    for index, shard in enumerate(shards):
        if len(shard) < 2:
            continue  # one page alone: contradictions inside a page are the ingest's to catch
        user = "\n\n".join(f"=== page: {stem(name)} ===\n{prose[name]}" for name in shard)
        estimate = (len(SYSTEM) + len(user)) // CHARS_PER_TOKEN + reply_tokens
        if result.tokens_used + estimate > budget:
            result.shards_skipped = sum(1 for s in shards[index:] if len(s) >= 2)
            log.info("prose check: token budget spent; %d shard(s) wait for the next run", result.shards_skipped)
            break
        # Small bounded shards: the cheaper route_model when one is configured.
        reply, usage = client.complete_json(purpose="lint-prose", system=SYSTEM, user=user, schema=SCHEMA,
                                            model=config.llm.route_model or None, max_tokens=reply_tokens)
        used = int(getattr(usage, "tokens_in", 0)) + int(getattr(usage, "tokens_out", 0))
        result.tokens_used += used or estimate
        result.shards_checked += 1
        kept, dropped = verify(reply, {name: prose[name] for name in shard})
        result.findings += kept
        result.dropped += dropped
    return result

