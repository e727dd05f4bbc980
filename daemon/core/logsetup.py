"""Log lines that are safe to keep for months: one line per event, no secrets, escaped names.

Every handler the CLI installs carries :class:`SafeLogFilter`. It renders the message once,
redacts anything that looks like a credential (provider key formats, ``api_key=...`` pairs,
bearer tokens, private-key blocks, and the literal values of the environment variables that
hold keys), and escapes control characters repr-style, so a file named ``a\\nERROR fake`` in
``raw/`` shows up as ``a\\nERROR fake`` on one line and cannot forge a log entry. Tracebacks
are folded onto the same line for the same reason.

``wikiwright run`` also logs to a rotating file in the platform's log folder
(``~/.local/state/wikiwright/log`` on Linux, ``~/Library/Logs/wikiwright`` on macOS); under
systemd stderr goes to the journal as well.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import re
from pathlib import Path

import platformdirs

from .secrets import scan

LOG_FILE_NAME = "wikiwright.log"
LOG_MAX_BYTES = 5_000_000
LOG_BACKUPS = 5

_SECRET_ENV_RE = re.compile(r"(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$")
# Surrogates too: a file name that is not valid UTF-8 arrives with them (surrogateescape).
# Bidi overrides and isolates too: they reorder how a name reads (a "Trojan Source" file name).
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape_char(match: re.Match[str]) -> str:
    char = match.group(0)
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char, f"\\x{ord(char):02x}" if ord(char) < 256
                                                       else f"\\u{ord(char):04x}")


def escape_controls(text: str) -> str:
    """``text`` on one line: control characters written the way ``repr`` writes them."""
    return _CONTROL_RE.sub(_escape_char, text)


def secret_values(
    environ: os._Environ[str] | dict[str, str] | None = None, extra_names: tuple[str, ...] = ()
) -> list[str]:
    """Literal values of environment variables that hold credentials (longest first)."""
    environ = os.environ if environ is None else environ
    values = {
        value for name, value in environ.items()
        if (_SECRET_ENV_RE.search(name) or name in extra_names) and len(value) >= 8
    }
    return sorted(values, key=len, reverse=True)


def redact(text: str, literals: list[str] | None = None) -> str:
    """Credentials in a log line become ``[REDACTED]`` (the one scanner in core/secrets.py)."""
    return scan(text, label=False, literals=literals if literals is not None else secret_values())[0]


def make_safe(text: str, literals: list[str] | None = None) -> str:
    return escape_controls(redact(text, literals))


class SafeLogFilter(logging.Filter):
    """Redacts credentials and escapes control characters in every record it passes."""

    def __init__(self, extra_secret_env: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.extra_secret_env = extra_secret_env

    def filter(self, record: logging.LogRecord) -> bool:
        literals = secret_values(extra_names=self.extra_secret_env)
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not lose the event
            message = f"{record.msg!r} {record.args!r}"
        record.msg = make_safe(message, literals)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = make_safe(record.exc_text, literals)
        record.exc_info = None  # exc_text (already safe) is what gets printed
        return True


class OneLineFormatter(logging.Formatter):
    """A traceback, if any, continues the event's line instead of starting new ones."""

    def format(self, record: logging.LogRecord) -> str:
        return escape_controls(super().format(record))


FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def make_handler(handler: logging.Handler, datefmt: str | None = None) -> logging.Handler:
    handler.setFormatter(OneLineFormatter(FORMAT, datefmt))
    handler.addFilter(SafeLogFilter())
    return handler


def log_dir() -> Path:
    return Path(platformdirs.user_log_dir("wikiwright"))


def add_file_log(level: int = logging.INFO) -> Path | None:
    """Also log to the rotating file in the log folder; returns its path (None if it cannot)."""
    folder = log_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(
            folder / LOG_FILE_NAME, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8",
        )
    except OSError as exc:
        logging.getLogger(__name__).warning("cannot open the log file in %s: %s", folder, exc)
        return None
    handler.setLevel(level)
    logging.getLogger().addHandler(make_handler(handler, "%Y-%m-%dT%H:%M:%S%z"))
    return folder / LOG_FILE_NAME


_SYSLOG_PRIORITY = {logging.DEBUG: 7, logging.INFO: 6, logging.WARNING: 4, logging.ERROR: 3, logging.CRITICAL: 2}


class _JournalFormatter(OneLineFormatter):
    """Under systemd: a ``<N>`` prefix gives each line its priority (SyslogLevelPrefix=)."""

    def format(self, record: logging.LogRecord) -> str:
        return f"<{_SYSLOG_PRIORITY.get(record.levelno, 6)}>" + super().format(record)


def stderr_handler() -> logging.Handler:
    import sys

    handler = logging.StreamHandler(sys.stderr)
    if os.environ.get("JOURNAL_STREAM"):
        # journald stamps the time itself.
        handler.setFormatter(_JournalFormatter("%(levelname)s %(name)s: %(message)s"))
        handler.addFilter(SafeLogFilter())
        return handler
    return make_handler(handler, "%H:%M:%S")
