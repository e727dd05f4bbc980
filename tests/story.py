"""The five-source story, as reusable data: sources and the scripted model's replies.

1. ``design-doc.md``   sets the billing API limit (100/s) and log retention (30 days)
2. ``runbook.md``      restates the 100/s limit on its own page; opens a question
3. ``inc-482.md``      lowers the limit "from 100 to 50" → the old claim is struck on every page
4. ``chat-thread.md``  splits the 30-day retention into two scoped values; answers the question
5. ``draft-faq.md``    states 200/s without claiming to replace anything → two current claims

Use :func:`story_script` as the ``ScriptedServer`` script: it answers each ingest prompt with
the reply for the source named in it (so sources may be ingested in any order or re-run).
Other tests (search, ask, revert) can reuse ``SOURCES`` and ``REPLIES`` as they are.
"""

from __future__ import annotations

import copy
from typing import Any

DESIGN_DOC = """\
# Billing API design

Date: 2026-03-16. Owner: Alice Chen.

The billing API allows 100 requests per second per client. Requests over the limit get HTTP 429.
Billing logs are retained for 30 days.

The API is served by the billing-gateway service behind the public load balancer.
"""

RUNBOOK = """\
# On-call runbook: billing

Updated 2026-03-20.

When clients report HTTP 429 from the billing API, remember that
the billing API allows 100 requests per second per client.
Check the billing-gateway dashboards first.

Open question: who owns the retention policy for billing logs?
"""

INCIDENT = """\
# INC-482 postmortem: billing API overload

Date: 2026-04-03.

A retry storm from one client overloaded the billing-gateway. As a remediation we lowered
the billing API rate limit from 100 to 50 requests per second per client, effective 2026-04-03.
"""

CHAT = """\
#billing-platform chat export, 2026-04-10

dana: Going forward, audit logs are kept for 365 days and debug logs for 7 days, replacing the single 30-day retention.
dana: I own the retention policy for billing logs now (platform team).
bob: ack, I will update the runbook.
"""

DRAFT_FAQ = """\
# Billing FAQ (DRAFT, not reviewed)

Q: How fast can I call the billing API?
A: The billing API allows 200 requests per second per client.
"""

SOURCES: list[tuple[str, str]] = [
    ("design-doc.md", DESIGN_DOC),
    ("runbook.md", RUNBOOK),
    ("inc-482.md", INCIDENT),
    ("chat-thread.md", CHAT),
    ("draft-faq.md", DRAFT_FAQ),
]

REPLIES: dict[str, dict[str, Any]] = {
    "design-doc.md": {
        "title": "Billing API design",
        "summary": "Design of the billing API: a per-client rate limit of 100 requests per second and "
                   "30-day retention of billing logs.",
        "key_points": ["100 requests per second per client", "billing logs kept 30 days"],
        "operations": [
            {"op": "create_page", "page": "billing-api", "type": "entity", "title": "Billing API",
             "summary": "The public API for billing, served by billing-gateway.",
             "body": "# Billing API\n\nThe public billing API, served by [[billing-gateway]]. "
                     "Owned by [[alice-chen]].\n\n## Limits\n\nRequests over the [[rate-limiting|rate limit]] "
                     "get HTTP 429.\n",
             "aliases": ["billing API"]},
            {"op": "create_page", "page": "rate-limiting", "type": "concept", "title": "Rate limiting",
             "summary": "How our APIs limit request rates per client.",
             "body": "# Rate limiting\n\nPer-client request limits on our APIs, e.g. the [[billing-api]].\n"},
            {"op": "create_page", "page": "alice-chen", "type": "entity", "title": "Alice Chen",
             "summary": "Owner of the billing API design.", "body": "# Alice Chen\n\nOwns the [[billing-api]].\n"},
            {"op": "add_claim", "page": "billing-api", "key": "billing-api.rate-limit",
             "value": "100 requests per second per client", "as_of": "2026-03-16",
             "quote": "The billing API allows 100 requests per second per client.", "replaces": False},
            {"op": "add_claim", "page": "rate-limiting", "key": "billing-api.rate-limit",
             "value": "100 requests per second per client", "as_of": "2026-03-16",
             "quote": "The billing API allows 100 requests per second per client.", "replaces": False},
            {"op": "add_claim", "page": "billing-api", "key": "billing-api.log-retention",
             "value": "30 days", "as_of": "2026-03-16",
             "quote": "Billing logs are retained for 30 days.", "replaces": False},
            {"op": "add_to_section", "page": "overview", "heading": "Systems",
             "text": "- [[billing-api]]: the public billing API."},
        ],
    },
    "runbook.md": {
        "title": "On-call runbook: billing",
        "summary": "What on-call does when clients of the billing API hit HTTP 429.",
        "key_points": ["check billing-gateway dashboards first"],
        "operations": [
            {"op": "create_page", "page": "on-call-runbook", "type": "topic", "title": "On-call runbook",
             "summary": "Steps for on-call engineers.",
             "body": "# On-call runbook\n\nFor HTTP 429 from the [[billing-api]], check the billing-gateway "
                     "dashboards first.\n\n## Open questions\n\n"
                     "- [ ] Who owns the retention policy for billing logs?\n"},
            {"op": "add_claim", "page": "on-call-runbook", "key": "billing-api.rate-limit",
             "value": "100 requests per second per client", "as_of": "2026-03-20",
             "quote": "the billing API allows 100 requests per second per client.", "replaces": False},
            {"op": "add_links", "page": "billing-api", "links": ["on-call-runbook"]},
        ],
    },
    "inc-482.md": {
        "title": "INC-482 postmortem: billing API overload",
        "summary": "A retry storm overloaded billing-gateway; the per-client rate limit was lowered from 100 "
                   "to 50 requests per second.",
        "key_points": ["rate limit lowered from 100 to 50 per second per client"],
        "operations": [
            {"op": "add_claim", "page": "billing-api", "key": "billing-api.rate-limit",
             "value": "50 requests per second per client", "as_of": "2026-04-03",
             "quote": "we lowered the billing API rate limit from 100 to 50 requests per second per client, "
                      "effective 2026-04-03.",
             "replaces": True},
            {"op": "add_to_section", "page": "billing-api", "heading": "Incidents",
             "text": "- 2026-04-03 [[src-inc-482]]: retry storm; limit lowered to 50/s."},
        ],
    },
    "chat-thread.md": {
        "title": "Billing platform chat: log retention",
        "summary": "Dana splits billing log retention into audit (365 days) and debug (7 days) and owns the "
                   "retention policy.",
        "key_points": ["audit logs 365 days", "debug logs 7 days", "Dana owns retention"],
        "operations": [
            {"op": "add_claim", "page": "billing-api", "key": "billing-api.log-retention.audit",
             "value": "365 days", "as_of": "2026-04-10",
             "quote": "audit logs are kept for 365 days and debug logs for 7 days, replacing the single "
                      "30-day retention.",
             "replaces": True, "replaces_key": "billing-api.log-retention"},
            {"op": "add_claim", "page": "billing-api", "key": "billing-api.log-retention.debug",
             "value": "7 days", "as_of": "2026-04-10",
             "quote": "audit logs are kept for 365 days and debug logs for 7 days, replacing the single "
                      "30-day retention.",
             "replaces": True, "replaces_key": "billing-api.log-retention"},
            {"op": "close_question", "page": "on-call-runbook",
             "question": "Who owns the retention policy for billing logs?",
             "answer": "Dana (platform team)"},
        ],
    },
    "draft-faq.md": {
        "title": "Billing FAQ (draft)",
        "summary": "A draft FAQ that says the billing API allows 200 requests per second per client.",
        "key_points": ["draft, not reviewed"],
        "operations": [
            {"op": "add_claim", "page": "billing-api", "key": "billing-api.rate-limit",
             "value": "200 requests per second per client", "as_of": "2026-04-15",
             "quote": "The billing API allows 200 requests per second per client.", "replaces": False},
        ],
    },
}


def source_named_in(request: dict[str, Any]) -> str | None:
    """The raw/ file name an ingest prompt is about (from its user message)."""
    for message in request.get("messages") or []:
        if message.get("role") != "user":
            continue
        content = str(message.get("content") or "")
        for name, _ in SOURCES:
            if f"`raw/{name}`" in content:
                return name
    return None


def story_script(request: dict[str, Any]) -> dict[str, Any]:
    name = source_named_in(request)
    if name is None:
        return {"title": "unknown", "summary": "", "operations": []}
    return copy.deepcopy(REPLIES[name])
