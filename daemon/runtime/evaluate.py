"""``wikiwright eval``: the maintenance benchmark, run against the configured model.

It builds a scratch vault, tells a bundled multi-source story (``config/eval/story.json``: a
value set, restated on another page, lowered "from 100 to 50", split into two scoped values,
contradicted by an unreviewed draft, and the draft retracted) through the real pipeline and
the configured engine — the project's scripted server (``ingest/scripted_server.py``) when no
``[llm]`` model is set, the real model otherwise — and scores what the wiki became:

- supersession: every page that states an old value has it struck once a source replaces it,
  and the new values are current;
- conflicts: lint's claim conflicts after the draft, against the one the story plants
  (precision and recall);
- retraction: the draft's value is no longer current and no conflict is left;
- citations: every claim cites a source page that exists;
- quotes: the model's claim quotes found verbatim in their source (a quote that is not is held);
- what was held back and why; per source: model calls, prompt and reply tokens, time, cost.

The expectations match claims by patterns over ``key: value`` (not by the scripted replies'
exact keys), so a real model's own wording is scored the same way.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.config import Config
from ..core.resources import read_shipped_text
from ..door import Door
from ..door.init import init_vault
from ..history.retract import retract_source
from ..ingest.llm import CostLedger, Tolerance
from ..ingest.operations import quote_in_source
from ..ingest.scripted_server import DUMMY_KEY, KEY_ENV, MODEL, ScriptedServer
from ..upkeep.lint import run_lint
from ..wiki.pages import Claim, get_section, parse_claims, parse_page
from ..wiki.reviewfile import HELD_BACK, ReviewStore
from .context import VaultContext

STORY_FILE = ("config", "eval", "story.json")
_STATEMENT_RE = re.compile(r"^- `[^`]+`: .*? — “(?P<quote>.*)”\s*$")


def load_story() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(read_shipped_text(*STORY_FILE))
    return data


def story_script(story: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The scripted model's replies: the story's reply for the source an ingest prompt names."""
    names = [step["source"] for step in story["steps"] if "source" in step]

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        for message in request.get("messages") or []:
            if message.get("role") == "user":
                content = str(message.get("content") or "")
                for name in names:
                    if f"`raw/{name}`" in content:
                        return copy.deepcopy(story["replies"][name])
        return {"title": "unknown", "summary": "", "operations": []}

    return answer


# -- the scorecard ----------------------------------------------------------------------------------

@dataclass
class SourceRun:
    source: str
    state: str
    calls: int = 0
    prompt_tokens: int = 0
    reply_tokens: int = 0
    seconds: float = 0.0
    model_seconds: float = 0.0
    cost_usd: float = 0.0
    reason: str = ""  # why a source did not end ingested (the model unreachable, a reply refused)


@dataclass
class Check:
    name: str
    passed: int
    total: int
    detail: str = ""

    @property
    def ratio(self) -> float:
        return self.passed / self.total if self.total else 0.0


@dataclass
class Scorecard:
    engine: str
    story: str
    sources: list[SourceRun] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    held: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    # Per model: operations applied as sent, applied after normalising (by kind), held (by reason).
    tolerance: dict[str, Tolerance] = field(default_factory=dict)

    @property
    def score(self) -> float:
        """Percent: the mean of the checks' ratios."""
        return 100.0 * statistics.mean(c.ratio for c in self.checks) if self.checks else 0.0

    def to_json(self) -> dict[str, Any]:
        runs = [r for r in self.sources if r.calls]
        return {
            "engine": self.engine, "story": self.story, "score": round(self.score, 1),
            "checks": [{**dataclasses.asdict(c), "ratio": round(c.ratio, 3)} for c in self.checks],
            "held_back": self.held,
            "tolerance": {model: {"as_sent": t.as_sent, "normalised": t.normalised, "held": t.held,
                                  "normalised_by_kind": dict(t.kinds), "held_by_reason": dict(t.reasons)}
                          for model, t in self.tolerance.items()},
            "sources": [dataclasses.asdict(r) for r in self.sources],
            "totals": {
                "calls": sum(r.calls for r in self.sources),
                "prompt_tokens": sum(r.prompt_tokens for r in self.sources),
                "reply_tokens": sum(r.reply_tokens for r in self.sources),
                "cost_usd": round(sum(r.cost_usd for r in self.sources), 6),
                "mean_prompt_tokens_per_source": round(statistics.mean(r.prompt_tokens for r in runs)) if runs else 0,
                "mean_seconds_per_source": round(statistics.mean(r.seconds for r in self.sources), 3)
                if self.sources else 0.0,
                "seconds": round(self.seconds, 2),
            },
        }

    def render(self) -> str:
        lines = [f"wikiwright eval — story: {self.story}; engine: {self.engine}", ""]
        width = max(len(c.name) for c in self.checks) if self.checks else 10
        for c in self.checks:
            mark = "ok  " if c.passed == c.total and c.total else "FAIL"
            lines.append(f"  {mark} {c.name:<{width}}  {c.passed}/{c.total}  {100 * c.ratio:5.1f}%"
                         + (f"  ({c.detail})" if c.detail else ""))
        lines.append("")
        lines.append(f"  {'source':<18} {'state':<9} {'calls':>5} {'prompt tok':>10} {'reply tok':>9} "
                     f"{'seconds':>8} {'model s':>8} {'cost $':>9}")
        for r in self.sources:
            lines.append(f"  {r.source:<18} {r.state:<9} {r.calls:>5} {r.prompt_tokens:>10} {r.reply_tokens:>9} "
                         f"{r.seconds:>8.2f} {r.model_seconds:>8.2f} {r.cost_usd:>9.5f}")
        totals = self.to_json()["totals"]
        lines.append(f"  {'total':<18} {'':<9} {totals['calls']:>5} {totals['prompt_tokens']:>10} "
                     f"{totals['reply_tokens']:>9} {self.seconds:>8.2f} {'':>8} {totals['cost_usd']:>9.5f}")
        lines.append("")
        if self.held:
            lines.append("  held back:")
            for item in self.held:
                lines.append(f"    - {item['source']} → {item['page']}: {item['reason']}")
        else:
            lines.append("  held back: nothing")
        for model, tolerance in self.tolerance.items():
            lines.append(f"  tolerance ({model}): {tolerance.line()}")
        lines.append("")
        lines.append(f"score: {self.score:.1f}%")
        return "\n".join(lines)


# -- reading the wiki -----------------------------------------------------------------------------

def _claims(vault_wiki: Path) -> list[tuple[str, Claim]]:
    found = []
    for path in sorted(vault_wiki.glob("*.md")):
        if path.stem in ("index", "log"):
            continue
        try:
            body = parse_page(path.read_text(encoding="utf-8")).body
        except ValueError:
            continue
        claims, _ = parse_claims(body)
        found += [(path.stem, c) for c in claims]
    return found


def _text(claim: Claim) -> str:
    return f"{claim.key}: {claim.value}"


def _supersession_checks(claims: list[tuple[str, Claim]], expectations: list[dict[str, Any]]) -> list[Check]:
    checks = []
    for exp in expectations:
        old = re.compile(exp["old"])
        stating = sorted({page for page, c in claims if old.search(_text(c))})
        still = sorted({page for page, c in claims if old.search(_text(c)) and c.is_current})
        applied = [p for p in stating if p not in still]
        detail = exp["about"] + (f"; still current on {', '.join(still)}" if still else "")
        if not stating:
            detail = exp["about"] + "; no page states the old value"
        checks.append(Check(f"superseded ({exp['by']})", len(applied), len(stating), detail))
        news = [re.compile(p) for p in exp["new"]]
        current = [n for n in news if any(n.search(_text(c)) and c.is_current for _, c in claims)]
        checks.append(Check(f"new value current ({exp['by']})", len(current), len(news)))
    return checks


def _conflict_findings(door: Door, config: Config) -> list[set[str]]:
    """The values each claim conflict lint reports puts against each other."""
    report = run_lint(door.vault, config.lint, door.catalog)
    found = []
    for finding in report.findings:
        if finding.kind != "claim-conflict":
            continue
        values = {str(c.get("value")) for c in finding.facts.get("claims", []) if isinstance(c, dict)}
        found.append({f"{finding.facts.get('key', '')}: {v}" for v in values} or {finding.message})
    return found


def _conflict_checks(conflicts: list[set[str]], expected: list[dict[str, Any]]) -> list[Check]:
    """Precision over the values put in conflict (a value that should have been superseded is a
    false alarm), recall over the planted conflicts (all of its values in one reported conflict)."""

    def planted(value: str) -> bool:
        return any(re.search(pattern, value) for e in expected for pattern in e["values"])

    values = [v for found in conflicts for v in sorted(found)]
    right = [v for v in values if planted(v)]
    seen = [e for e in expected
            if any(all(any(re.search(p, v) for v in found) for p in e["values"]) for found in conflicts)]
    wrong = sorted(v for v in values if v not in right)
    return [
        Check("conflicts found: precision", len(right), len(values),
              "no conflict reported" if not values else (f"not expected: {'; '.join(wrong)}" if wrong else "")),
        Check("conflicts found: recall", len(seen), len(expected), "; ".join(e["about"] for e in expected)),
    ]


def _citation_check(vault_wiki: Path, claims: list[tuple[str, Claim]]) -> Check:
    sources = {p.stem for p in (vault_wiki / "sources").glob("*.md")}
    cited = [c for _, c in claims]
    valid = [c for c in cited if c.source in sources and (not c.by or c.by in sources)]
    bad = sorted({c.source for c in cited if c not in valid})
    return Check("citations valid", len(valid), len(cited), f"unknown: {', '.join(bad)}" if bad else "")


def _quote_check(vault: Any, held: list[dict[str, str]], sources: dict[str, str]) -> Check:
    verified = total = 0
    for path in sorted((vault.wiki / "sources").glob("*.md")):
        page = parse_page(path.read_text(encoding="utf-8"))
        raw = next((text for name, text in sources.items() if f"raw/{name}" in page.body), None)
        section = get_section(page.body, "Statements") or ""
        for line in section.splitlines():
            match = _STATEMENT_RE.match(line)
            if match:
                total += 1
                verified += bool(raw is not None and quote_in_source(match.group("quote"), raw))
    unverified = [h for h in held if "verbatim" in h["reason"]]
    return Check("quotes verified", verified, total + len(unverified),
                 f"{len(unverified)} quote(s) not in the source, held back" if unverified else "")


def _held(store: ReviewStore) -> list[dict[str, str]]:
    items = [i for i in store.items() if i.kind == HELD_BACK]
    held = []
    for item in items:
        source = re.search(r"`(raw/[^`]+)`", item.description)
        held.append({"source": source.group(1) if source else "", "page": ", ".join(item.pages) or "(none)",
                     "reason": str(item.fix.get("reason") or item.description)})
    return held


def _not_ingested(runs: list[SourceRun]) -> str:
    """The sources that did not end ingested, grouped by state and reason (an unreachable model
    gives every source the same reason: said once)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for r in runs:
        if r.state != "ingested":
            reason = r.reason.removeprefix("waiting for the model: ")
            reason = re.sub(r"^model calls paused \d+s more: ", "", reason)
            groups.setdefault((r.state, reason[:300]), []).append(r.source)
    return "; ".join(f"{', '.join(names)}: {state}" + (f" — {reason}" if reason else "")
                     for (state, reason), names in groups.items())


# -- running ----------------------------------------------------------------------------------------

def _usage(costs: CostLedger, after_id: int) -> tuple[int, list[tuple[Any, ...]]]:
    rows = costs._db.execute(
        "SELECT id, tokens_in, tokens_out, cost_usd, latency_s FROM llm_calls WHERE id>? AND purpose='ingest'"
        " ORDER BY id", (after_id,)).fetchall()
    last = rows[-1][0] if rows else after_id
    return int(last), rows


def run_eval(config: Config, *, use_configured_model: bool | None = None,
             script: Callable[[dict[str, Any]], Any] | None = None, story: dict[str, Any] | None = None,
             ) -> Scorecard:
    """Tell the story in a scratch vault and score it. ``use_configured_model``: None means the
    configured model when ``[llm] model`` is set, else the scripted server; ``script`` replaces
    the scripted server's replies (a deliberately broken script shows the scorer can fail)."""
    story = story or load_story()
    real = config.llm.enabled if use_configured_model is None else use_configured_model
    server: ScriptedServer | None = None
    if not real:
        server = ScriptedServer(script or story_script(story)).__enter__()
        os.environ[KEY_ENV] = DUMMY_KEY
        config = config.replace(llm=dataclasses.replace(config.llm, model=MODEL, api_base=server.url,
                                                        api_key_env=KEY_ENV))
    engine = f"scripted server ({MODEL})" if server else f"model {config.llm.model}"
    card = Scorecard(engine, str(story.get("name", "story")))
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="wikiwright-eval-") as tmp:
            vault, _ = init_vault(Path(tmp) / "vault", config.git.author_name, config.git.author_email)
            _tell(config, vault, story, card)
    finally:
        if server is not None:
            server.close()
    card.seconds = time.perf_counter() - started
    return card


def _tell(config: Config, vault: Any, story: dict[str, Any], card: Scorecard) -> None:
    expect = story["expect"]
    texts = {step["source"]: step["text"] for step in story["steps"] if "source" in step}
    ctx = VaultContext(config, vault)
    try:
        door, costs = ctx.door, ctx.costs
        services = ctx.ingest_services()
        pipeline, registrar = services.pipeline, services.registrar
        last_call = 0
        conflicts: list[set[str]] | None = None
        quotes: Check | None = None
        retract_skipped = False
        for step in story["steps"]:
            if "retract" in step:
                card.held = _held(ctx.reviews)
                quotes = _quote_check(vault, card.held, texts)
                retracted = door.ledger.get_file(f"raw/{step['retract']}")
                if retracted is not None and retracted.state == "ingested":
                    retract_source(door, f"raw/{step['retract']}", reason="eval: the story retracts it")
                else:  # its ingest failed (scored below): there is nothing to retract, nothing to crash on
                    retract_skipped = True
                continue
            name = step["source"]
            path = vault.raw / name
            path.write_text(step["text"], encoding="utf-8")
            registrar.register(path)
            t0 = time.perf_counter()
            states = []
            while (result := pipeline.drain_once()) is not None:
                states.append(result.state)
            seconds = time.perf_counter() - t0
            last_call, rows = _usage(costs, last_call)
            record = door.ledger.get_file(f"raw/{name}")
            state = record.state if record is not None else (states[-1] if states else "none")
            card.sources.append(SourceRun(
                name, state, len(rows), sum(r[1] for r in rows), sum(r[2] for r in rows),
                round(seconds, 3), round(sum(r[4] for r in rows), 3), round(sum(r[3] for r in rows), 6),
                "" if state == "ingested" or record is None else record.reason))
            if name == expect["conflicts"]["after"]:
                conflicts = _conflict_findings(door, config)
        if quotes is None:
            card.held = _held(ctx.reviews)
            quotes = _quote_check(vault, card.held, texts)
        claims = _claims(vault.wiki)
        card.checks += _supersession_checks(claims, expect["supersessions"])
        card.checks += _conflict_checks(conflicts or [], expect["conflicts"]["expected"])
        retraction = expect.get("retraction")
        if retraction:
            gone = re.compile(retraction["gone"])
            left = sorted({p for p, c in claims if gone.search(_text(c)) and c.is_current})
            after = _conflict_findings(door, config)
            card.checks.append(Check(
                f"retracted ({retraction['source']})", 0 if retract_skipped else int(not left) + int(not after), 2,
                "; ".join(x for x in ("not ingested, so not retracted" if retract_skipped else "",
                                      f"still current on {', '.join(left)}" if left else "",
                                      f"{len(after)} conflict(s) left" if after else "") if x)))
        card.checks.append(_citation_check(vault.wiki, claims))
        card.checks.append(quotes)
        ingested = [r for r in card.sources if r.state == "ingested"]
        card.checks.append(Check("sources ingested", len(ingested), len(card.sources),
                                 _not_ingested(card.sources)))
        card.tolerance = costs.tolerance()
    finally:
        ctx.close()
