"""Install wikiwright as a per-user background service: systemd (Linux) or launchd (macOS).

The unit and the agent are rendered from the templates in ``systemd/`` with the absolute
path of the interpreter wikiwright runs in (``sys.executable``: the venv or pipx python, not
the one it links to) and the vault. Writing is atomic and idempotent: installing twice
changes nothing the second time. No root: a systemd *user* unit under
``~/.config/systemd/user`` and a LaunchAgent under ``~/Library/LaunchAgents``.
"""

from __future__ import annotations

import os
import plistlib
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import ServiceError
from ..core.fsutil import atomic_write_bytes
from ..core.logsetup import log_dir
from ..core.resources import read_shipped_text, shipped_path

UNIT_NAME = "wikiwright.service"
LAUNCHD_LABEL = "org.wikiwright.daemon"
MANAGERS = ("systemd", "launchd")
# Folders macOS guards with its privacy controls (TCC): a launchd agent gets EPERM there
# until its interpreter is granted access.
_TCC_FOLDERS = ("Documents", "Desktop", "Downloads", "Library/Mobile Documents")

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def default_manager() -> str:
    return "launchd" if sys.platform == "darwin" else "systemd"


def interpreter() -> str:
    # abspath, not resolve(): a venv's python is a symlink to the base interpreter, which
    # would not see the venv's packages.
    return os.path.abspath(sys.executable)


def program_arguments(vault_root: Path, python: str | None = None) -> list[str]:
    return [python or interpreter(), "-m", "wikiwright", "run", "--vault", str(vault_root)]


def _search_path(python: str) -> str:
    """PATH for the service: the interpreter's folder first (its git-aware tools), then the system's."""
    folders = [os.path.dirname(python), "/usr/local/bin", "/opt/homebrew/bin", "/usr/bin", "/bin"]
    git = shutil.which("git")
    if git:
        folders.insert(1, os.path.dirname(git))
    return ":".join(dict.fromkeys(folders))


# -- systemd ---------------------------------------------------------------------------------

def systemd_escape(value: str) -> str:
    """One word of a unit file line: specifiers (%) and variables ($) taken literally."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    if not value or re.search(r"[\s\"'\\;]", value):
        return f'"{escaped}"'
    return escaped


def render_unit(vault_root: Path, python: str | None = None) -> str:
    python = python or interpreter()
    args = program_arguments(vault_root, python)
    comment = str(vault_root).replace("\n", " ").replace("%", "%%")
    values = {
        "@EXEC_START@": " ".join(systemd_escape(arg) for arg in args),
        "@VAULT_COMMENT@": comment,
        "@PATH_ENV@": systemd_escape(f"PATH={_search_path(python)}"),
    }
    text = read_shipped_text("systemd", "wikiwright.service")
    for key, value in values.items():
        text = text.replace(key, value)
    return text


def unit_path() -> Path:
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(config_home) / "systemd" / "user" / UNIT_NAME


# -- launchd ---------------------------------------------------------------------------------

def render_plist(vault_root: Path, python: str | None = None) -> bytes:
    python = python or interpreter()
    with shipped_path("systemd", "wikiwright.plist").open("rb") as handle:
        data: dict[str, Any] = plistlib.load(handle)
    logs = log_dir()
    data["ProgramArguments"] = program_arguments(vault_root, python)
    data["WorkingDirectory"] = str(vault_root)
    data["StandardOutPath"] = str(logs / "launchd.out.log")
    data["StandardErrorPath"] = str(logs / "launchd.err.log")
    data.setdefault("EnvironmentVariables", {})["PATH"] = _search_path(python)
    return plistlib.dumps(data, fmt=plistlib.FMT_XML, sort_keys=False)


def plist_path() -> Path:
    return Path(os.path.expanduser("~")) / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"


def tcc_protected(vault_root: Path) -> bool:
    home = Path(os.path.expanduser("~")).resolve()
    root = vault_root.resolve()
    return any(root.is_relative_to(home / folder) for folder in _TCC_FOLDERS)


# -- install / uninstall / status / logs --------------------------------------------------------

def _run(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(args), capture_output=True, text=True, timeout=60, check=False)
    except FileNotFoundError:
        raise ServiceError(f"{args[0]} was not found on PATH; is this system using "
                           f"{'launchd' if args[0] == 'launchctl' else 'systemd'}?") from None
    except subprocess.TimeoutExpired:
        raise ServiceError(f"`{' '.join(args)}` did not answer within 60 s") from None


@dataclass
class ServiceManager:
    manager: str = ""
    runner: Runner = _run

    def __post_init__(self) -> None:
        self.manager = self.manager or default_manager()
        if self.manager not in MANAGERS:
            raise ServiceError(f"unknown service manager {self.manager!r} (choose systemd or launchd)")

    @property
    def path(self) -> Path:
        return unit_path() if self.manager == "systemd" else plist_path()

    def render(self, vault_root: Path) -> bytes:
        if self.manager == "systemd":
            return render_unit(vault_root).encode("utf-8")
        return render_plist(vault_root)

    def _call(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = self.runner(args)
        if check and result.returncode != 0:
            detail = (result.stderr or result.stdout).strip()
            hint = ""
            if args[0] == "systemctl" and ("bus" in detail.lower() or "XDG_RUNTIME_DIR" in detail):
                hint = (" (no systemd user session here: log in normally, or run `loginctl enable-linger "
                        "$USER` and `export XDG_RUNTIME_DIR=/run/user/$(id -u)`, then try again)")
            raise ServiceError(f"`{' '.join(args)}` failed: {detail or f'exit status {result.returncode}'}{hint}")
        return result

    def _systemctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self._call("systemctl", "--user", *args, check=check)

    def _domain(self) -> str:
        return f"gui/{os.getuid()}"

    def install(self, vault_root: Path) -> list[str]:
        """Write the service file and start it; returns what was done, one line each."""
        data = self.render(vault_root)
        path = self.path
        try:
            changed = path.read_bytes() != data
        except FileNotFoundError:
            changed = True
        notes = []
        if changed:
            atomic_write_bytes(path, data, crash_hooks=False)
            notes.append(f"wrote {path}")
        else:
            notes.append(f"{path} is already up to date")
        if self.manager == "systemd":
            notes += self._install_systemd(changed)
        else:
            notes += self._install_launchd(changed, path)
            if tcc_protected(vault_root):
                notes.append(
                    f"{vault_root} is in a folder macOS protects: give {interpreter()} Full Disk Access "
                    "(System Settings > Privacy & Security > Full Disk Access, add it with the + button), "
                    "or the agent cannot read the vault"
                )
        return notes

    def _install_systemd(self, changed: bool) -> list[str]:
        notes = []
        was_active = self._systemctl("is-active", "--quiet", UNIT_NAME, check=False).returncode == 0
        if changed:
            self._systemctl("daemon-reload")
        if changed and was_active:
            self._systemctl("restart", UNIT_NAME)
            notes.append(f"restarted {UNIT_NAME} with the new settings")
        self._systemctl("enable", "--now", UNIT_NAME)
        notes.append(f"{UNIT_NAME} is enabled (starts at login) and running"
                     if not was_active or changed else f"{UNIT_NAME} was already enabled and running")
        if shutil.which("loginctl"):
            user = os.environ.get("USER") or str(os.getuid())
            linger = self._call("loginctl", "show-user", user, "--property=Linger", check=False)
            if "Linger=no" in linger.stdout:
                notes.append(f"it stops when you log out; to keep it running run: loginctl enable-linger {user}")
        notes.append(f"logs: journalctl --user -u {UNIT_NAME} -f   (and {log_dir()})")
        return notes

    def _install_launchd(self, changed: bool, path: Path) -> list[str]:
        target = f"{self._domain()}/{LAUNCHD_LABEL}"
        loaded = self._call("launchctl", "print", target, check=False).returncode == 0
        if loaded and not changed:
            return [f"{LAUNCHD_LABEL} was already loaded"]
        if loaded:
            self._call("launchctl", "bootout", target, check=False)
        self._call("launchctl", "bootstrap", self._domain(), str(path))
        return [f"{'reloaded' if loaded else 'loaded'} {LAUNCHD_LABEL} (starts at login)",
                f"logs: {log_dir()}"]

    def uninstall(self) -> list[str]:
        path = self.path
        notes = []
        if self.manager == "systemd":
            self._systemctl("disable", "--now", UNIT_NAME, check=False)
            notes.append(f"stopped and disabled {UNIT_NAME}")
        else:
            self._call("launchctl", "bootout", f"{self._domain()}/{LAUNCHD_LABEL}", check=False)
            notes.append(f"unloaded {LAUNCHD_LABEL}")
        if path.exists():
            path.unlink()
            notes.append(f"removed {path}")
        else:
            notes.append(f"{path} was not installed")
        if self.manager == "systemd":
            self._systemctl("daemon-reload", check=False)
        return notes

    def status(self) -> tuple[bool, str]:
        """(running, text from the service manager)."""
        if not self.path.exists():
            return False, f"not installed ({self.path} does not exist); install with `wikiwright service install`"
        if self.manager == "systemd":
            result = self._systemctl("status", "--no-pager", "--lines=5", UNIT_NAME, check=False)
            running = self._systemctl("is-active", "--quiet", UNIT_NAME, check=False).returncode == 0
        else:
            result = self._call("launchctl", "print", f"{self._domain()}/{LAUNCHD_LABEL}", check=False)
            running = result.returncode == 0 and "state = running" in result.stdout
        text = (result.stdout or result.stderr).rstrip()
        return running, f"{self.path}\n{text}" if text else str(self.path)

    def log_command(self, lines: int, follow: bool) -> list[str]:
        if self.manager == "systemd" and shutil.which("journalctl"):
            follow_flag = ["-f"] if follow else []
            return ["journalctl", "--user", "-u", UNIT_NAME, "-n", str(lines), "--no-pager", *follow_flag]
        return ["tail", "-n", str(lines), *(["-F"] if follow else []), str(log_dir() / "wikiwright.log")]
