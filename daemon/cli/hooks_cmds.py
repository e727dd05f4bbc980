"""The command line: hooks install / uninstall / status (the hooks that feed the daily logs)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..core.errors import WikiwrightError
from .common import AddParser, command, emit_json

KINDS = ("claude-code", "git", "shell")


def add_parsers(add: AddParser) -> None:
    p = add("hooks", "install, remove or check the hooks that log agent sessions, commits and notes", vault=False)
    p.add_argument("action", choices=("install", "uninstall", "status"))
    p.add_argument("kind", nargs="?", choices=KINDS, help="claude-code, git or shell (not for status)")
    p.add_argument("repo", nargs="?", metavar="REPO", help="git: the repository (default: the current one)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="claude-code: ~/.claude/settings.json (the default)")
    where.add_argument("--project", metavar="DIR", help="claude-code: DIR/.claude/settings.json")
    p.add_argument("--rc", metavar="FILE", help="shell: the rc file (default: ~/.zshrc or ~/.bashrc by $SHELL, "
                   "else ~/.profile)")
    p.add_argument("--bin", metavar="PATH", help="the wikiwright the hooks run (default: this one)")
    p.add_argument("--shared", action="store_true",
                   help="git: core.hooksPath is a folder the team commits; write hooks with no path of this "
                   "machine (wikiwright from each person's PATH, nothing done where it is not installed)")
    p.add_argument("--json", action="store_true", help="status: machine-readable output")


def _default_vault() -> tuple[str | None, str]:
    """The vault a hook would find (it runs outside any vault: environment, then the default)."""
    from ..core.config import load_config
    from ..core.vault import find_vault

    try:
        base = load_config(None)
        vault = find_vault(None, {k: v for k, v in os.environ.items() if k == "WIKIWRIGHT_VAULT"},
                           base.default_vault) if (os.environ.get("WIKIWRIGHT_VAULT") or base.default_vault) else None
    except WikiwrightError as exc:
        return None, str(exc)
    if vault is None:
        return None, "no default vault: run `wikiwright init PATH` or set WIKIWRIGHT_VAULT for the hooks"
    return str(vault.root), ""


@command("hooks")
def cmd_hooks(args: argparse.Namespace) -> int:
    from ..memory import install
    from ..memory.hooks import hook_log_path

    if args.action == "status":
        return _status(args)
    if args.kind is None:
        raise WikiwrightError(f"hooks {args.action}: name what: claude-code, git or shell")
    if args.repo and args.kind != "git":
        raise WikiwrightError(f"hooks {args.action} {args.kind}: takes no REPO argument")
    if args.project and args.kind != "claude-code":
        raise WikiwrightError("--project is for claude-code")
    if args.rc and args.kind != "shell":
        raise WikiwrightError("--rc is for shell")
    if args.shared and (args.kind != "git" or args.action != "install"):
        raise WikiwrightError("--shared is for hooks install git")
    if args.action == "install":
        bin_path = install.installed_wikiwright(args.bin)
        hook_log = hook_log_path()
        if args.kind == "claude-code":
            changes = install.install_claude_code(args.project, bin_path, hook_log)
        elif args.kind == "git":
            vault_root, _problem = _default_vault()
            changes = install.install_git(args.repo, bin_path, hook_log,
                                          None if vault_root is None else Path(vault_root), shared=args.shared)
        else:
            changes = install.install_shell(args.rc, bin_path, hook_log)
        for change in changes:
            print(change.line())
        if args.shared and any(change.detail.startswith("shared:") for change in changes):
            print("runs $WIKIWRIGHT_BIN or `wikiwright` from PATH on each machine; where it is found, a hook that "
                  f"cannot run says why in the hook log ({hook_log} here)")
        else:
            print(f"runs {bin_path}; a hook that cannot run says why in {hook_log}")
        vault_root, problem = _default_vault()
        if vault_root is None:
            print(f"warning: the hooks will find no vault yet: {problem}")
        if args.kind == "shell":
            print("open a new shell (or source the rc file) to get `wwlog`")
        return 0
    if args.kind == "claude-code":
        changes = install.uninstall_claude_code(args.project)
    elif args.kind == "git":
        changes = install.uninstall_git(args.repo)
    else:
        changes = install.uninstall_shell(args.rc)
    for change in changes:
        print(change.line())
    return 0


def _status(args: argparse.Namespace) -> int:
    from ..memory.hooks import hook_log_path, recent_hook_problems
    from ..memory.install import hook_statuses

    statuses = hook_statuses()
    vault_root, problem = _default_vault()
    problems = recent_hook_problems()
    if args.json:
        emit_json({"hooks": [s.as_dict() for s in statuses], "vault": vault_root, "vault_problem": problem,
                   "hook_log": str(hook_log_path()), "recent_problems": problems})
        return 0 if statuses and all(s.works for s in statuses) and vault_root else 1
    if not statuses:
        print("No hooks installed (wikiwright hooks install claude-code | git [REPO] | shell).")
    for status in statuses:
        verdict = "works" if status.works and vault_root else "WILL NOT WORK"
        print(f"{status.kind:<12} {status.target}: {verdict}")
        if not status.present:
            print("             its wikiwright entries are gone from the file (install again)")
        if not status.bin_ok:
            print(f"             {status.bin or 'wikiwright'} is not there (reinstall wikiwright, then install again)")
        else:
            print(f"             runs {status.bin}")
        if not status.runner_ok:
            print(f"             {status.runner} is missing (install again)")
        if status.queued:
            print(f"             {status.queued} commit(s) queued, not logged yet (logged by the next commit's hook)")
    print(f"Vault:       {vault_root or 'NONE — ' + problem}")
    print(f"Hook log:    {hook_log_path()}")
    if problems:
        print("Last problems the hooks reported:")
        for line in problems:
            print(f"  {line}")
    return 0 if statuses and all(s.works for s in statuses) and vault_root else 1
