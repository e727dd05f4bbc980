"""A generated week of daily logs with planted durable facts (for tests and bench/).

Seeded and deterministic. Most lines are what real session logs are full of: one-off edits,
🟢 ephemeral chatter, transient debugging state, code blocks, a pasted secret. Planted among
them are durable facts in the ways logs carry them: marked 🔴 once, repeated without a marker
in several sessions with varied wording, under Decisions, with relative dates ("yesterday",
"last week"), and a claim whose value a later log replaces. ``FACTS`` says how to find each one
in the consolidated pages.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

START = date(2026, 11, 16)  # a Monday


@dataclass(frozen=True)
class Fact:
    name: str
    must_contain: tuple[str, ...]  # all of these, case-insensitively, somewhere in the topic pages


def _d(n: int) -> str:
    return (START + timedelta(days=n)).isoformat()


FACTS = (
    Fact("staging gate (🔴 once)", ("deploys go through the staging gate",)),
    Fact("rate limit (repeated, unmarked)", ("50 requests per second per client",)),
    Fact("replica migrations gotcha (repeated)", ("migrations", "read replica")),
    Fact("uv over pip (🔴 preference)", ("prefer uv over pip",)),
    Fact("redis dead end (What Didn't, twice)", ("caching invoice totals in redis",)),
    Fact("postgres pin (relative: yesterday)", ("pin postgres to 16.4", _d(1))),
    Fact("nightly export (relative: last week)", ("nightly export", "02:00 utc", f"week of {_d(-7)}")),
    Fact("feature flags (pattern, twice)", ("feature flags default to off in production",)),
    Fact("deploy window claim superseded", ("~~`deploy.window`: tuesdays 10:00-12:00 utc",
                                            "`deploy.window`: now wednesdays 14:00-16:00 utc")),
    Fact("squash-merge (Decisions, once)", ("squash-merge every pull request",)),
    Fact("imperative commits (request, 3 sessions)", ("imperative mood",)),
    Fact("pdf locale gotcha (🔴 once)", ("pdf renderer breaks when the locale is not en_us",)),
)

_FILES = ["src/billing/export.py", "src/billing/invoice.py", "src/api/routes.py", "src/api/auth.py",
          "src/workers/queue.py", "src/workers/retry.py", "web/src/Invoice.tsx", "web/src/Dashboard.tsx",
          "infra/terraform/db.tf", "infra/k8s/deploy.yaml", "tests/test_export.py", "tests/test_auth.py",
          "docs/runbook.md", "src/reports/monthly.py", "src/reports/tax.py", "scripts/backfill.py"]
_VERBS = ["renamed", "split", "inlined", "documented", "simplified", "typed", "reordered", "extracted",
          "deleted dead code in", "added logging to", "tightened checks in", "moved constants out of"]
_THINGS = ["the totals helper", "the currency formatter", "the pagination loop", "the auth middleware",
           "the retry policy", "the PDF template", "the tax table loader", "the webhook handler",
           "the CSV writer", "the session cache", "the feature flag lookup", "the audit trail",
           "the invoice numbering", "the email digest", "the date parser", "the export scheduler"]
_PEOPLE = ["Ana", "Bo", "Chen", "Dara", "Eli", "Femi", "Gus", "Hana"]
_EPHEMERAL = ["Restarted the dev server", "Re-ran the test suite", "Pulled main again", "Cleared the browser cache",
              "Rebuilt the docker image", "Reopened the editor", "Waited for CI", "Refreshed the dashboard"]
_TRANSIENT = ["Currently debugging {t} in {f}; stack trace saved to /tmp/trace-{n}.log",
              "Still investigating why {t} returns None for account {n}",
              "TODO: revisit {t} after the {p} review",
              "Added print statements to {f} to watch {t}"]
_CODE = ["```python", "def total(invoices):", "    return sum(i.amount for i in invoices)", "```"]


def _one_off(rng: random.Random) -> str:
    kind = rng.randrange(5)
    f, t, v = rng.choice(_FILES), rng.choice(_THINGS), rng.choice(_VERBS)
    n = rng.randrange(1000, 9999)
    if kind == 0:
        return f"{v.capitalize()} {t} in {f} for ticket BIL-{n}"
    if kind == 1:
        return f"Reviewed PR #{n} from {rng.choice(_PEOPLE)} touching {t}"
    if kind == 2:
        return f"Profiling showed {t} takes {rng.randrange(2, 900)} ms on the account with {n} invoices"
    if kind == 3:
        return f"Paired with {rng.choice(_PEOPLE)} on {t}; agreed follow-ups are in BIL-{n}"
    return f"Wrote {rng.randrange(2, 30)} new tests for {t} ({f}), coverage now {rng.randrange(60, 99)}%"


def _transient(rng: random.Random) -> str:
    return rng.choice(_TRANSIENT).format(t=rng.choice(_THINGS), f=rng.choice(_FILES), n=rng.randrange(100, 999),
                                         p=rng.choice(_PEOPLE))


def _plants(day: int, session: int) -> dict[str, list[str]]:
    """Planted lines by section for this (day, session)."""
    p: dict[str, list[str]] = {}

    def put(section: str, line: str) -> None:
        p.setdefault(section, []).append(line)

    if (day, session) == (0, 1):
        put("Decisions", "🔴 Deploys go through the staging gate from now on")
        put("Decisions", "🔴 `deploy.window`: Tuesdays 10:00-12:00 UTC")
    rate = {(0, 3): "The billing API rate limit is 50 requests per second per client",
            (2, 0): "Reminder: the billing API rate limit is 50 requests per second per client",
            (4, 5): "Billing API rate limit is 50 requests per second per client",
            (6, 2): "The billing API rate limit is 50 requests per second per client"}
    if (day, session) in rate:
        put("What Changed", rate[(day, session)])
    if (day, session) in ((1, 2), (5, 4)):
        put("Patterns Learned", "Never run migrations against the read replica, they silently fail")
    if (day, session) == (1, 0):
        put("Decisions", "🔴 Prefer uv over pip for every Python repo")
    if (day, session) in ((2, 3), (3, 1)):
        put("What Didn't", "Caching invoice totals in Redis did not work: invalidation was too slow")
    if (day, session) == (2, 4):
        put("Decisions", "🔴 Yesterday we decided to pin Postgres to 16.4 everywhere")
    if (day, session) == (0, 5):
        put("Decisions", "🔴 Last week we moved the nightly export to 02:00 UTC")
    if (day, session) in ((3, 3), (6, 0)):
        put("Patterns Learned", "Feature flags default to off in production")
    if (day, session) == (5, 1):
        put("Decisions", "🔴 `deploy.window`: now Wednesdays 14:00-16:00 UTC (replaces Tuesdays)")
    if (day, session) == (4, 2):
        put("Decisions", "We agreed to squash-merge every pull request")
    if (day, session) in ((1, 4), (3, 5), (5, 0)):
        put("Requests", "Always write commit messages in the imperative mood")
    if (day, session) == (6, 4):
        put("What Didn't", "🔴 The PDF renderer breaks when the locale is not en_US")
    return p


def generate_week(logs_dir: Path, *, days: int = 7, sessions: int = 7, seed: int = 7,
                  filler: int = 20, repeat_pool: int = 0) -> int:
    """Write ``days`` daily logs into ``logs_dir``; returns the bytes written.

    ``repeat_pool`` > 0 makes logs that repeat themselves, as an agent's session logs do: the
    one-off lines are drawn from that many distinct lines, so each recurs across sessions.
    """
    rng = random.Random(seed)
    pool = [_one_off(random.Random(seed + n)) for n in range(repeat_pool)]

    def filler_line() -> str:
        return rng.choice(pool) if pool else _one_off(rng)

    logs_dir.mkdir(parents=True, exist_ok=True)
    total = 0
    for day in range(days):
        when = START + timedelta(days=day)
        out = [f"# {when.isoformat()}", ""]
        for session in range(sessions):
            hour = 8 + session * 2
            label = rng.choice(["claude-code: billing (SessionEnd)", "shell: billing", "git: billing",
                                "claude-code: web (PreCompact)"])
            out.append(f"## Session {hour:02d}:{rng.randrange(60):02d} UTC — {label}")
            plants = _plants(day, session)
            sections = {
                "What Changed": [f"- 🟡 {filler_line()}" if rng.random() < 0.5 else f"- {filler_line()}"
                                 for _ in range(filler)],
                "What Worked": [f"- {filler_line()}" for _ in range(2)],
                "What Didn't": [f"- {_transient(rng)}"],
                "Patterns Learned": [],
                "Decisions": [],
                "Requests": [],
            }
            sections["What Changed"] += [f"- 🟢 {rng.choice(_EPHEMERAL)}" for _ in range(3)]
            for name, lines in plants.items():
                sections[name] += [f"- {line}" for line in lines]
            for name, lines in sections.items():
                if not lines:
                    continue
                out.append(f"### {name}")
                out.extend(lines)
                if name == "What Changed" and rng.random() < 0.4:
                    out.extend(_CODE)
                if name == "What Changed" and rng.random() < 0.1:
                    out.append(f"- Exported STRIPE_KEY=sk_live_{rng.randrange(10**15, 10**16)}abcdef for the replay")
            out.append("")
        text = "\n".join(out) + "\n"
        (logs_dir / f"{when.isoformat()}.md").write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return total


def filler_for_lines(lines: int, *, days: int = 7, sessions: int = 7) -> int:
    """The ``filler`` that makes ``generate_week`` write about ``lines`` lines in all."""
    per_session = 12  # heading, section headings, planted, ephemeral and code lines, blank
    return max(1, lines // (days * sessions) - per_session)


def surviving(pages_text: str) -> list[tuple[Fact, bool]]:
    low = pages_text.casefold()
    return [(fact, all(part.casefold() in low for part in fact.must_contain)) for fact in FACTS]
