"""One immutable configuration object.

Layers, later winning: the shipped defaults (``config/wikiwright.toml``), the user config
file (platformdirs), the vault's ``.wikiwright/config.toml``, then ``WIKIWRIGHT_<SECTION>_<KEY>``
environment variables. The loaded :class:`Config` remembers where every value came from, so
``wikiwright config`` can say it. Nothing here is a module-level singleton: the CLI loads one
Config and passes it down.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import platformdirs

from ..core.errors import ConfigError
from ..core.resources import shipped_path

APP_NAME = "wikiwright"
ENV_PREFIX = "WIKIWRIGHT_"
# Environment variables that name things other than config keys.
RESERVED_ENV = {"WIKIWRIGHT_VAULT", "WIKIWRIGHT_CRASH_AT", "WIKIWRIGHT_TEST_HOOKS", "WIKIWRIGHT_HOOK_TIMEOUT"}


@dataclass(frozen=True)
class WatchConfig:
    debounce_seconds: float = 1.0
    poll_interval_seconds: float = 0.25
    rescan_minutes: float = 5.0
    polling: bool = False


@dataclass(frozen=True)
class IngestConfig:
    max_source_bytes: int = 10_000_000
    workers: int = 2
    summary_sentences: int = 3
    key_points: int = 6
    # A file with more than one hard link may be a link to a file outside the vault.
    allow_hard_links: bool = False
    # Bounds of one extraction (issue 20): decompressed bytes as a multiple of max_source_bytes,
    # and the worker process's wall clock and memory.
    max_expansion: int = 20
    extract_timeout_seconds: float = 60.0
    extract_memory_mb: int = 1024


@dataclass(frozen=True)
class GitConfig:
    author_name: str = "wikiwright"
    author_email: str = "wikiwright@localhost"
    lock_retry_seconds: float = 60.0
    # Sync with a git remote (issue 14): off while ``remote`` is empty.
    remote: str = ""
    branch: str = ""
    push: bool = True
    sync_interval_seconds: float = 60.0
    # Housekeeping (issue 15): the daemon runs `git gc --auto` itself, under the vault's write
    # lock, when the queue is quiet; its own git commands never start an automatic gc.
    housekeeping_minutes: float = 30.0
    # Sources in raw/ committed with their ingest: text up to this size; larger or binary
    # sources are kept out of git (a .gitignore section the daemon maintains).
    commit_raw_max_bytes: int = 1_000_000
    # Daily logs are committed in batches, once none has changed for this long.
    commit_logs_after_quiet_seconds: float = 300.0
    # What one sync round may bring from the remote (door/synctree.py): more new files than
    # this and none of them is taken; files built by code or that only grow (log.md, index.md,
    # REVIEW.md, daily logs) up to this size (pages: lint.max_page_bytes; raw/: commit_raw_max_bytes).
    sync_max_new_files: int = 1000
    sync_max_file_bytes: int = 20_000_000
    # One ingest per source across machines (door/sourceclaims.py): a source another machine
    # claimed first waits here for its ingest to arrive with sync, at most this long.
    source_claim_grace_seconds: float = 900.0


@dataclass(frozen=True)
class LLMConfig:
    model: str = ""
    route_model: str = ""
    api_base: str = ""
    api_key_env: str = ""
    timeout: float = 120.0
    max_retries: int = 2
    max_pages_per_ingest: int = 15
    prompt_budget_chars: int = 24000
    reply_budget_tokens: int = 4000
    daily_cap_usd: float = 0.0
    monthly_cap_usd: float = 0.0
    daily_cap_tokens: int = 0
    monthly_cap_tokens: int = 0
    max_section_shrink: float = 0.5
    # Cost bound per source (estimated before the first call); 0: no bound. Over it, the source
    # waits for a tick in REVIEW.md ("review") or is ingested by its outline and the sections
    # matching the wiki ("outline").
    max_tokens_per_source: int = 150_000
    over_cost: str = "review"
    # Secrets (keys, tokens, passwords, private keys) are replaced before any text is sent.
    redact_secrets: bool = True

    @property
    def enabled(self) -> bool:
        return bool(self.model.strip())


@dataclass(frozen=True)
class ConsolidationConfig:
    min_hours: float = 24.0
    min_sessions: int = 5
    stale_lock_minutes: float = 30.0
    check_interval_minutes: float = 5.0
    review: bool = False


@dataclass(frozen=True)
class LintConfig:
    interval_hours: float = 24.0
    max_page_bytes: int = 200_000
    prose_check: bool = False
    prose_shard_pages: int = 6
    prose_token_budget: int = 60_000
    review_poll_seconds: float = 2.0


@dataclass(frozen=True)
class PagesConfig:
    # Remote images make the reader's editor fetch them (the address leaks); off: they become links.
    allow_remote_images: bool = False


SECTIONS: dict[str, type] = {
    "watch": WatchConfig,
    "ingest": IngestConfig,
    "git": GitConfig,
    "llm": LLMConfig,
    "consolidation": ConsolidationConfig,
    "lint": LintConfig,
    "pages": PagesConfig,
}


@dataclass(frozen=True)
class Config:
    watch: WatchConfig = field(default_factory=WatchConfig)
    ingest: IngestConfig = field(default_factory=IngestConfig)
    git: GitConfig = field(default_factory=GitConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    consolidation: ConsolidationConfig = field(default_factory=ConsolidationConfig)
    lint: LintConfig = field(default_factory=LintConfig)
    pages: PagesConfig = field(default_factory=PagesConfig)
    # "section.key" -> human description of the layer the value came from.
    origins: Mapping[str, str] = field(default_factory=dict, compare=False)
    default_vault: str = ""

    def items(self) -> list[tuple[str, Any, str]]:
        """Every key as (dotted name, value, origin), in a stable order."""
        rows = []
        for section in SECTIONS:
            values = getattr(self, section)
            for f in fields(values):
                name = f"{section}.{f.name}"
                rows.append((name, getattr(values, f.name), self.origins.get(name, "default")))
        return rows

    def replace(self, **sections: Any) -> Config:
        """A copy with whole sections swapped (tests and benchmarks tune one knob this way)."""
        return dataclasses.replace(self, **sections)


def user_config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def vault_config_path(vault_root: Path) -> Path:
    return vault_root / ".wikiwright" / "config.toml"


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror}") from exc


def _coerce(value: Any, target: type, where: str) -> Any:
    """Check (and for env strings, convert) one value to the type of its field."""
    if isinstance(value, str) and target is not str:
        text = value.strip()
        try:
            if target is bool:
                if text.lower() in {"1", "true", "yes", "on"}:
                    return True
                if text.lower() in {"0", "false", "no", "off"}:
                    return False
                raise ValueError(text)
            return target(text)
        except ValueError:
            raise ConfigError(f"{where}: expected {target.__name__}, got {value!r}") from None
    if target is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if target is bool and not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    if target is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{where}: expected a whole number, got {value!r}")
    if not isinstance(value, target):
        raise ConfigError(f"{where}: expected {target.__name__}, got {value!r}")
    return value


def _field_types(section_cls: type) -> dict[str, type]:
    types = {"float": float, "int": int, "bool": bool, "str": str}
    return {f.name: types[str(f.type)] for f in fields(section_cls)}


def _apply_layer(
    merged: dict[str, dict[str, Any]], origins: dict[str, str], data: Mapping[str, Any], origin: str
) -> None:
    for section, values in data.items():
        if section == "default_vault":
            continue
        if section not in SECTIONS:
            raise ConfigError(f"{origin}: unknown section [{section}] (known: {', '.join(SECTIONS)})")
        if not isinstance(values, Mapping):
            raise ConfigError(f"{origin}: [{section}] must be a table")
        types = _field_types(SECTIONS[section])
        for key, value in values.items():
            if key not in types:
                raise ConfigError(
                    f"{origin}: unknown key {section}.{key} (known: {', '.join(sorted(types))})"
                )
            merged[section][key] = _coerce(value, types[key], f"{origin}: {section}.{key}")
            origins[f"{section}.{key}"] = origin


def _env_layer(environ: Mapping[str, str]) -> dict[str, dict[str, str]]:
    layer: dict[str, dict[str, str]] = {}
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIX) or name in RESERVED_ENV:
            continue
        rest = name[len(ENV_PREFIX) :].lower()
        section, _, key = rest.partition("_")
        if section in SECTIONS and key:
            layer.setdefault(section, {})[key] = value
    return layer


def _validate(config: Config) -> None:
    checks = [
        (config.watch.debounce_seconds >= 0, "watch.debounce_seconds must be >= 0"),
        (config.watch.poll_interval_seconds > 0, "watch.poll_interval_seconds must be > 0"),
        (config.watch.rescan_minutes > 0, "watch.rescan_minutes must be > 0"),
        (config.ingest.max_source_bytes > 0, "ingest.max_source_bytes must be > 0"),
        (1 <= config.ingest.workers <= 16, "ingest.workers must be between 1 and 16"),
        (config.ingest.max_expansion >= 1, "ingest.max_expansion must be >= 1"),
        (config.ingest.extract_timeout_seconds > 0, "ingest.extract_timeout_seconds must be > 0"),
        (config.ingest.extract_memory_mb >= 64, "ingest.extract_memory_mb must be >= 64"),
        (config.llm.timeout > 0, "llm.timeout must be > 0"),
        (config.llm.max_pages_per_ingest >= 1, "llm.max_pages_per_ingest must be >= 1"),
        (config.llm.prompt_budget_chars >= 1000, "llm.prompt_budget_chars must be >= 1000"),
        (0 < config.llm.max_section_shrink <= 1, "llm.max_section_shrink must be in (0, 1]"),
        (config.llm.max_tokens_per_source >= 0, "llm.max_tokens_per_source must be >= 0 (0: no bound)"),
        (config.llm.over_cost in ("review", "outline"), 'llm.over_cost must be "review" or "outline"'),
        (config.consolidation.min_sessions >= 0, "consolidation.min_sessions must be >= 0"),
        (config.consolidation.stale_lock_minutes > 0, "consolidation.stale_lock_minutes must be > 0"),
        (config.git.sync_interval_seconds > 0, "git.sync_interval_seconds must be > 0"),
        (config.git.source_claim_grace_seconds >= 0, "git.source_claim_grace_seconds must be >= 0"),
    ]
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)
    if config.llm.api_key_env and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", config.llm.api_key_env):
        raise ConfigError(
            "llm.api_key_env must be the *name* of an environment variable (e.g. OPENAI_API_KEY), "
            "not the key itself"
        )


def load_config(
    vault_root: Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    user_file: Path | None = None,
) -> Config:
    """Build the effective Config from every layer."""
    environ = os.environ if environ is None else environ
    merged: dict[str, dict[str, Any]] = {name: {} for name in SECTIONS}
    origins: dict[str, str] = {}
    shipped = shipped_path("config", "wikiwright.toml")
    _apply_layer(merged, origins, _read_toml(shipped), "shipped defaults")
    user_path = user_file or user_config_path()
    user_data = _read_toml(user_path)
    _apply_layer(merged, origins, user_data, str(user_path))
    if vault_root is not None:
        vault_path = vault_config_path(vault_root)
        _apply_layer(merged, origins, _read_toml(vault_path), str(vault_path))
    env = _env_layer(environ)
    for section, values in env.items():
        _apply_layer(merged, origins, {section: values}, "environment")
    for section, values in env.items():
        for key in values:
            origins[f"{section}.{key}"] = f"env {ENV_PREFIX}{section.upper()}_{key.upper()}"
    default_vault = user_data.get("default_vault", "")
    if not isinstance(default_vault, str):
        raise ConfigError(f"{user_path}: default_vault must be a string path")
    config = Config(
        **{name: cls(**merged[name]) for name, cls in SECTIONS.items()},
        origins=origins,
        default_vault=default_vault,
    )
    _validate(config)
    return config


def record_default_vault(vault_root: Path, user_file: Path | None = None) -> Path:
    """Remember ``vault_root`` as the default vault in the user config file.

    Only the ``default_vault`` line is written; every other byte of the file is kept.
    """
    from ..core.fsutil import atomic_write_text

    path = user_file or user_config_path()
    line = f"default_vault = {_toml_string(str(vault_root))}\n"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    pattern = re.compile(r"^default_vault\s*=.*\n?", re.MULTILINE)
    # TOML top-level keys must come before the first [table]; insert at the top if absent.
    text = pattern.sub(line, text, count=1) if pattern.search(text) else line + text
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)
    return path


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
