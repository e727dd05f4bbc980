"""The one table of secret shapes, used by every room that must keep a credential in place.

A secret never leaves the machine and never reaches a page, a commit or a log: the daily-log
appender, the log filter, the text of a source before it is planned, and every prompt before
it is sent all run :func:`redact` over this table. Each entry names a *kind* (shown to people:
"the source contained an aws-key") and never the value.

The generic shapes (``password = …``) only fire on an assignment whose name is a word of its
own (not part of a path such as ``raw/passwd:``) so ordinary prose and file names stay intact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REDACTED = "[REDACTED]"
REDACTED_RE = re.compile(r"\[REDACTED(?::[a-z\-]+)?\]")

# A credential name stands alone: not the tail of a path or of a longer word (a dotted
# setting such as spring.datasource.password= still counts).
_NAME_START = r"(?<![/\\\w\-])"
_NOT_DONE = r"(?!\[REDACTED)"


@dataclass(frozen=True)
class SecretShape:
    kind: str
    pattern: re.Pattern[str]
    # Groups kept around the value (a name and its "=" stay so the line still reads).
    keep_groups: int = 0
    # What the marker says in place of the value: "[REDACTED:<marker>]", or "[REDACTED]" when
    # empty (an assignment's name already says what was there).
    marker: str | None = None
    # A cheap search that must succeed before the shape is tried at all; with ``line_local``
    # the shape runs only on the lines where it does (the assignment shapes backtrack over
    # every word, so they are kept off the lines that cannot hold one).
    hint: tuple[str, ...] = ()  # literal substrings, matched in lower case
    line_local: bool = False
    # The value's group, checked by :func:`_is_placeholder` (an assignment in prose or a
    # README that only names the setting, ``password=<your-password>``, holds no secret).
    value_group: int = 0

    def hinted(self, lowered: str) -> bool:
        return not self.hint or any(word in lowered for word in self.hint)


def _shape(kind: str, regex: str, flags: int = 0, keep_groups: int = 0, marker: str | None = None,
           hint: str = "", line_local: bool = False, value_group: int = 0) -> SecretShape:
    return SecretShape(kind, re.compile(regex, flags), keep_groups, marker,
                       tuple(hint.lower().split("|")) if hint else (), line_local, value_group)


# Most specific first: a private key block before anything that might match inside it.
SECRET_SHAPES: tuple[SecretShape, ...] = (
    _shape("private-key",
           r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
           re.DOTALL),
    _shape("anthropic-key", r"\bsk-ant-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_\-]{16,}", marker="api-key", hint="sk-ant-"),
    _shape("openai-key", r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_\-]{16,}", marker="api-key", hint="sk-"),
    _shape("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}", marker="api-key", hint="_live_|_test_"),
    _shape("aws-key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b", hint="AKIA|ASIA|AGPA|AIDA|AROA|ANPA"),
    _shape("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{22,})",
           hint="ghp_|gho_|ghu_|ghs_|ghr_|github_pat_"),
    _shape("gitlab-token", r"\bgl(?:pat|dt|rt|ptt|cbt|oas|soat)-[A-Za-z0-9_\-]{20,}",
           hint="glpat-|gldt-|glrt-|glptt-|glcbt-|gloas-|glsoat-"),
    _shape("slack-token", r"\bxox[abeoprs]-[A-Za-z0-9-]{10,}", hint="xox"),
    _shape("slack-webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/]{20,}"),
    _shape("google-key", r"\bAIza[0-9A-Za-z_\-]{35}\b", marker="api-key", hint="AIza"),
    _shape("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}\b", hint="hf_"),
    _shape("groq-key", r"\bgsk_[A-Za-z0-9]{30,}\b", hint="gsk_"),
    _shape("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", hint="eyJ"),
    # scheme://user:password@host — the user and host stay.
    _shape("connection-string", r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s:/@]+:)" + _NOT_DONE + r"([^\s@/]+)(@)",
           keep_groups=2, marker="", hint="://", line_local=True, value_group=2),
    _shape("bearer-token", r"(?i)\b(bearer[ \t]+)" + _NOT_DONE + r"[A-Za-z0-9._~+/\-]{8,}=*", keep_groups=1,
           marker="token", hint="bearer", line_local=True),
    # "token abc123…": only a value with a digit in it (prose says "token bucket").
    _shape("token", r"(?i)\b(token[ \t]+)" + _NOT_DONE + r"(?=[A-Za-z0-9._~+/\-]*\d)[A-Za-z0-9._~+\-]{12,}=*",
           keep_groups=1, marker="token", hint="token", line_local=True),
    # password = value / DB_PASSWORD: "value" / api_key=value / Authorization: value.
    _shape("password",
           r"(?i)" + _NAME_START + r"((?:[a-z0-9_\-]*?)(?:password|passwd|pwd|passphrase|secret|api[_\-]?key|"
           r"access[_\-]?key|auth[_\-]?token|access[_\-]?token|client[_\-]?secret|private[_\-]?key|"
           r"authorization)[a-z0-9_\-]*[\"']?[ \t]*[=:][ \t]*)" + _NOT_DONE +
           r"(\"[^\"\n]*\"|'[^'\n]*'|(?:Bearer[ \t]+)?[^\s,;\"'}]+)",
           keep_groups=1, marker="", hint="pass|pwd|secret|key|token|authorization", line_local=True,
           value_group=2),
    # Any other "…token = value" or "…_KEY = value" whose value looks like a credential.
    _shape("token",
           r"(?i)" + _NAME_START + r"([a-z0-9_\-]*token|[a-z0-9_\-]*[_\-]key)([\"']?[ \t]*[=:][ \t]*)" + _NOT_DONE +
           r"([\"']?(?=[A-Za-z0-9_\-.~+/]*\d)[A-Za-z0-9_\-.~+/]{8,}=*[\"']?)",
           keep_groups=2, marker="", hint="token|key", line_local=True, value_group=3),
)


def _replacement(shape: SecretShape, label: bool) -> str:
    name = shape.kind if shape.marker is None else shape.marker
    marker = f"[REDACTED:{name}]" if label and name else REDACTED
    if shape.keep_groups == 2 and shape.kind == "connection-string":
        return r"\1" + marker + r"\3"
    return "".join(f"\\{n}" for n in range(1, shape.keep_groups + 1)) + marker


# Values that stand for a secret without being one: documentation and templates.
_PLACEHOLDER_RE = re.compile(
    r"""(?ix)^(?:
        [`*x.\-_•#?]*                                # nothing, a backtick, ***, xxx, ..., ---
      | <[^<>]*>                                     # <your-password>
      | \$\{[^}]*\}? | \$[A-Z_][A-Z0-9_]* | \{\{.*\}\}? | %\([a-z_]+\)s | %s   # ${VAR}, $VAR, {{ x }}, %(pw)s
      | (?:your|my|the|some|example|sample|dummy|placeholder|redacted|changeme)[a-z_\-]*
      | (?-i:[A-Z_]*(?:PASSWORD|SECRET|TOKEN|KEY)[A-Z_]*)  # an upper-case name: YOUR_PASSWORD
    )$""")
# A lone word after "password:" in prose ("the password: is asked at login").
_PROSE_WORDS = frozenset({
    "is", "are", "was", "be", "in", "the", "a", "an", "and", "or", "to", "of", "for", "with", "on", "at",
    "by", "as", "it", "if", "not", "none", "null", "here", "field", "value", "will", "must", "should", "can",
    "may", "required", "optional", "empty", "set", "unset"})


# A setting whose name holds "secret" or "key" (redact_secrets = true) with a plain value.
_NOT_SECRET_VALUES = frozenset({"true", "false", "yes", "no", "on", "off", "null", "none", "nil"})


def _is_placeholder(value: str, spaced: bool) -> bool:
    inner = value.rstrip(")]`:!?").strip("`")  # `password=…`) in prose
    if inner.lower() in _NOT_SECRET_VALUES:
        return True
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "\"'":
        inner = inner[1:-1].strip("`")
    if _PLACEHOLDER_RE.match(inner) or inner.endswith(("...", "…")):  # "sk-...": an elided example
        return True
    return spaced and inner.lower() in _PROSE_WORDS


def _substitute(shape: SecretShape, replacement: str, text: str) -> tuple[str, int]:
    if not shape.value_group:
        return shape.pattern.subn(replacement, text)
    count = 0

    def one(match: re.Match[str]) -> str:
        nonlocal count
        value = match.group(shape.value_group)
        before = match.string[match.start(shape.value_group) - 1:match.start(shape.value_group)]
        if _is_placeholder(value, spaced=before in (" ", "\t")):
            return match.group(0)
        count += 1
        return match.expand(replacement)

    return shape.pattern.sub(one, text), count


def scan(text: str, *, label: bool = True, literals: list[str] | None = None) -> tuple[str, list[str]]:
    """(``text`` with every secret replaced, the sorted kinds found). Values are never returned.

    ``literals`` are exact values to hide as well (the environment's API keys, for logs).
    """
    kinds: set[str] = set()
    for value in literals or ():
        if value and value in text:
            text = text.replace(value, "[REDACTED:env-value]" if label else REDACTED)
            kinds.add("env-value")
    lowered = text.lower()
    for shape in SECRET_SHAPES:
        if not shape.hinted(lowered):
            continue
        if shape.line_local:
            text, count = _sub_lines(shape, _replacement(shape, label), text)
        else:
            text, count = _substitute(shape, _replacement(shape, label), text)
        if count:
            kinds.add(shape.kind)
    return text, sorted(kinds)


def _sub_lines(shape: SecretShape, replacement: str, text: str) -> tuple[str, int]:
    """The shape applied only to the lines its hint finds (its matches never span lines)."""
    lines = text.splitlines(keepends=True)
    total = 0
    for index, line in enumerate(lines):
        if shape.hinted(line.lower()):
            lines[index], count = _substitute(shape, replacement, line)
            total += count
    return ("".join(lines), total) if total else (text, 0)


def redact(text: str, *, label: bool = True, literals: list[str] | None = None) -> str:
    """``text`` with API keys, tokens, passwords, private keys and connection passwords replaced."""
    return scan(text, label=label, literals=literals)[0]


def secret_kinds(text: str) -> list[str]:
    """The kinds of secret ``text`` holds (empty when none)."""
    return scan(text)[1]
