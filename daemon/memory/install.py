"""Installing the hooks that feed the daily logs: Claude Code, git, the shell.

``wikiwright hooks install KIND`` writes the absolute path of the wikiwright that runs the
command into what it installs (a venv install is not on the hook's PATH), merges into what is
already there without touching anyone else's entries, backs the replaced file up, and does
nothing when it is already installed the same way. What it wrote is recorded in a manifest
(``<user data dir>/hooks/installed.json``), so ``uninstall`` can put back the file exactly as
it was when nobody changed it since, and take out only its own entries when someone did, and
``hooks status`` can say what is installed where and whether it would work.

- claude-code: SessionEnd and PreCompact entries in ``~/.claude/settings.json`` (``--user``)
  or ``DIR/.claude/settings.json`` (``--project DIR``) that run a copy of
  hooks/claude-code-hook.sh kept in the user data dir.
- git: a marked block at the top of the repository's post-commit and post-rewrite hooks (in
  the hooks folder git uses, ``core.hooksPath`` included); an existing hook keeps its content.
- shell: a copy of hooks/wikiwright.sh in the user data dir, sourced by a marked block at the
  end of the shell's rc file.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from ..core.errors import WikiwrightError
from ..core.fsutil import atomic_write_text, sha256_bytes
from ..core.resources import read_shipped_text

KINDS = ("claude-code", "git", "shell")
CLAUDE_EVENTS = ("SessionEnd", "PreCompact")
CLAUDE_TIMEOUT_SECONDS = 15
GIT_HOOKS = ("post-commit", "post-rewrite")
BACKUP_SUFFIX = ".wikiwright-backup"
_SHELL_SHEBANG = re.compile(r"^#!\s*(?:/usr)?/bin/(?:env\s+)?(?:sh|bash|dash|zsh|ksh|ash)\b")
_SHIPPED_BIN = '"${WIKIWRIGHT_BIN:-wikiwright}"'
_SHIPPED_LOG = '"${WIKIWRIGHT_HOOK_LOG:-${XDG_STATE_HOME:-$HOME/.local/state}/wikiwright/log/hooks.log}"'


class HookInstallError(WikiwrightError):
    """A hook cannot be installed or removed as asked (the files are left as they were)."""


@dataclass
class Change:
    kind: str
    target: Path
    action: str  # installed | updated | unchanged | restored | removed | absent
    backup: Path | None = None
    detail: str = ""

    def line(self) -> str:
        text = f"{self.kind}: {self.action} {self.target}"
        if self.backup:
            text += f" (the previous file is kept as {self.backup})"
        return text + (f" — {self.detail}" if self.detail else "")


# --- where things go ----------------------------------------------------------------------

def hooks_home() -> Path:
    return Path(platformdirs.user_data_dir("wikiwright")) / "hooks"


def manifest_path() -> Path:
    return hooks_home() / "installed.json"


def installed_wikiwright(explicit: str | None = None) -> Path:
    """The absolute path of the wikiwright command running now (the venv's, for a venv install)."""
    candidates = [Path(explicit).expanduser()] if explicit else []
    candidates.append(Path(sys.executable).parent / "wikiwright")
    found = shutil.which("wikiwright")
    if found:
        candidates.append(Path(found))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate.absolute()
    if explicit:
        raise HookInstallError(f"--bin {explicit}: not an executable file")
    raise HookInstallError("cannot find the wikiwright command next to this Python or on PATH; pass --bin PATH")


def claude_settings_path(project: str | None) -> Path:
    if project:
        folder = Path(project).expanduser().resolve()
        if not folder.is_dir():
            raise HookInstallError(f"--project {project}: not a folder")
        return folder / ".claude" / "settings.json"
    base = os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
    return Path(base).expanduser() / "settings.json"


def shell_rc_path(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit).expanduser().absolute()
    shell = Path(os.environ.get("SHELL", "")).name
    name = {"zsh": ".zshrc", "bash": ".bashrc"}.get(shell, ".profile")
    return Path.home() / name


def git_hooks_dir(repo: str | None) -> tuple[Path, Path]:
    """(top of the working tree, the hooks folder git runs hooks from)."""
    where = Path(repo or os.getcwd()).expanduser()
    try:
        out = subprocess.run(["git", "-C", str(where), "rev-parse", "--path-format=absolute", "--show-toplevel",
                              "--git-path", "hooks"], capture_output=True, text=True, timeout=10, check=True).stdout
    except (subprocess.CalledProcessError, OSError) as exc:
        raise HookInstallError(f"{where}: not a git repository with a working tree") from exc
    top, hooks = out.splitlines()[:2]
    hooks_path = Path(hooks)
    if not hooks_path.is_absolute():
        hooks_path = Path(top) / hooks_path
    return Path(top), hooks_path


# --- the scripts written ----------------------------------------------------------------

def _sh_double_quoted(value: str) -> str:
    return '"' + re.sub(r'([\\"$`])', r"\\\1", value) + '"'


_SHIPPED_SHARED = "ww_shared=0"


def render_script(name: str, bin_path: Path, hook_log: Path, *, shared: bool = False) -> str:
    """A shipped hook script with the absolute wikiwright and hook log as its defaults.

    ``shared``: for a hooks folder the team commits, no path of this machine at all: the hook
    finds ``$WIKIWRIGHT_BIN`` or ``wikiwright`` on each person's PATH, logs to each person's
    state folder, and does nothing (quietly) where wikiwright is not installed."""
    text = read_shipped_text("hooks", name)
    if shared:
        if _SHIPPED_SHARED not in text:
            raise HookInstallError(f"the shipped hooks/{name} has no {_SHIPPED_SHARED} line to fill in")
        return text.replace(_SHIPPED_SHARED, "ww_shared=1")
    bin_default = '"${WIKIWRIGHT_BIN:-' + _sh_double_quoted(str(bin_path))[1:-1] + '}"'
    log_default = '"${WIKIWRIGHT_HOOK_LOG:-' + _sh_double_quoted(str(hook_log))[1:-1] + '}"'
    for shipped, installed in ((_SHIPPED_BIN, bin_default), (_SHIPPED_LOG, log_default)):
        if shipped not in text:
            raise HookInstallError(f"the shipped hooks/{name} has no {shipped} line to fill in")
        text = text.replace(shipped, installed)
    return text


def _write_runner(name: str, bin_path: Path, hook_log: Path) -> Path:
    path = hooks_home() / name
    text = render_script(name, bin_path, hook_log)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        atomic_write_text(path, text, crash_hooks=False)
    path.chmod(0o755)
    return path


def _marked_block(text: str, marker: str) -> str:
    start, end = f"# >>> wikiwright {marker} >>>", f"# <<< wikiwright {marker} <<<"
    begin = text.index(start)
    return text[begin: text.index(end, begin) + len(end)] + "\n"


def _strip_block(text: str, marker: str) -> tuple[str, bool]:
    pattern = re.compile(rf"^# >>> wikiwright {re.escape(marker)} >>>\n.*?^# <<< wikiwright {re.escape(marker)} <<<\n?",
                         re.DOTALL | re.MULTILINE)
    new, count = pattern.subn("", text)
    return new, count > 0


# --- the manifest -------------------------------------------------------------------------

@dataclass
class Record:
    kind: str
    target: str
    written_sha256: str  # what the file held right after the install
    original_backup: str = ""  # the file before the first install ("" when there was none)
    bin: str = ""
    installed_at: float = field(default_factory=time.time)
    repo: str = ""  # git: the repository's working tree


def load_manifest() -> list[Record]:
    try:
        data = json.loads(manifest_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    records = []
    for row in data if isinstance(data, list) else []:
        if isinstance(row, dict):
            try:
                records.append(Record(**row))
            except TypeError:
                continue
    return records


def _save_manifest(records: list[Record]) -> None:
    path = manifest_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps([asdict(r) for r in records], indent=2) + "\n", crash_hooks=False)


def _find(records: list[Record], kind: str, target: Path) -> Record | None:
    for record in records:
        if record.kind == kind and record.target == str(target):
            return record
    return None


# --- writing a file the person owns -----------------------------------------------------------

def _backup(path: Path) -> Path | None:
    if not path.exists():
        return None
    stamp = time.strftime("%Y%m%dT%H%M%S")
    backup = path.with_name(f"{path.name}{BACKUP_SUFFIX}-{stamp}")
    n = 2
    while backup.exists():
        backup = path.with_name(f"{path.name}{BACKUP_SUFFIX}-{stamp}-{n}")
        n += 1
    shutil.copy2(path, backup)
    return backup


def _file_to_write(target: Path) -> Path:
    """The file a change goes to: through a symlink (settings kept in a dotfiles repository stay
    linked), and never a file its owner made read-only."""
    real = target.resolve() if target.is_symlink() else target
    if real.exists() and not real.stat().st_mode & 0o222:
        raise HookInstallError(f"{real} is read-only; make it writable first (nothing was changed)")
    return real


def _install_file(kind: str, target: Path, make: Callable[[str | None], str], bin_path: Path,
                  mode: int | None = None, repo: Path | None = None) -> Change:
    """Write ``make(current text)`` to ``target`` if it differs; back up and record it."""
    current = target.read_text(encoding="utf-8") if target.exists() else None
    new = make(current)
    records = load_manifest()
    record = _find(records, kind, target)
    if current == new:
        if mode is not None:
            target.chmod(target.stat().st_mode | mode)
        if record is None:  # installed by hand or by an older wikiwright: remember it now
            records.append(Record(kind, str(target), sha256_bytes(new.encode()), "", str(bin_path),
                                  repo=str(repo or "")))
            _save_manifest(records)
        return Change(kind, target, "unchanged")
    dest = _file_to_write(target)
    backup = _backup(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(dest, new, crash_hooks=False)
    if mode is not None:
        dest.chmod((dest.stat().st_mode | mode) & 0o7777)
    written = sha256_bytes(new.encode())
    if record is None:
        records.append(Record(kind, str(target), written, str(backup or ""), str(bin_path), repo=str(repo or "")))
    else:
        record.written_sha256, record.bin, record.installed_at = written, str(bin_path), time.time()
    _save_manifest(records)
    return Change(kind, target, "installed" if record is None else "updated", backup)


def _uninstall_file(kind: str, target: Path, remove: Callable[[str], str | None]) -> Change:
    """Undo an install: the original back when the file is as installed, else only our part."""
    records = load_manifest()
    record = _find(records, kind, target)
    if record is not None:
        records.remove(record)
    if not target.exists():
        _save_manifest(records)
        return Change(kind, target, "absent")
    data = target.read_bytes()
    dest = _file_to_write(target)
    if record is not None and sha256_bytes(data) == record.written_sha256:
        # Nobody changed the file since: put back exactly what was there before.
        original = Path(record.original_backup) if record.original_backup else None
        if original is not None and original.exists():
            os.replace(original, dest)
            _save_manifest(records)
            return Change(kind, target, "restored", detail="the file as it was before the install")
        if not record.original_backup:
            target.unlink()
            _save_manifest(records)
            return Change(kind, target, "removed", detail="it did not exist before the install")
    text = data.decode("utf-8", errors="replace")
    new = remove(text)
    if new == text:
        _save_manifest(records)
        return Change(kind, target, "absent", detail="no wikiwright entries in it")
    backup = _backup(dest)
    if new is None:
        target.unlink()
    else:
        atomic_write_text(dest, new, crash_hooks=False)
    _save_manifest(records)
    return Change(kind, target, "removed", backup, "only the wikiwright entries were taken out")


# --- Claude Code ----------------------------------------------------------------------------

def _is_our_command(hook: Any) -> bool:
    if not isinstance(hook, dict):
        return False
    command = str(hook.get("command", ""))
    return "wikiwright" in command and ("claude-code" in command)


def _load_settings(text: str | None, target: Path) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise HookInstallError(f"{target} is not valid JSON ({exc}); fix it first, nothing was changed") from None
    if not isinstance(data, dict):
        raise HookInstallError(f"{target} does not hold a JSON object; nothing was changed")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise HookInstallError(f"{target}: \"hooks\" is not an object; nothing was changed")
    return data


def remove_claude_entries(data: dict[str, Any]) -> dict[str, Any]:
    """The settings without wikiwright's hook commands (everything else kept in order)."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return data
    new_hooks: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            new_hooks[event] = groups
            continue
        kept_groups = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                kept = [h for h in group["hooks"] if not _is_our_command(h)]
                if not kept and group["hooks"]:
                    continue  # the group held only our hook
                group = {**group, "hooks": kept}
            kept_groups.append(group)
        if kept_groups or not groups:
            new_hooks[event] = kept_groups
    out = dict(data)
    if new_hooks:
        out["hooks"] = new_hooks
    else:
        out.pop("hooks", None)
    return out


def claude_command(runner: Path) -> str:
    return shlex.quote(str(runner))


def _settings_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def install_claude_code(project: str | None, bin_path: Path, hook_log: Path) -> list[Change]:
    target = claude_settings_path(project)
    runner = _write_runner("claude-code-hook.sh", bin_path, hook_log)
    command = claude_command(runner)

    def make(current: str | None) -> str:
        data = remove_claude_entries(_load_settings(current, target))
        hooks = data.setdefault("hooks", {})
        for event in CLAUDE_EVENTS:
            entry: dict[str, Any] = {"hooks": [{"type": "command", "command": command,
                                                "timeout": CLAUDE_TIMEOUT_SECONDS}]}
            if event == "PreCompact":
                entry = {"matcher": "manual|auto", **entry}
            hooks.setdefault(event, []).append(entry)
        if current is not None and _load_settings(current, target) == data:
            return current  # already installed exactly so: leave the bytes alone
        return _settings_text(data)

    return [_install_file("claude-code", target, make, bin_path)]


def uninstall_claude_code(project: str | None) -> list[Change]:
    target = claude_settings_path(project)

    def remove(text: str) -> str | None:
        data = _load_settings(text, target)
        cleaned = remove_claude_entries(data)
        return text if cleaned == data else _settings_text(cleaned)

    return [_uninstall_file("claude-code", target, remove)]


# --- git ---------------------------------------------------------------------------------------

def _git_block(hook: str, bin_path: Path, hook_log: Path, shared: bool = False) -> str:
    return _marked_block(render_script(f"git-{hook}", bin_path, hook_log, shared=shared), hook)


def committed_hooks_dir(top: Path, hooks_dir: Path) -> bool:
    """True when ``core.hooksPath`` points inside the working tree at a folder git does not
    ignore: what is written there is committed and runs on every teammate's machine."""
    try:
        inside = hooks_dir.resolve().relative_to(top.resolve())
    except ValueError:
        return False
    if inside.parts[:1] == (".git",):
        return False
    try:
        ignored = subprocess.run(["git", "-C", str(top), "check-ignore", "-q", "--", str(inside)],
                                 capture_output=True, timeout=10).returncode == 0
    except OSError:
        ignored = False
    return not ignored


def install_git(repo: str | None, bin_path: Path, hook_log: Path, vault_root: Path | None,
                shared: bool = False) -> list[Change]:
    top, hooks_dir = git_hooks_dir(repo)
    if vault_root is not None and top.resolve() == vault_root.resolve():
        raise HookInstallError(f"{top} is the vault itself: its commits are wikiwright's, not work to log")
    committed = committed_hooks_dir(top, hooks_dir)
    if committed and not shared:
        raise HookInstallError(
            f"core.hooksPath points to {hooks_dir}, a folder of the working tree that is committed: a hook "
            "written there runs on every clone, and would carry this machine's paths. Pass --shared to "
            "write a hook that finds wikiwright on each person's PATH (and does nothing where it is not "
            "installed), then commit it; nothing was changed")
    asked_shared, shared = shared, shared and committed
    changes = []
    plans = []
    for hook in GIT_HOOKS:
        target = hooks_dir / hook
        block = _git_block(hook, bin_path, hook_log, shared)
        current = target.read_text(encoding="utf-8", errors="replace") if target.exists() else None
        if current is not None and f"# >>> wikiwright {hook} >>>" not in current:
            first = current.splitlines()[0] if current.strip() else ""
            if first.startswith("#!") and not _SHELL_SHEBANG.match(first):
                raise HookInstallError(
                    f"{target} is not a shell script ({first}); add a call to the shipped "
                    f"hooks/git-{hook} to it by hand; nothing was changed")
        plans.append((hook, target, block))

    for hook, target, block in plans:
        def make(current: str | None, hook: str = hook, block: str = block) -> str:
            if current is None or not current.strip():
                return "#!/bin/sh\n" + block
            rest, _had = _strip_block(current, hook)
            if rest.startswith("#!"):
                shebang, _, body = rest.partition("\n")
                return f"{shebang}\n{block}{body}"
            return "#!/bin/sh\n" + block + rest

        change = _install_file("git", target, make, bin_path, mode=0o111, repo=top)
        if shared:
            change.detail = ("shared: no path of this machine in it; it runs $WIKIWRIGHT_BIN or `wikiwright` "
                             "from PATH and does nothing where wikiwright is not installed; commit it")
        elif asked_shared:
            change.detail = "not shared: this hooks folder is not committed, so it runs this machine's wikiwright"
        changes.append(change)
    return changes


def uninstall_git(repo: str | None) -> list[Change]:
    _top, hooks_dir = git_hooks_dir(repo)
    changes = []
    for hook in GIT_HOOKS:
        def remove(text: str, hook: str = hook) -> str | None:
            rest, had = _strip_block(text, hook)
            if not had:
                return text
            body = [line for line in rest.splitlines() if line.strip() and not line.startswith("#!")]
            return rest if body else None

        changes.append(_uninstall_file("git", hooks_dir / hook, remove))
    return changes


# --- the shell -----------------------------------------------------------------------------------

def _rc_block(script: Path) -> str:
    quoted = shlex.quote(str(script))
    return ("# >>> wikiwright shell >>>\n"
            "# wwlog: append a note to the wikiwright vault's daily log (`wikiwright hooks uninstall shell`)\n"
            f"[ -f {quoted} ] && . {quoted}\n"
            "# <<< wikiwright shell <<<\n")


def install_shell(rc: str | None, bin_path: Path, hook_log: Path) -> list[Change]:
    target = shell_rc_path(rc)
    if target.exists() and not target.is_file():
        what = "a folder" if target.is_dir() else "not a regular file"
        raise HookInstallError(f"{target} is {what}, not an rc file the shell reads; pass --rc FILE to name "
                               "the right one; nothing was changed")
    script = _write_runner("wikiwright.sh", bin_path, hook_log)
    block = _rc_block(script)

    def make(current: str | None) -> str:
        if current is None:
            return block
        rest, had = _strip_block(current, "shell")
        if had and block in current:
            return current
        return rest + ("" if not rest or rest.endswith("\n") else "\n") + block

    return [_install_file("shell", target, make, bin_path)]


def uninstall_shell(rc: str | None) -> list[Change]:
    target = shell_rc_path(rc)

    def remove(text: str) -> str | None:
        return _strip_block(text, "shell")[0]

    return [_uninstall_file("shell", target, remove)]


# --- status -----------------------------------------------------------------------------------

@dataclass
class HookStatus:
    kind: str
    target: str
    present: bool  # our entries are still in the file
    bin: str
    bin_ok: bool
    runner: str = ""
    runner_ok: bool = True
    queued: int = 0  # git: events waiting in the repository's queue

    @property
    def works(self) -> bool:
        return self.present and self.bin_ok and self.runner_ok

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "works": self.works}


def _executable(path: str) -> bool:
    if path and not os.path.isabs(path):
        path = shutil.which(path) or ""
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def _baked_bin(text: str) -> str:
    match = re.search(r'\$\{WIKIWRIGHT_BIN:-"?([^"}]*)', text)
    return match.group(1).replace('\\"', '"') if match else ""


def hook_statuses() -> list[HookStatus]:
    from .hooks import queued_count

    out = []
    for record in load_manifest():
        target = Path(record.target)
        try:
            text = target.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        if record.kind == "claude-code":
            runner = hooks_home() / "claude-code-hook.sh"
            present = json.dumps(claude_command(runner))[1:-1] in text
            runner_text = runner.read_text(encoding="utf-8") if runner.exists() else ""
            bin_path = _baked_bin(runner_text) or record.bin
            out.append(HookStatus("claude-code", str(target), present, bin_path, _executable(bin_path),
                                  str(runner), _executable(str(runner))))
        elif record.kind == "git":
            present = f"# >>> wikiwright {target.name} >>>" in text
            bin_path = _baked_bin(text) or record.bin
            queued = queued_count(Path(record.repo)) if record.repo and target.name == "post-commit" else 0
            out.append(HookStatus("git", str(target), present and os.access(target, os.X_OK), bin_path,
                                  _executable(bin_path), queued=queued))
        elif record.kind == "shell":
            script = hooks_home() / "wikiwright.sh"
            present = "# >>> wikiwright shell >>>" in text
            script_text = script.read_text(encoding="utf-8") if script.exists() else ""
            bin_path = _baked_bin(script_text) or record.bin
            out.append(HookStatus("shell", str(target), present, bin_path, _executable(bin_path),
                                  str(script), script.exists()))
    return out
