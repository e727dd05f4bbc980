"""Secrets are found by a well-kept scanner, and only their values are replaced.

A secret never leaves the machine and never reaches a page, a commit or a log: the daily-log
appender, the log filter, the text, title and metadata of a source before it is planned, file
names shown on pages and in commits, REVIEW.md lines and every prompt before it is sent all run
:func:`scan`. Each finding names a *kind* (shown to people: "the source contained an aws-key")
and never the value.

Three layers, in order of precedence when two findings overlap:

1. :data:`EXTRA_RULES`, a small table in the style of gitleaks' maintained rules for what
   detect-secrets does not know: private-key blocks (the whole block, not just its header),
   Anthropic/OpenAI project keys, Google API keys, HashiCorp Vault tokens, Azure SAS
   signatures, database connection strings (``redis://:pw@``), Docker config ``auth``
   values, standalone npm tokens, bearer and ``Authorization:`` headers, ``token=``
   assignments whose value looks random.
2. detect-secrets' (Yelp) plugins: AWS, Azure storage, basic-auth URLs, GitHub, GitLab, JWT,
   npm, OpenAI, PyPI, SendGrid, Slack, Stripe, Telegram, Twilio, Discord, Mailchimp, Square,
   IBM, Artifactory, Cloudant, SoftLayer. The plugin's own ``analyze_string`` decides; we only
   locate the span it returned, so a JWT is still checked to decode, for example. Its public-IP
   plugin is left out: an address is not a credential.
3. detect-secrets' keyword detector (its regexes for config files and for code, which need
   quotes) and its high-entropy string detectors, each through its heuristic filters
   (indirect references, templates, ``$``-prefixed values, UUIDs, sequential strings, ids).
   High-entropy strings count only on a line that names a credential (as gitleaks'
   generic-api-key rule does): a quoted sha256 in a changelog is not a secret.

The project's placeholder and expression rule applies to every value whose shape does not prove
it is a credential (assignments, connection strings, headers): a value that is an expression
(``os.environ.get(...)``, ``os.getenv``, ``settings.X``, ``config["x"]``, ``${VAR}``, ``$VAR``,
``%(x)s``, ``{{ x }}``, a call, an attribute access, a type such as ``str``) or a documented
placeholder (``sk-...``, ``<password>``, ``***``, ``changeme``, ``your-api-key``, an upper-case
name, an elided ``abc…``) is not a secret. Only the value's characters are replaced: the name,
its quotes and the code around it stay, so ``SECRET_KEY = "…"`` still reads as code.

detect-secrets is imported on the first scan that needs it (its import pulls in ``requests``,
about 0.2 s), so CLI commands that log nothing do not pay for it.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import logging
import math
import re
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

REDACTED = "[REDACTED]"
REDACTED_RE = re.compile(r"\[REDACTED(?::[a-z0-9\-]+)?\]")

# Kinds whose surrounding text already says what was there ("password=[REDACTED]").
_PLAIN_MARKER = frozenset({"password", "secret-keyword", "token", "connection-string", "basic-auth",
                           "bearer-token", "high-entropy-string"})
# Kinds shown with a shared label in place of the value.
_MARKER_NAME = {"openai-key": "api-key", "anthropic-key": "api-key", "stripe-key": "api-key",
                "google-key": "api-key", "bearer-token": "token"}


@dataclass(frozen=True)
class Finding:
    start: int
    end: int
    kind: str
    rank: int  # lower wins when two findings overlap (its kind is the one reported)


@dataclass(frozen=True)
class Rule:
    """One maintained-style regex: ``v`` is the value's group (the whole match when absent)."""

    kind: str
    pattern: re.Pattern[str]
    hint: tuple[str, ...]  # literal substrings (lower case): the rule runs only on lines holding one
    check: Callable[[str], bool] | None = None  # the value must pass (a placeholder check, a decode)
    whole_text: bool = False  # the match spans lines (a private-key block)
    also: str = ""  # a second literal the line must hold (the "@" of user:password@host)
    unless: re.Pattern[str] | None = None  # a match starting inside this pattern's match is not a secret


def _entropy(value: str) -> float:
    if not value:
        return 0.0
    counts: dict[str, int] = {}
    for char in value:
        counts[char] = counts.get(char, 0) + 1
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _random_looking(value: str, minimum: float = 3.0) -> bool:
    """A credential's body: letters and digits mixed, not a word or a number."""
    return (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
            and _entropy(value) >= minimum and not is_placeholder(value))


def _docker_auth(value: str) -> bool:
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded and len(decoded) >= 3 and not is_placeholder(decoded.decode("latin-1").split(":", 1)[1])


def _not_placeholder(value: str) -> bool:
    return not is_placeholder(value) and not is_expression(value)


def _key_body(value: str) -> bool:
    """A provider key's body: random, not a run of lower-case words (``sk-learn-user-guide``)."""
    return not re.fullmatch(r"[a-z_\-]+", value) and _entropy(value) >= 3.0 and not is_placeholder(value)


def _header_value(value: str) -> bool:
    return not is_placeholder(value)


def _bearer_value(value: str) -> bool:
    """After "bearer" in prose comes a word ("bearer authentication"), in a header a token."""
    return not re.fullmatch(r"[a-z]+", value) and not is_placeholder(value)


def _rule(kind: str, regex: str, hint: str, check: Callable[[str], bool] | None = None,
          flags: int = 0, also: str = "", unless: str = "") -> Rule:
    return Rule(kind, re.compile(regex, flags), tuple(hint.lower().split("|")), check, bool(flags & re.DOTALL),
                also, re.compile(unless) if unless else None)


_NAME_START = r"(?<![/\\\w\-.])"
_DB_SCHEMES = r"redis|rediss|mysql|mysqlx|mariadb|postgres|postgresql|mongodb|mongodb\+srv|amqp|amqps|mssql|" \
              r"sqlserver|oracle|couchdb|cockroachdb|clickhouse|neo4j|memcached|jdbc:[a-z0-9]+|[a-z]+\+[a-z0-9]+"

# Rules in the style of gitleaks' config (https://github.com/gitleaks/gitleaks, config/gitleaks.toml),
# for what detect-secrets 1.5 does not cover; written here, not copied.
EXTRA_RULES: tuple[Rule, ...] = (
    _rule("private-key",
          r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
          r"|PuTTY-User-Key-File-\d: .*?(?:Private-MAC: [0-9a-f]+|\Z)", "PRIVATE KEY|PuTTY-User-Key", flags=re.DOTALL),
    _rule("anthropic-key", r"\bsk-ant-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_\-]{16,}", "sk-ant-"),
    _rule("openai-key", r"\bsk-(?:[A-Za-z0-9]+-)*(?P<v>[A-Za-z0-9_\-]{16,})", "sk-", _key_body),
    _rule("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}", "_live_|_test_"),
    _rule("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{22,})",
          "ghp_|gho_|ghu_|ghs_|ghr_|github_pat_"),
    _rule("gitlab-token", r"\bgl(?:pat|dt|rt|ptt|cbt|oas|soat|imt|agent|ft)-[A-Za-z0-9_\-]{20,}",
          "glpat-|gldt-|glrt-|glptt-|glcbt-|gloas-|glsoat-|glimt-|glagent-|glft-"),
    _rule("slack-token", r"\bxox[abeoprs]-[A-Za-z0-9-]{10,}|\bxapp-\d-[A-Za-z0-9-]{10,}", "xox|xapp-"),
    _rule("atlassian-token", r"\bATATT3[A-Za-z0-9_\-=]{100,}", "ATATT3"),
    _rule("gcp-oauth-secret", r"\bGOCSPX-[A-Za-z0-9_\-]{28}", "GOCSPX-"),
    _rule("stripe-webhook-secret", r"\bwhsec_[A-Za-z0-9+/]{24,}", "whsec_"),
    # The whole token (detect-secrets' own JWT pattern stops before the signature).
    _rule("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-+/=]{8,}", "eyj"),
    _rule("google-key", r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])", "AIza"),
    _rule("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}\b", "hf_"),
    _rule("groq-key", r"\bgsk_[A-Za-z0-9]{30,}\b", "gsk_"),
    _rule("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", "npm_"),
    _rule("pypi-token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}", "pypi-"),
    _rule("sendgrid-key", r"\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,50}", "SG."),
    _rule("telegram-token", r"(?<![\w:])\d{8,10}:AA[A-Za-z0-9_\-]{33}(?![\w-])", ":AA"),
    _rule("vault-token", r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}", "hvs.|hvb.|hvr."),
    _rule("vault-token", r"(?<![\w.\-/])s\.(?P<v>[A-Za-z0-9]{24})(?![\w.\-])", "vault|token",
          lambda v: _random_looking(v, 3.5)),
    _rule("azure-sas-token", r"(?i)[?&;]sig=(?P<v>[A-Za-z0-9%+/=]{30,})", "sig="),
    _rule("azure-storage-key", r"(?i)\b(?:AccountKey|SharedAccessKey)=(?P<v>[A-Za-z0-9+/=]{40,})",
          "accountkey=|sharedaccesskey="),
    _rule("docker-auth", r'"(?:auth|identitytoken|registrytoken)"\s*:\s*"(?P<v>[A-Za-z0-9+/=_\-.]{12,})"',
          '"auth"|"identitytoken"|"registrytoken"', _docker_auth),
    _rule("shopify-token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", "shpat_|shpca_|shppa_|shpss_"),
    _rule("digitalocean-token", r"\bdo[por]_v1_[a-f0-9]{64}\b", "_v1_"),
    _rule("databricks-token", r"\bdapi[a-f0-9]{32}(?:-\d)?\b", "dapi"),
    _rule("postman-key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b", "PMAK-"),
    _rule("sentry-token", r"\bsntr[ysu]_[A-Za-z0-9_=+/\-]{40,}", "sntrys_|sntryu_"),
    _rule("grafana-token", r"\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|\bglc_[A-Za-z0-9+/]{32,}={0,2}", "glsa_|glc_"),
    _rule("age-secret-key", r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b", "AGE-SECRET-KEY-"),
    _rule("linear-key", r"\blin_api_[A-Za-z0-9]{40}\b", "lin_api_"),
    # scheme://user:password@host — the user and host stay. A database URL (redis://:pw@ has no user).
    _rule("connection-string", r"(?i)\b(?:" + _DB_SCHEMES + r")://[^\s:/@]*:(?P<v>[^\s@/]+)@", "://",
          _not_placeholder, also="@"),
    _rule("basic-auth", r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:(?P<v>[^\s@/]+)@", "://", _not_placeholder,
          also="@"),
    # Credentials in a command or a file's own syntax: curl -u user:pw, .netrc, <password>…</password>.
    _rule("password", r"\bcurl\b.*?[\s'\"](?:-u|--user)[ =]['\"]?[^\s:/'\"]+:(?P<v>[^\s/'\"][^\s'\"]{3,})", "curl",
          _not_placeholder),
    _rule("password", r"(?i)\blogin[ \t]+\S+[ \t]+password[ \t]+(?P<v>\S{4,})", "password", _not_placeholder),
    _rule("password", r"(?i)<(?P<tag>[\w.:\-]*(?:password|passwd|secret|api[_\-]?key|token|access[_\-]?key))>"
          r"(?P<v>[^<\s]{4,})</(?P=tag)>", "password|passwd|secret|key|token", _not_placeholder),
    _rule("bearer-token", r"(?i)\bbearer[ \t]+(?P<v>[A-Za-z0-9._~+/\-]{8,}=*)", "bearer", _bearer_value),
    _rule("token", r"(?i)\bauthorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:(?:basic|bearer|token|digest)[ \t]+)?"
          r"(?P<v>[A-Za-z0-9._~+/\-]{8,}=*)", "authorization", _header_value),
    # "token abc123…": only a value with a digit in it (prose says "token bucket").
    _rule("token", r"(?i)\btoken[ \t]+(?P<v>(?=[A-Za-z0-9._~+\-]*\d)[A-Za-z0-9._~+\-]{12,}=*)", "token",
          _random_looking),
    # Any other "…token = value", "…_KEY = value", "credentials: value" whose value looks random.
    _rule("token", _NAME_START + r"(?i:(?![\w\-]*public)[\w\-]*(?:token|[_\-]key|access[_\-]?key|credentials?|auth))"
          r"[\"']?[ \t]*(?::=|=>|[=:])[ \t]*[\"'`]?(?P<v>[A-Za-z0-9_\-.~+/]{8,}=*)", "token|key|credential|auth",
          # A README badge's ?token= is the public read token the badge service hands out.
          _random_looking, unless=r"(?i)https?://[^\s)\]]*badge[^\s)\]]*[?&][\w-]*token=[\w-]+"),
)

# --- detect-secrets, loaded once on first use ------------------------------------------------

# detect-secrets' secret_type -> the kind people see.
_DS_KINDS = {
    "AWS Access Key": "aws-key", "Artifactory Credentials": "artifactory-token",
    "Azure Storage Account access key": "azure-storage-key", "Basic Auth Credentials": "basic-auth",
    "Cloudant Credentials": "cloudant-key", "Discord Bot Token": "discord-token", "GitHub Token": "github-token",
    "GitLab Token": "gitlab-token", "IBM Cloud IAM Key": "ibm-cloud-iam-key",
    "IBM COS HMAC Credentials": "ibm-cos-hmac-key", "JSON Web Token": "jwt", "Mailchimp Access Key": "mailchimp-key",
    "NPM tokens": "npm-token", "OpenAI Token": "openai-key", "PyPI Token": "pypi-token",
    "SendGrid API Key": "sendgrid-key", "Slack Token": "slack-token", "SoftLayer Credentials": "softlayer-key",
    "Square OAuth Secret": "square-oauth-secret", "Stripe Access Key": "stripe-key",
    "Telegram Bot Token": "telegram-token", "Twilio API Key": "twilio-key",
}
# Left out: an IP address is not a credential; private keys are found whole by EXTRA_RULES (the
# plugin matches only the BEGIN line); keyword and entropy detectors run in layer 3.
_DS_SKIP = frozenset({"Public IP (ipv4)", "Private Key", "Secret Keyword", "Base64 High Entropy String",
                      "Hex High Entropy String"})
# Words a line names a credential by, for high-entropy strings (gitleaks generic-api-key's keywords).
# Literal substrings one of which every match of the plugin holds: its regexes run
# only on the lines that hold one (a whole-text search per regex costs 10-60 ms per 100 KB).
# A plugin missing here (a newer detect-secrets) is searched over the whole text instead.
_DS_HINTS: dict[str, tuple[str, ...]] = {
    "aws-key": ("akia", "asia", "abia", "acca", "a3t", "aws"),
    "artifactory-token": ("AKC", "AP"),
    "azure-storage-key": ("accountkey=",),
    "basic-auth": ("://",),
    "cloudant-key": ("cloudant", "clou", "cl_", "cl-", "clapi", "clkey", "clpw", "clpass", "cltoken"),
    "discord-token": (".",),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "gitlab-token": ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "gr1348941", "glcbt-", "glimt-", "glptt-",
                     "glagent-", "gloas-"),
    "ibm-cloud-iam-key": ("key", "pwd", "pass", "token"),
    "ibm-cos-hmac-key": ("secret",),
    "jwt": ("eyj",),
    "mailchimp-key": ("-us",),
    "npm-token": ("_authtoken",),
    "openai-key": ("t3blbkfj",),
    "pypi-token": ("pypi-age",),
    "sendgrid-key": ("sg.",),
    "slack-token": ("xox", "hooks.slack.com"),
    "softlayer-key": ("softlayer", "sl_", "sl-", "slapi", "slkey", "slpw", "slpass", "sltoken"),
    "square-oauth-secret": ("sq0csp-",),
    "stripe-key": ("k_live_",),
    "telegram-token": (":aa",),  # a bot token's secret half starts with "AA"
    "twilio-key": ("AC", "SK"),
}
_NAMED_RE = re.compile(r"[A-Za-z_][\w.\-]*[ \t]*=[ \t]*[\"']?")
_WORD_RUN_RE = re.compile(r"^[a-z]+(?:[-_][a-z]+)+$")
_KEYWORD_HINTS = ("key", "pass", "pwd", "secret", "contrase")
_CREDENTIAL_WORD_RE = re.compile(r"(?i)key|secret|token|passw|pwd|auth|credential|api|private|signature")
# A random-looking string on a line about a public key or a digest is not a credential.
_NOT_CREDENTIAL_RE = re.compile(r"(?i)public|sha\d|checksum|digest|integrity|\bhash")
_PASSWORD_WORD_RE = re.compile(r"(?i)pass|pwd|contrase")


@dataclass(frozen=True)
class _Plugin:
    kind: str
    plugin: Any
    patterns: tuple[re.Pattern[str], ...]
    hints: tuple[str, ...]  # () when unknown: every line is searched


@dataclass(frozen=True)
class _Scanner:
    plugins: tuple[_Plugin, ...]
    keyword_regexes: tuple[tuple[re.Pattern[str], int, int], ...]  # (regex, value group, quote group)
    entropy: tuple[Any, ...]  # Base64HighEntropyString(4.5), HexHighEntropyString(3.0)
    heuristic: Any  # detect_secrets.filters.heuristic


_LOCK = threading.Lock()
_SCANNER: list[_Scanner] = []  # the one scanner, once loaded


def _quote_group(value_group: int) -> int:
    """The group holding the value's opening quote: in each of detect-secrets' keyword regexes it
    is the group just before the value's (``(quote)(secret)``), 0 when the value is group 1."""
    return value_group - 1 if value_group > 1 else 0


def _load() -> _Scanner:
    if _SCANNER:
        return _SCANNER[0]
    with _LOCK:
        if _SCANNER:
            return _SCANNER[0]
        shown_warnings = warnings.showwarning
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.filters import heuristic
        from detect_secrets.plugins import keyword
        from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString

        if warnings.showwarning is not shown_warnings:
            # Its log module calls logging.captureWarnings(True) on import: the process's
            # warnings stay where they went before.
            logging.captureWarnings(False)

        plugins = []
        mapping: dict[str, Any] = get_mapping_from_secret_type_to_class()
        for secret_type, cls in sorted(mapping.items()):
            if secret_type in _DS_SKIP:
                continue
            plugin = cls()
            patterns = tuple(getattr(plugin, "denylist", ()))
            if not patterns:
                continue
            kind = _DS_KINDS.get(secret_type, re.sub(r"\W+", "-", secret_type.lower()))
            plugins.append(_Plugin(kind, plugin, patterns, _DS_HINTS.get(kind, ())))
        # Config-file shapes (password: value, password = value) and code shapes that need quotes;
        # not the C++ secret("x") call shape, which in prose is a function called with a name.
        maps = [keyword.CONFIG_DENYLIST_REGEX_TO_GROUP, keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
                keyword.GOLANG_DENYLIST_REGEX_TO_GROUP, keyword.COMMON_C_DENYLIST_REGEX_TO_GROUP]
        seen: dict[re.Pattern[str], int] = {}
        for table in maps:
            for regex, group in table.items():
                seen.setdefault(regex, group)
        keyword_regexes = tuple((regex, group, _quote_group(group)) for regex, group in seen.items())
        _SCANNER.append(_Scanner(tuple(plugins), keyword_regexes,
                                 (Base64HighEntropyString(limit=4.5), HexHighEntropyString(limit=3.0)), heuristic))
        return _SCANNER[0]


# --- placeholders and expressions ----------------------------------------------------------------

# Values that stand for a secret without being one: documentation and templates.
_PLACEHOLDER_RE = re.compile(
    r"""(?ix)^(?:
        [`*x.\-_•#?]*                                # nothing, a backtick, ***, xxx, ..., ---
      | <[^<>]*>  | \[[^\[\]]*\]                     # <your-password>, [password]
      | \$\{[^}]*\}? | \$[A-Za-z_][A-Za-z0-9_]* | \$\(.*\)? | \{\{.*\}\}? | \{[^{}]*\} | %\([a-z_]+\)s | %s | %[A-Z_]+%
      | (?:your|my|the|some|example|sample|dummy|placeholder|redacted|changeme|change-me|insert|enter|replace|
           fake|foo|xxx)[a-z_\-]*
      | (?-i:[A-Z_]*(?:PASSWORD|SECRET|TOKEN|KEY|PASS|PWD)[A-Z_0-9]*)   # an upper-case name: YOUR_PASSWORD
      | (?-i:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{3,12})   # any upper-case name: DB_PASS, TEXT
    )$""")
# "My API Key", "not-a-real-secret": words that describe the value instead of being it.
_PHRASE_RE = re.compile(r"(?i)^(?:[a-z]+(?: [a-z]+)+|(?:[a-z]+-)*(?:not|fake|example|dummy|sample|placeholder|your|"
                        r"secret|password|test|real|my)(?:-[a-z]+)+)$")
# Values that are words of a sentence, a type or a literal of a language, not a credential.
_PLAIN_WORDS = frozenset({
    "is", "are", "was", "be", "in", "the", "a", "an", "and", "or", "to", "of", "for", "with", "on", "at",
    "by", "as", "it", "if", "not", "none", "null", "nil", "here", "field", "value", "will", "must", "should", "can",
    "may", "required", "optional", "empty", "set", "unset", "true", "false", "yes", "no", "off", "undefined",
    "str", "string", "int", "integer", "bool", "boolean", "bytes", "number", "any", "object", "text", "secretstr",
    "password", "passwd", "secret", "token", "key", "apikey", "api_key", "admin", "root", "user", "username",
    "test", "testing", "bar", "baz", "qux", "hunter", "pass", "default", "auto", "prompt", "ask", "env",
    "environment", "file", "stdin", "none.", "see", "use", "from", "this", "that", "which", "when", "then",
    "you", "we", "they", "their", "your", "its", "has", "have", "must.", "was.", "blah", "fake", "xyz", "abc",
    "anything", "something", "whatever",
})
# An expression in code or a template: a call, an attribute access, a subscription, a variable.
_EXPRESSION_RE = re.compile(
    r"""(?x)^(?:
        [A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*\s*\(.*       # f(...), os.environ.get(...), os.getenv(...)
      | [A-Za-z_]+\d?(?:\.[A-Za-z_]+\d?)+\)?             # settings.SECRET_KEY, self.password, process.env.X
      | [A-Za-z_][\w.]*\s*\[.*                          # config["x"], ENV['KEY'], Optional[str]
      | (?:new|await|typeof)\s.*                        # new Foo(), await get()
    )$""")


def is_expression(value: str) -> bool:
    """True for a value that is code computing the secret, not the secret itself."""
    return bool(_EXPRESSION_RE.match(value.strip()))


def is_placeholder(value: str, spaced: bool = True) -> bool:
    """True for a documented stand-in (``<password>``, ``***``, ``sk-...``, ``changeme``, ``${VAR}``)."""
    inner = value.strip().rstrip(")]`:!?;,").strip("`")
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "\"'":
        inner = inner[1:-1].strip("`")
    if not inner or "[REDACTED" in inner:
        return True
    if inner.endswith(("...", "…")) or "..." in inner or "…" in inner:  # "sk-...": an elided example
        return True
    if _PLACEHOLDER_RE.match(inner) or _PHRASE_RE.match(inner):
        return True
    return inner.lower().rstrip(".") in _PLAIN_WORDS and (spaced or len(inner) < 12)


# --- scanning -----------------------------------------------------------------------------------

def _line_spans(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for line in text.splitlines(keepends=True):
        spans.append((start, start + len(line.rstrip("\r\n"))))
        start += len(line)
    return spans


class _Text:
    """A text, its lower-case form and its lines, with the lines holding given words found fast."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lowered = text.lower()
        self.lines = _line_spans(text)
        self.starts = [start for start, _ in self.lines]

    def hinted(self, hints: tuple[str, ...]) -> list[int]:
        """Indices of the lines holding one of ``hints`` (all lines when there are none), in order.
        A hint with upper-case letters is matched as written, the others in any case."""
        if not hints:
            return list(range(len(self.lines)))
        found: set[int] = set()
        for hint in hints:
            hay = self.lowered if hint == hint.lower() else self.text  # "AKC": a case-sensitive hint
            pos = hay.find(hint)
            while pos != -1:
                index = bisect.bisect_right(self.starts, pos) - 1
                found.add(index)
                pos = hay.find(hint, self.lines[index][1] + 1)
        return sorted(found)

    def line(self, index: int) -> tuple[int, str]:
        start, end = self.lines[index]
        return start, self.text[start:end]


def _extra_findings(doc: _Text) -> Iterator[Finding]:
    for rank, rule in enumerate(EXTRA_RULES):
        if not any(word in doc.lowered for word in rule.hint):
            continue
        group = "v" if "v" in rule.pattern.groupindex else 0
        pieces = [(0, doc.text)] if rule.whole_text else [doc.line(i) for i in doc.hinted(rule.hint)]
        for offset, piece in pieces:
            if rule.also and rule.also not in piece:
                continue
            for match in rule.pattern.finditer(piece):
                start, end = match.span(group)
                value = match.group(group)
                if start == end or "[REDACTED" in value:
                    continue
                if rule.check is not None and not rule.check(value):
                    continue
                if rule.unless is not None and any(m.start() <= start < m.end() for m in rule.unless.finditer(piece)):
                    continue
                yield Finding(offset + start, offset + end, rule.kind, rank)


def _trim(line: str, start: int, end: int) -> tuple[int, int]:
    while start < end and line[start] in " \t\"'`=:,;":
        start += 1
    while end > start and line[end - 1] in " \t\"'`,;":
        end -= 1
    return start, end


def _plugin_findings(scanner: _Scanner, doc: _Text) -> Iterator[Finding]:
    base = len(EXTRA_RULES)
    for rank, entry in enumerate(scanner.plugins, start=base):
        for index in doc.hinted(entry.hints):
            line_start, line = doc.line(index)
            found: set[str] | None = None
            for regex in entry.patterns:
                for match in regex.finditer(line):
                    spans = ([match.span(g) for g in range(1, regex.groups + 1) if match.group(g)]
                             if regex.groups else [match.span()])
                    for start, end in spans:
                        if found is None:  # the plugin itself decides (a JWT must decode, for one)
                            found = set(entry.plugin.analyze_string(line))
                        if line[start:end] not in found:
                            continue
                        start, end = _trim(line, start, end)
                        named = _NAMED_RE.match(line, start, end)  # AccountKey=…: the name stays
                        if named:
                            start = named.end()
                        value = line[start:end]
                        if start == end or "[REDACTED" in value:
                            continue
                        # A URL's password is any text: it needs the placeholder rule (:<password>@).
                        if entry.kind == "basic-auth" and not _not_placeholder(value):
                            continue
                        if _WORD_RUN_RE.match(value):  # 'this-will-ordinarily-be-detected-by-a-plugin'
                            continue
                        yield Finding(line_start + start, line_start + end, entry.kind, rank)


def _keyword_value(line: str, match: re.Match[str], group: int, quote_group: int) -> tuple[int, int] | None:
    """The value's span: a quoted value whole, an unquoted one up to the first space or separator."""
    start, end = match.span(group)
    quoted = bool(quote_group and match.group(quote_group)) or (start > 0 and line[start - 1] in "\"'`")
    if not quoted:
        token = re.match(r"[^\s;,&]+", line[start:end])
        if token is None:
            return None
        end = start + token.end()
        value = line[start:end]
        for opener, closer in ("()", "[]", "{}", "<>"):
            while value.endswith(closer) and value.count(opener) < value.count(closer):
                value = value[:-1]
        value = value.rstrip(".")
        end = start + len(value)
    return (start, end) if end > start else None


def _in_a_path(line: str, start: int) -> bool:
    """The keyword is part of a path or a longer dotted/dashed name (raw/passwd: …)."""
    while start > 0 and (line[start - 1].isalnum() or line[start - 1] in "_-."):
        start -= 1
    return start > 0 and line[start - 1] in "/\\"


def _keyword_findings(scanner: _Scanner, doc: _Text) -> Iterator[Finding]:
    heuristic = scanner.heuristic
    rank = len(EXTRA_RULES) + len(scanner.plugins)
    for index in doc.hinted(_KEYWORD_HINTS):
        line_start, line = doc.line(index)
        if ("=" not in line and ":" not in line) or len(line) > 4000:
            continue
        for regex, group, quote_group in scanner.keyword_regexes:
            for match in regex.finditer(line):
                # detect-secrets' indirect-reference filter (secret = get_secret(), headers['x']),
                # from the name on: a call earlier on the line (connect(password="…")) is no excuse.
                if _in_a_path(line, match.start()) or heuristic.is_indirect_reference(line[match.start():]):
                    continue
                span = _keyword_value(line, match, group, quote_group)
                if span is None:
                    continue
                value = line[span[0]:span[1]]
                before = line[span[0] - 1:span[0]]
                if (len(value) < 4 or is_placeholder(value, spaced=before in (" ", "\t", "")) or is_expression(value)
                        or heuristic.is_templated_secret(value) or heuristic.is_prefixed_with_dollar_sign(value)
                        or heuristic.is_not_alphanumeric_string(value)):
                    # Not detect-secrets' UUID filter here: after "api_key=" a UUID is a key (Heroku's).
                    continue
                name = line[match.start():span[0]]
                kind = "password" if _PASSWORD_WORD_RE.search(name) else "secret-keyword"
                yield Finding(line_start + span[0], line_start + span[1], kind, rank)


def _entropy_findings(scanner: _Scanner, doc: _Text) -> Iterator[Finding]:
    heuristic = scanner.heuristic
    rank = len(EXTRA_RULES) + len(scanner.plugins) + 1
    for index in doc.hinted(("'", '"')):
        line_start, line = doc.line(index)
        if (('"' not in line and "'" not in line) or not _CREDENTIAL_WORD_RE.search(line)
                or _NOT_CREDENTIAL_RE.search(line)):
            continue
        for plugin in scanner.entropy:
            for match in plugin.regex.finditer(line):
                value = match.group(2)
                if (plugin.calculate_shannon_entropy(value) <= plugin.entropy_limit
                        or heuristic.is_sequential_string(value) or heuristic.is_potential_uuid(value)
                        or heuristic.is_likely_id_string(value, line, plugin) or is_placeholder(value)
                        or "[REDACTED" in value):
                    continue
                yield Finding(line_start + match.start(2), line_start + match.end(2), "high-entropy-string", rank)


def _marker(kind: str, label: bool) -> str:
    if not label or kind in _PLAIN_MARKER:
        return REDACTED
    return f"[REDACTED:{_MARKER_NAME.get(kind, kind)}]"


def _resolve(findings: list[Finding]) -> list[Finding]:
    """Non-overlapping spans: the best-ranked finding names the kind, overlaps widen its span."""
    chosen: list[Finding] = []
    for finding in sorted(findings, key=lambda f: (f.rank, f.start)):
        for i, kept in enumerate(chosen):
            if finding.start < kept.end and kept.start < finding.end:
                chosen[i] = Finding(min(kept.start, finding.start), max(kept.end, finding.end), kept.kind, kept.rank)
                break
        else:
            chosen.append(finding)
    # Widening may have made two kept spans overlap: merge them (left to right).
    merged: list[Finding] = []
    for finding in sorted(chosen, key=lambda f: f.start):
        if merged and finding.start < merged[-1].end:
            last = merged[-1]
            best = last if last.rank <= finding.rank else finding
            merged[-1] = Finding(last.start, max(last.end, finding.end), best.kind, best.rank)
        else:
            merged.append(finding)
    return merged


def find(text: str) -> list[Finding]:
    """Every secret in ``text`` (non-overlapping, in order). Loads detect-secrets on first use."""
    if not text:
        return []
    doc = _Text(text)
    findings = list(_extra_findings(doc))
    scanner = _load()
    findings += _plugin_findings(scanner, doc)
    findings += _keyword_findings(scanner, doc)
    findings += _entropy_findings(scanner, doc)
    return _resolve(findings)


def scan(text: str, *, label: bool = True, literals: list[str] | None = None) -> tuple[str, list[str]]:
    """(``text`` with every secret's value replaced, the sorted kinds found). Values are never returned.

    ``literals`` are exact values to hide as well (the environment's API keys, for logs).
    """
    kinds: set[str] = set()
    for value in literals or ():
        if value and value in text:
            text = text.replace(value, "[REDACTED:env-value]" if label else REDACTED)
            kinds.add("env-value")
    findings = find(text)
    if not findings:
        return text, sorted(kinds)
    parts, last = [], 0
    for finding in findings:
        parts += [text[last:finding.start], _marker(finding.kind, label)]
        last = finding.end
        kinds.add(finding.kind)
    parts.append(text[last:])
    return "".join(parts), sorted(kinds)


def redact(text: str, *, label: bool = True, literals: list[str] | None = None) -> str:
    """``text`` with API keys, tokens, passwords, private keys and connection passwords replaced."""
    return scan(text, label=label, literals=literals)[0]


def secret_kinds(text: str) -> list[str]:
    """The kinds of secret ``text`` holds (empty when none)."""
    return scan(text)[1]
