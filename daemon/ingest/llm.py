"""Every model call: litellm, JSON schemas, timeouts, retries, budgets and the cost ledger.

:class:`LLMClient` is the one door to a model. A call is ``complete_json``: it checks the
spend caps, sends the prompt with the JSON schema as ``response_format``, refuses truncated
replies, validates the JSON against the schema (retrying once with the error when it does
not fit), retries timeouts, 429 and 5xx with backoff (honouring ``Retry-After``), and records
model, tokens, cost and latency in the ``llm_calls`` table of ``.wikiwright/llm.db``.

litellm is imported lazily, inside the call: importing it costs seconds and ~200 MB, which
``--help``, ``status`` and offline vaults should never pay. Nothing here writes a page.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core.config import Config, LLMConfig
from ..core.errors import BudgetExceeded, ConfigError, LLMAuthError, LLMError, LLMReplyError, LLMTransientError
from ..core.secrets import redact as redact_secrets
from ..core.sqlitedb import Schema, open_db
from ..core.vault import Vault
from ..intake.ledger import Ledger

log = logging.getLogger(__name__)

COST_DB = "llm.db"
# A Retry-After longer than this is not slept through inside the call: the source goes back
# to the queue and the queue pauses for that long instead (a worker thread stays free).
MAX_INLINE_WAIT = 30.0
MAX_BACKOFF = 20.0

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS llm_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL,               -- unix time the call ended
    day TEXT NOT NULL,              -- local date, YYYY-MM-DD (daily caps)
    month TEXT NOT NULL,            -- local month, YYYY-MM (monthly caps)
    purpose TEXT NOT NULL,          -- ingest, route, lint...
    model TEXT NOT NULL,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    latency_s REAL NOT NULL DEFAULT 0,
    outcome TEXT NOT NULL,          -- ok | invalid | truncated | transient | auth | error
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS llm_calls_day ON llm_calls(day);
CREATE INDEX IF NOT EXISTS llm_calls_month ON llm_calls(month);
-- How each ingest's operations were taken (issue 22): applied as the model sent them, applied
-- after a safe normalisation (counted by kind), or held back (counted by reason). One row per
-- source version and model: a retried ingest replaces its row.
CREATE TABLE IF NOT EXISTS ingest_tolerance (
    sha256 TEXT NOT NULL,
    model TEXT NOT NULL,
    source TEXT NOT NULL,
    ts REAL NOT NULL,
    as_sent INTEGER NOT NULL,
    normalised INTEGER NOT NULL,
    held INTEGER NOT NULL,
    kinds TEXT NOT NULL DEFAULT '{}',    -- JSON: normalisation kind -> count
    reasons TEXT NOT NULL DEFAULT '{}',  -- JSON: held-back reason kind -> count
    PRIMARY KEY (sha256, model)
);
"""


@dataclass(frozen=True)
class CallUsage:
    model: str
    tokens_in: int
    tokens_out: int
    cost_usd: float
    latency_s: float
    notes: tuple[str, ...] = ()  # how the reply was read when it was not plain JSON (json-in-prose)


@dataclass
class Tolerance:
    """How one ingest's (or many ingests') operations were taken."""

    as_sent: int = 0  # applied exactly as the model sent them
    normalised: int = 0  # applied after a safe normalisation
    held: int = 0  # held back for REVIEW.md
    kinds: Counter[str] = field(default_factory=Counter)  # normalisations by kind
    reasons: Counter[str] = field(default_factory=Counter)  # held back by reason kind

    def add(self, other: Tolerance) -> None:
        self.as_sent += other.as_sent
        self.normalised += other.normalised
        self.held += other.held
        self.kinds.update(other.kinds)
        self.reasons.update(other.reasons)

    def line(self) -> str:
        """``5 applied as sent, 3 after normalising (page-name 2, as-of 1), 1 held (quote 1)``"""
        def counts(counter: Counter[str]) -> str:
            return ", ".join(f"{k} {n}" for k, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))

        text = f"{self.as_sent} applied as sent, {self.normalised} applied after normalising"
        if self.kinds:
            text += f" ({counts(self.kinds)})"
        text += f", {self.held} held back"
        if self.reasons:
            text += f" ({counts(self.reasons)})"
        return text


# -- the cost ledger ---------------------------------------------------------------------

class CostLedger:
    """The ``llm_calls`` table: one row per HTTP attempt, successful or not."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = open_db(path, Schema("costs", 1, _SCHEMA_SQL))
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def record(self, *, purpose: str, model: str, tokens_in: int, tokens_out: int, cost_usd: float,
               latency_s: float, outcome: str, detail: str = "", when: float | None = None) -> None:
        ts = time.time() if when is None else when
        local = datetime.fromtimestamp(ts)
        with self._lock:
            self._db.execute(
                "INSERT INTO llm_calls(ts, day, month, purpose, model, tokens_in, tokens_out, cost_usd,"
                " latency_s, outcome, detail) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (ts, local.strftime("%Y-%m-%d"), local.strftime("%Y-%m"), purpose, model, tokens_in,
                 tokens_out, cost_usd, latency_s, outcome, detail[:500]),
            )

    def record_tolerance(self, *, sha256: str, model: str, source: str, tolerance: Tolerance) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO ingest_tolerance(sha256, model, source, ts, as_sent, normalised, held,"
                " kinds, reasons) VALUES (?,?,?,?,?,?,?,?,?)",
                (sha256, model, source, time.time(), tolerance.as_sent, tolerance.normalised, tolerance.held,
                 json.dumps(dict(tolerance.kinds), sort_keys=True),
                 json.dumps(dict(tolerance.reasons), sort_keys=True)),
            )

    def tolerance(self) -> dict[str, Tolerance]:
        """Per model: every recorded ingest's tolerance added up (``wikiwright eval`` prints it)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT model, as_sent, normalised, held, kinds, reasons FROM ingest_tolerance ORDER BY ts"
            ).fetchall()
        out: dict[str, Tolerance] = {}
        for model, as_sent, normalised, held, kinds, reasons in rows:
            total = out.setdefault(str(model), Tolerance())
            total.add(Tolerance(int(as_sent), int(normalised), int(held), Counter(json.loads(kinds)),
                                Counter(json.loads(reasons))))
        return out

    def totals(self, *, day: str | None = None, month: str | None = None) -> tuple[float, int, int]:
        """(dollars, tokens, calls) for one local day or month."""
        column, value = ("day", day) if day else ("month", month)
        with self._lock:
            row = self._db.execute(
                f"SELECT coalesce(sum(cost_usd),0), coalesce(sum(tokens_in+tokens_out),0), count(*)"
                f" FROM llm_calls WHERE {column}=?",
                (value,),
            ).fetchone()
        return float(row[0]), int(row[1]), int(row[2])


def cost_ledger(vault: Vault) -> CostLedger:
    return CostLedger(vault.state / COST_DB)


def spend_summary(vault: Vault, costs: Callable[[], CostLedger], config: Config | None = None,
                  now: datetime | None = None) -> dict[str, Any]:
    """Spend today and this month against the caps (0 = no cap), for ``status``.
    ``costs``: gives the process's cost ledger, asked for only when llm.db exists (a vault
    that never called a model gets no llm.db from a status)."""
    now = now or datetime.now()
    today = (0.0, 0, 0)
    month = (0.0, 0, 0)
    if (vault.state / COST_DB).exists():
        ledger = costs()
        today = ledger.totals(day=now.strftime("%Y-%m-%d"))
        month = ledger.totals(month=now.strftime("%Y-%m"))
    llm = config.llm if config is not None else LLMConfig()
    return {
        "today": {"usd": round(today[0], 6), "tokens": today[1], "calls": today[2],
                  "cap_usd": llm.daily_cap_usd, "cap_tokens": llm.daily_cap_tokens},
        "month": {"usd": round(month[0], 6), "tokens": month[1], "calls": month[2],
                  "cap_usd": llm.monthly_cap_usd, "cap_tokens": llm.monthly_cap_tokens},
    }


def check_budget(ledger: CostLedger, llm: LLMConfig, now: datetime | None = None) -> None:
    """Raise :class:`BudgetExceeded` when a daily or monthly cap is already reached."""
    now = now or datetime.now()
    day_usd, day_tokens, _ = ledger.totals(day=now.strftime("%Y-%m-%d"))
    month_usd, month_tokens, _ = ledger.totals(month=now.strftime("%Y-%m"))
    caps = [
        (llm.daily_cap_usd, day_usd, f"daily spend cap ${llm.daily_cap_usd:.2f} reached (${day_usd:.4f} today)"),
        (llm.monthly_cap_usd, month_usd,
         f"monthly spend cap ${llm.monthly_cap_usd:.2f} reached (${month_usd:.4f} this month)"),
        (llm.daily_cap_tokens, day_tokens, f"daily token cap {llm.daily_cap_tokens} reached ({day_tokens} today)"),
        (llm.monthly_cap_tokens, month_tokens,
         f"monthly token cap {llm.monthly_cap_tokens} reached ({month_tokens} this month)"),
    ]
    for cap, spent, message in caps:
        if cap and spent >= cap:
            raise BudgetExceeded(message + "; the queue waits until the cap resets or is raised in [llm]")


# -- JSON schema (the subset the prompts use) ----------------------------------------------

_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def validate(value: Any, schema: Mapping[str, Any], path: str = "$") -> list[str]:
    """Errors of ``value`` against ``schema`` (empty when it fits).

    Supports type (one or a list), properties, required, additionalProperties (bool or
    schema), items, enum, const, minLength/maxLength, minItems/maxItems, minimum/maximum,
    pattern and anyOf — the subset our schemas use; anything else is ignored.
    """
    errors: list[str] = []
    if "anyOf" in schema:
        options = [validate(value, option, path) for option in schema["anyOf"]]
        if all(options):
            best = min(options, key=len)
            return best if len(options) == 1 else [f"{path}: matches none of the allowed shapes ({best[0]})"]
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_TYPES[name](value) for name in names):
            return [f"{path}: expected {' or '.join(names)}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: must be {schema['const']!r}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{path}: shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: longer than {schema['maxLength']} characters")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{path}: does not match {schema['pattern']}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: below {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: above {schema['maximum']}")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
        if "items" in schema:
            for index, item in enumerate(value):
                errors.extend(validate(item, schema["items"], f"{path}[{index}]"))
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                errors.append(f"{path}: missing required key {name!r}")
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                errors.extend(validate(item, properties[key], f"{path}.{key}"))
            elif extra is False:
                errors.append(f"{path}: unexpected key {key!r}")
            elif isinstance(extra, Mapping):
                errors.extend(validate(item, extra, f"{path}.{key}"))
    return errors[:20]


def parse_json_reply(content: str) -> Any:
    """JSON from a reply; tolerates a ```json fence some models wrap around it, and prose around it."""
    return extract_json(content)[0]


_FENCE_RE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
MAX_JSON_STARTS = 50  # "{" positions tried in a reply of prose before it is called not JSON


def extract_json(content: str) -> tuple[Any, str]:
    """(the JSON value, how it was found): ``""`` the reply is JSON; ``"fence"`` inside a
    ```json fence; ``"prose"`` an object inside prose (a sentence, then the JSON). Models that
    are told "JSON only" still write "Here are the operations:" first; what they mean is the
    object. Raises ValueError when no JSON object is in the reply at all."""
    text = content.strip()
    try:
        return json.loads(text), ""
    except ValueError as exc:
        first_error = exc
    for fence in _FENCE_RE.finditer(text):
        try:
            return json.loads(fence.group(1).strip()), "fence" if fence.start() == 0 else "prose"
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    start = text.find("{")
    tries = 0
    while start >= 0 and tries < MAX_JSON_STARTS:
        tries += 1
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value, "prose"
        start = text.find("{", start + 1)
    raise first_error


# -- the client ------------------------------------------------------------------------------

def _litellm() -> Any:
    # Never fetch the cost map from the network at import (deps.md §3); bundled map only.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    # litellm logs every call at INFO; our own log lines say what matters.
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx"):
        logger = logging.getLogger(name)
        if logger.getEffectiveLevel() < logging.WARNING:
            logger.setLevel(logging.WARNING)
    return litellm


def _retry_after(exc: BaseException) -> float | None:
    """Seconds from a Retry-After header (or retry-after-ms) on a litellm/openai error."""
    headers: Any = None
    response = getattr(exc, "response", None)
    if response is not None:
        headers = getattr(response, "headers", None)
    headers = headers or getattr(exc, "headers", None) or {}
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
        value = headers.get("retry-after")
    except AttributeError:
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return int(code) if isinstance(code, int) else None


class LLMClient:
    """Calls the configured model and returns validated JSON plus what the call cost."""

    # Seconds of the first backoff step; doubled each retry (tests make it small).
    backoff_seconds: float = 1.0

    def __init__(self, config: Config, vault: Vault, ledger: Ledger | None = None, *, costs: CostLedger) -> None:
        self.config = config
        self.llm = config.llm
        self.vault = vault
        self.ledger = ledger  # the queue ledger, for notices (optional)
        self.costs = costs  # the process's cost ledger (its VaultContext's): left open by close()
        self.sleep: Callable[[float], None] = time.sleep
        self._json_mode = "json_schema"  # falls back to json_object once a server refuses it

    def close(self) -> None:
        """Nothing of its own stays open (the cost ledger is the process's)."""

    # -- configuration checks -----------------------------------------------------------

    def api_key(self) -> str | None:
        name = self.llm.api_key_env.strip()
        if not name:
            return None
        key = os.environ.get(name, "").strip()
        if not key:
            raise LLMAuthError(
                f"llm.api_key_env names {name}, but that environment variable is empty or unset; "
                f"export {name}=<your key> for the wikiwright process"
            )
        return key

    def check_setup(self) -> None:
        """Fail early with a clear message: unknown provider/model string or a missing key."""
        model = self.llm.model.strip()
        if not model:
            raise ConfigError("llm.model is empty: no model is configured")
        self.api_key()
        litellm = _litellm()
        try:
            _, provider, _, _ = litellm.get_llm_provider(model=model, api_base=self.llm.api_base or None)
        except Exception as exc:
            raise ConfigError(
                f"llm.model {model!r} is not a model string litellm understands ({_short(exc)}); "
                "use provider/model, e.g. openai/gpt-4o-mini, anthropic/claude-sonnet-4-5, "
                "ollama_chat/llama3.1, or openai/<alias> with llm.api_base for a local server"
            ) from None
        if not self.llm.api_key_env and not self.llm.api_base and provider not in ("ollama", "ollama_chat"):
            # litellm would look for the provider's usual variable; say which, before the first call.
            env = _default_key_env(provider)
            if env and not os.environ.get(env):
                raise LLMAuthError(
                    f"no API key for {model}: set llm.api_key_env to the name of the variable that holds "
                    f"the key (e.g. {env}) and export it"
                )

    # -- the call -----------------------------------------------------------------------

    def complete_json(
        self,
        *,
        purpose: str,
        system: str,
        user: str,
        schema: dict[str, Any],
        model: str | None = None,
        max_tokens: int | None = None,
        accept: Mapping[str, Any] | None = None,
    ) -> tuple[dict[str, Any], CallUsage]:
        """One validated JSON reply. Raises the LLMError classes of errors.py.

        ``schema`` is what the model is asked for (``response_format``); ``accept``, when given,
        is what the reply is refused against (the ingest accepts any object with an operations
        array and checks each operation on its own, so one odd operation costs only itself)."""
        model = (model or self.llm.model).strip()
        if not model:
            raise ConfigError("llm.model is empty: no model is configured")
        check_budget(self.costs, self.llm)
        if self.llm.redact_secrets:
            # The last guard before the network: whatever room built the prompt (ingest, ask,
            # consolidation, prose check), no secret the scanner finds leaves the machine.
            system, user = redact_secrets(system), redact_secrets(user)
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        totals = [0, 0, 0.0, 0.0]  # tokens in, out, cost, latency over every attempt
        reply_problem = ""
        for shape_attempt in range(2):
            content, finish = self._call_with_retries(purpose, model, messages, schema, max_tokens, totals)
            if finish == "length":
                reply_problem = (
                    f"the reply was cut off at the token limit ({max_tokens or self.llm.reply_budget_tokens} "
                    "tokens; finish_reason=length)"
                )
            else:
                try:
                    data, found = extract_json(content)
                except ValueError as exc:
                    reply_problem = f"the reply is not JSON ({exc})"
                else:
                    errors = validate(data, accept if accept is not None else schema)
                    if not errors:
                        usage = CallUsage(model, int(totals[0]), int(totals[1]), float(totals[2]), float(totals[3]),
                                          ("json-in-prose",) if found == "prose" else
                                          ("json-in-fence",) if found == "fence" else ())
                        return data, usage
                    reply_problem = "the reply does not fit the schema: " + "; ".join(errors[:5])
            log.warning("%s call to %s: %s%s", purpose, model, reply_problem,
                        "; retrying once" if shape_attempt == 0 else "")
            if shape_attempt == 0:
                check_budget(self.costs, self.llm)
                messages = [
                    *messages[:2],
                    {"role": "assistant", "content": content[:2000]},
                    {"role": "user", "content": (
                        f"That reply was rejected: {reply_problem}. Reply again with only one JSON object "
                        "that follows the schema exactly; keep it shorter if it was cut off."
                    )},
                ]
        raise LLMReplyError(f"{purpose}: {reply_problem} (after one retry)")

    def _call_with_retries(
        self, purpose: str, model: str, messages: list[dict[str, str]], schema: dict[str, Any],
        max_tokens: int | None, totals: list[Any],
    ) -> tuple[str, str]:
        attempts = max(0, self.llm.max_retries) + 1
        last: LLMTransientError | None = None
        for attempt in range(attempts):
            try:
                return self._call_once(purpose, model, messages, schema, max_tokens, totals)
            except LLMTransientError as exc:
                last = exc
                if attempt + 1 >= attempts:
                    break
                if exc.retry_after is not None and exc.retry_after > MAX_INLINE_WAIT:
                    break  # pause the queue instead of holding a worker for minutes
                backoff = self.backoff_seconds * (2 ** attempt) * (0.75 + random.random() / 2)
                delay = min(MAX_BACKOFF, exc.retry_after if exc.retry_after is not None else backoff)
                log.info("%s call to %s: %s; retry %d/%d in %.1fs", purpose, model, exc, attempt + 1,
                         attempts - 1, delay)
                self.sleep(delay)
        assert last is not None
        raise last

    def _call_once(
        self, purpose: str, model: str, messages: list[dict[str, str]], schema: dict[str, Any],
        max_tokens: int | None, totals: list[Any],
    ) -> tuple[str, str]:
        litellm = _litellm()
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "timeout": self.llm.timeout,
            "max_tokens": max_tokens or self.llm.reply_budget_tokens,
            "temperature": 0,
            "response_format": self._response_format(purpose, schema),
            # Our own retry loop decides (and records every attempt); litellm and the openai
            # client must not retry behind our back.
            "num_retries": 0,
            "max_retries": 0,
        }
        if self.llm.api_base:
            kwargs["api_base"] = self.llm.api_base
        key = self.api_key()
        if key:
            kwargs["api_key"] = key
        started = time.monotonic()
        try:
            response = litellm.completion(**kwargs)
        except Exception as exc:
            latency = time.monotonic() - started
            error = self._classify(exc, model)
            if self._json_mode == "json_schema" and _rejects_json_schema(exc):
                # llama.cpp's server and some proxies take only {"type": "json_object", "schema": …}.
                log.info("%s rejects json_schema response_format; using json_object with the schema", model)
                self._json_mode = "json_object"
                return self._call_once(purpose, model, messages, schema, max_tokens, totals)
            outcome = ("transient" if isinstance(error, LLMTransientError)
                       else "auth" if isinstance(error, LLMAuthError) else "error")
            self.costs.record(purpose=purpose, model=model, tokens_in=0, tokens_out=0, cost_usd=0.0,
                              latency_s=latency, outcome=outcome, detail=str(error))
            totals[3] += latency
            raise error from None
        latency = time.monotonic() - started
        usage = getattr(response, "usage", None)
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        cost = _cost(litellm, response)
        choice = response.choices[0]
        finish = str(getattr(choice, "finish_reason", "") or "")
        content = str(getattr(choice.message, "content", "") or "")
        outcome = "truncated" if finish == "length" else "ok"
        self.costs.record(purpose=purpose, model=model, tokens_in=tokens_in, tokens_out=tokens_out,
                          cost_usd=cost, latency_s=latency, outcome=outcome)
        totals[0] += tokens_in
        totals[1] += tokens_out
        totals[2] += cost
        totals[3] += latency
        return content, finish

    def _response_format(self, purpose: str, schema: dict[str, Any]) -> dict[str, Any]:
        if self._json_mode == "json_object":
            return {"type": "json_object", "schema": schema}
        name = re.sub(r"[^A-Za-z0-9_-]", "_", purpose)[:60] or "reply"
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}

    def _classify(self, exc: BaseException, model: str) -> LLMError | ConfigError:
        if isinstance(exc, LLMError | ConfigError):
            return exc
        litellm = _litellm()
        errors = litellm.exceptions
        status = _status(exc)
        text = _short(exc)
        if isinstance(exc, errors.AuthenticationError | errors.PermissionDeniedError) or status in (401, 403):
            return LLMAuthError(
                f"the model provider refused the credentials for {model} (HTTP {status or 401}): {text}; "
                "model calls are stopped until the key is fixed and wikiwright restarted"
            )
        if isinstance(exc, errors.RateLimitError) or status == 429:
            return LLMTransientError(f"rate limited by the provider (HTTP 429): {text}",
                                     retry_after=_retry_after(exc))
        if isinstance(exc, errors.Timeout):
            return LLMTransientError(f"no reply within {self.llm.timeout:g}s (llm.timeout)")
        if isinstance(exc, errors.APIConnectionError):
            return LLMTransientError(f"cannot reach the model at {self.llm.api_base or 'the provider'}: {text}")
        if status is not None and status >= 500:
            return LLMTransientError(f"the provider failed (HTTP {status}): {text}", retry_after=_retry_after(exc))
        if isinstance(exc, errors.NotFoundError) or status == 404:
            return ConfigError(f"llm.model {model!r} was not found by the provider (HTTP 404): {text}")
        if isinstance(exc, errors.ContextWindowExceededError):
            return LLMReplyError(f"the prompt is larger than {model}'s context window: {text}")
        if isinstance(exc, errors.BadRequestError) or status in (400, 422):
            return LLMReplyError(f"the provider rejected the request (HTTP {status or 400}): {text}")
        return LLMTransientError(f"model call failed: {type(exc).__name__}: {text}")


def _rejects_json_schema(exc: BaseException) -> bool:
    text = str(exc).lower()
    return _status(exc) in (400, 422) and ("json_schema" in text or "response_format" in text
                                           or "json_object" in text)


def _short(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cost(litellm: Any, response: Any) -> float:
    """Best-effort dollars for one reply; unmapped (local) models cost 0 and never crash."""
    hidden = getattr(response, "_hidden_params", None) or {}
    value = hidden.get("response_cost") if isinstance(hidden, dict) else None
    if value is None:
        try:
            value = litellm.completion_cost(completion_response=response)
        except Exception:
            value = 0.0
    try:
        return max(0.0, float(value or 0.0))
    except (TypeError, ValueError):
        return 0.0


def _default_key_env(provider: str) -> str:
    return {
        "openai": "OPENAI_API_KEY",
        "anthropic": "ANTHROPIC_API_KEY",
        "gemini": "GEMINI_API_KEY",
        "mistral": "MISTRAL_API_KEY",
        "groq": "GROQ_API_KEY",
        "openrouter": "OPENROUTER_API_KEY",
        "deepseek": "DEEPSEEK_API_KEY",
        "together_ai": "TOGETHERAI_API_KEY",
    }.get(provider, "")
