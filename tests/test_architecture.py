"""The rules docs/DESIGN.md states about the shape of the code, checked by reading the source.

Each rule is read from the package's syntax trees (``ast``), not from what a run happens to
touch, so a module that breaks one fails here before any behaviour shows it:

- the room order (§3): a module imports only from its own room or one upstream, no cycle;
- git (§3, the vcs/ row): nothing outside ``vcs/`` starts git or runs a raw command on a
  ``GitRepo``; the questions others ask are named functions in ``vcs/queries.py``;
- the databases (§1, rule 15): only the modules that own state.db, catalog.db, terms.db and
  llm.db connect to them, through ``core/sqlitedb.py``, the one place ``sqlite3.connect`` runs;
- the vault context (§3, rule 15): only ``runtime/context.py`` makes the process's parts (the
  ledger, review store, catalogue, term index, cost ledger, repository and door), besides the
  module that defines each one; every job and command takes them from the context;
- the door (rule 4): no module outside the door writes a file anywhere but through a short,
  justified list of writers of other places (raw/ drops, daily logs, the daemon's own state);
- the vault (§1): the ``.wikiwright/`` list in DESIGN.md names exactly the files the code keeps there.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from tests.helpers import REPO_ROOT

PACKAGE = REPO_ROOT / "daemon"
DESIGN = REPO_ROOT / "docs" / "DESIGN.md"


@dataclass(frozen=True)
class Module:
    rel: str  # path under daemon/, e.g. "door/sync.py"
    tree: ast.Module
    source: str


@cache
def modules() -> tuple[Module, ...]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        found.append(Module(path.relative_to(PACKAGE).as_posix(), ast.parse(source), source))
    return tuple(found)


def _functions(tree: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """(qualified name of the innermost function or class around it, node) for every node."""
    def walk(node: ast.AST, scope: tuple[str, ...]) -> Iterator[tuple[str, ast.AST]]:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = (*scope, child.name)
            yield ".".join(inner), child
            yield from walk(child, inner)
    yield from walk(tree, ())


def _dotted(node: ast.AST) -> str:
    """``self.repo.run`` for an attribute chain of names; "" for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


# -- room order (§3) ---------------------------------------------------------------------------

ROOMS = ["core", "vcs", "intake", "wiki", "door", "ingest", "upkeep", "memory", "history", "query", "runtime",
         "cli"]


def _room_imports(found: tuple[Module, ...] | None = None) -> dict[tuple[str, str], set[str]]:
    """(room, module) -> rooms it imports (relative imports, at any depth in the module)."""
    rooms: dict[tuple[str, str], set[str]] = {}
    for module in found if found is not None else modules():
        parts = module.rel.split("/")
        if len(parts) < 2:
            continue  # daemon/__init__.py, __main__.py: the package itself, not a room
        room, depth = parts[0], len(parts) - 1
        targets: set[str] = set()
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                if node.level == depth + 1 and node.module:  # from ..room.x import …
                    targets.add(node.module.split(".")[0])
                elif node.level == depth and node.level >= 1:  # from .x import … (same room)
                    targets.add(room)
        rooms[(room, module.rel)] = targets - {room}
    return rooms


def room_order_problems(found: tuple[Module, ...] | None = None) -> list[str]:
    imports = _room_imports(found)
    bad = [f"{module} imports {target}" for (room, module), targets in imports.items()
           for target in targets if target in ROOMS and room in ROOMS and ROOMS.index(target) > ROOMS.index(room)]
    unknown = sorted({room for room, _ in imports} - set(ROOMS))
    return [*(f"folder {room}/ is not a room in the order" for room in unknown), *bad]


def test_no_room_imports_a_room_downstream_of_it() -> None:
    problems = room_order_problems()
    assert not problems, "imports against the room order (core → … → cli):\n" + "\n".join(problems)


def test_no_import_cycle_between_rooms() -> None:
    edges: dict[str, set[str]] = {}
    for (room, _), targets in _room_imports().items():
        edges.setdefault(room, set()).update(t for t in targets if t in ROOMS)
    seen: dict[str, int] = {}

    def visit(room: str, path: list[str]) -> None:
        if seen.get(room) == 1:
            raise AssertionError("import cycle between rooms: " + " → ".join([*path, room]))
        if seen.get(room) == 2:
            return
        seen[room] = 1
        for nxt in sorted(edges.get(room, ())):
            visit(nxt, [*path, room])
        seen[room] = 2

    for room in sorted(edges):
        visit(room, [])


def test_only_the_door_commits_or_writes_pages() -> None:
    """Nothing outside daemon/door/ and daemon/vcs/ runs a commit or writes index.md/log.md/pages."""
    offenders = []
    pattern = re.compile(r"\.commit_(paths|contents|blobs)\(|\bcommit_person_edits\(|[\"']commit[\"'], \"-|"
                         r"commit-tree|update-ref|(?<![.\w])(rebuild_index|append_log)\(")
    for module in modules():
        if module.rel.startswith(("door/", "vcs/")):
            continue
        for number, line in enumerate(module.source.splitlines(), start=1):
            if pattern.search(line) and not line.lstrip().startswith("#"):
                offenders.append(f"{module.rel}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


# -- git only through vcs/ ---------------------------------------------------------------------

# Modules outside vcs/ still allowed to run git themselves, each with why.
GIT_OUTSIDE_VCS = {
    # Not the vault's repository: the person's project repositories where hooks are installed.
    "memory/install.py": "git -C <project> to find where a project's git hooks go",
    "memory/hooks.py": "git -C <project> read by the hook scripts about the person's own commits",
}
_REPO_NAMES = {"repo", "_repo", "git_repo"}


def git_problems(found: tuple[Module, ...] | None = None) -> list[str]:
    """Places outside vcs/ that start git: a command line beginning with "git", a ``.run(`` on
    a repository, the raw runners of vcs/ (``git_status``, GitPython's ``_git``)."""
    problems = []
    for module in found if found is not None else modules():
        if module.rel.startswith("vcs/") or module.rel in GIT_OUTSIDE_VCS:
            continue
        for _scope, node in _functions(module.tree):
            where = f"{module.rel}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, (ast.List, ast.Tuple)) and len(node.elts) >= 2 and \
                    isinstance(node.elts[0], ast.Constant) and node.elts[0].value == "git":
                problems.append(f"{where}: a git command line")
            elif isinstance(node, ast.Call):
                name = _dotted(node.func)
                if name.endswith((".run", "._run")) and name.split(".")[-2] in _REPO_NAMES:
                    problems.append(f"{where}: {name}(...) runs a raw git command")
                elif name.split(".")[-1] == "git_status":
                    problems.append(f"{where}: git_status(...) runs a raw git command")
            elif isinstance(node, ast.Attribute) and node.attr == "_git":
                problems.append(f"{where}: GitPython's command object")
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("repo") and \
                    any(alias.name == "git_status" for alias in node.names):
                problems.append(f"{where}: imports git_status")
    return problems


def test_nothing_outside_vcs_runs_git() -> None:
    problems = git_problems()
    assert not problems, "git outside daemon/vcs/ (ask it through vcs/queries.py):\n" + "\n".join(problems)


# -- the databases -----------------------------------------------------------------------------

SQLITE_OPENER = "core/sqlitedb.py"  # the one sqlite3.connect: schema versions, migrations, WAL
# module -> the database it keeps (its schema and its connection, opened through core/sqlitedb.py)
DATABASE_OWNERS = {
    "intake/ledger.py": "state.db: the queue and the source ledger (the connection others share)",
    "wiki/reviewfile.py": "state.db: the review store's tables (on the ledger's connection)",
    "upkeep/doctor.py": "state.db: doctor's incremental state (its tables, on the ledger's connection)",
    "wiki/catalog.py": "catalog.db",
    "ingest/terms.py": "terms.db",
    "ingest/llm.py": "llm.db",
}
_OPENERS = {"open_db", "migrate", "migrate_on", "recorded_versions"}
# Owners of a table group on another owner's connection: they bring their tables to their
# version on it (migrate_on) and open no connection of their own.
ON_SHARED_CONNECTION = {"upkeep/doctor.py"}


def database_problems(found: tuple[Module, ...] | None = None) -> list[str]:
    problems = []
    for module in found if found is not None else modules():
        if module.rel == SQLITE_OPENER:
            continue
        sqlite_names = {"sqlite3"}
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                sqlite_names |= {alias.asname or alias.name for alias in node.names if alias.name == "sqlite3"}
            elif isinstance(node, ast.ImportFrom) and node.module == "sqlite3":
                problems += [f"{module.rel}:{node.lineno}: imports {alias.name} from sqlite3"
                             for alias in node.names if alias.name == "connect"]
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.Call):
                continue
            name = _dotted(node.func)
            if name in {f"{alias}.connect" for alias in sqlite_names}:
                problems.append(f"{module.rel}:{node.lineno}: sqlite3.connect outside {SQLITE_OPENER}")
            elif name.split(".")[-1] in _OPENERS and module.rel not in DATABASE_OWNERS:
                problems.append(f"{module.rel}:{node.lineno}: {name}(...) opens a database it does not own")
            elif name.split(".")[-1] in _OPENERS - {"migrate_on"} and module.rel in ON_SHARED_CONNECTION:
                problems.append(f"{module.rel}:{node.lineno}: {name}(...) opens a connection of its own")
    return problems


def test_only_the_owners_connect_to_the_vault_databases() -> None:
    problems = database_problems()
    assert not problems, "database connections outside their owners:\n" + "\n".join(problems)


# -- the process's parts: made by the vault context ------------------------------------------------

THE_CONTEXT = "runtime/context.py"
# A part of the process -> the module that defines it and where in it the part may be made (its
# own class, or the factory that opens it): nowhere else, not even elsewhere in that module.
PARTS = {
    "Ledger": ("intake/ledger.py", "Ledger"),  # the one connection to state.db
    "ReviewStore": ("wiki/reviewfile.py", "ReviewStore"),  # ReviewStore.on(ledger): on that connection
    "Catalog": ("wiki/catalog.py", "Catalog"),
    "TermIndex": ("ingest/terms.py", "open_term_index"),
    "open_term_index": ("ingest/terms.py", "open_term_index"),
    "CostLedger": ("ingest/llm.py", "cost_ledger"),
    "cost_ledger": ("ingest/llm.py", "cost_ledger"),
    "GitRepo": ("vcs/repo.py", "GitRepo"),
    "Door": ("door/door.py", "Door"),
    "Door.open": ("door/door.py", "Door"),  # the one recovery, on the context's parts
}
# (module, function) outside the context that makes parts itself, each with why.
PARTS_MADE_ELSEWHERE = {
    ("door/init.py", "init_vault"): "vault creation: before it there is no vault (folder, state folder, config, "
                                    "repository) for a context to open; its parts live for the one init operation",
}


def part_problems(found: tuple[Module, ...] | None = None) -> list[str]:
    """Calls that make one of the process's parts outside the vault context, the part's own
    module and the listed exceptions (a job or command opening its own connection)."""
    problems = []
    for module in found if found is not None else modules():
        if module.rel == THE_CONTEXT:
            continue
        for scope, node in _functions(module.tree):
            if not isinstance(node, ast.Call):
                continue
            dotted = _dotted(node.func).split(".")
            name = ".".join(dotted[-2:]) if dotted[-2:] == ["Door", "open"] else dotted[-1]
            if name not in PARTS:
                continue
            owner, where = PARTS[name]
            if module.rel == owner and (scope == where or scope.startswith(where + ".")):
                continue
            if any(module.rel == rel and (scope == where or scope.startswith(where + "."))
                   for rel, where in PARTS_MADE_ELSEWHERE):
                continue
            problems.append(f"{module.rel}:{node.lineno}: {scope or '<module>'}: {name}(...)")
    return problems


def test_only_the_vault_context_makes_the_process_s_parts() -> None:
    problems = part_problems()
    assert not problems, ("parts made outside the vault context (take the context's: a job gets them as "
                          "parameters):\n" + "\n".join(problems))


def test_every_listed_maker_of_parts_still_makes_them() -> None:
    """An exception listed for a function that no longer makes a part is a stale one."""
    making = {(module.rel, scope) for module in modules() for scope, node in _functions(module.tree)
              if isinstance(node, ast.Call) and (_dotted(node.func).split(".")[-1] in PARTS
                                                 or _dotted(node.func).endswith("Door.open"))}
    assert set(PARTS_MADE_ELSEWHERE) <= making, sorted(set(PARTS_MADE_ELSEWHERE) - making)


# -- no write to wiki/ or REVIEW.md outside the door --------------------------------------------

WRITING_ROOMS = ("door/", "vcs/")  # the door; git's objects, index and scratch files
WRITING_MODULES = {"core/fsutil.py": "the atomic writes and the compare-and-swap every writer uses"}
# (module, function) -> what it writes. None of their writes may name wiki/ or REVIEW.md
# (checked below), but for the REVIEW.md writer.
WRITERS_ELSEWHERE = {
    ("intake/drop.py", "drop_into_raw"): "a file a person hands to `ingest` (or an MCP note), copied into raw/",
    ("core/config.py", "record_default_vault"): "the user's config file (the default vault)",
    ("core/locks.py", "vault_write_lock"): ".wikiwright/write.lock",
    ("core/obsidian.py", "write_ignore_filters"): ".obsidian/app.json",
    ("core/vault.py", "VaultLock.try_acquire"): ".wikiwright/daemon.lock",
    ("ingest/notes.py", "StateNotes.apply_journaled"): ".wikiwright/held/ and normalised/, the door's notes sink",
    ("ingest/terms.py", "open_term_index"): "a damaged terms.db moved aside",
    ("memory/dailylog.py", "append_session"): "logs/ (O_APPEND under a lock)",
    ("memory/gate.py", "ConsolidationLock._guarded"): ".wikiwright/consolidation-lock.guard",
    ("memory/gate.py", "ConsolidationLock.acquire"): ".wikiwright/consolidation-lock",
    ("memory/gate.py", "ConsolidationLock.release"): ".wikiwright/consolidation-lock",
    ("memory/hooks.py", "_session_state"): "the hook's session state in .wikiwright/hooks/",
    ("memory/hooks.py", "_queue_lock"): "the hook queue's lock in the project's .git",
    ("memory/hooks.py", "_drain_once"): "the hook queue in the project's .git",
    ("memory/hooks.py", "record_hook_problem"): "the hook problem log",
    ("memory/hooks.py", "_prune_state"): "old hook session state in .wikiwright/hooks/",
    ("memory/hooks.py", "read_queue"): "the hook queue in the project's .git (events taken)",
    ("memory/hooks.py", "release_drain_flag"): "the hook queue's drain flag in the project's .git",
    ("memory/install.py", "_write_runner"): "the hook runner script",
    ("memory/install.py", "_save_manifest"): "the hook install manifest",
    ("memory/install.py", "_backup"): "a backup of a hook file it replaces",
    ("memory/install.py", "_install_file"): "a hook file (git hook, shell rc, agent settings)",
    ("memory/install.py", "_uninstall_file"): "a hook file put back",
    ("runtime/control.py", "ControlServer.start"): ".wikiwright/control.sock, a dead daemon's removed",
    ("runtime/control.py", "ControlServer.stop"): ".wikiwright/control.sock",
    ("runtime/daemon.py", "Daemon.write_heartbeat"): ".wikiwright/heartbeat.json",
    ("runtime/evaluate.py", "_tell"): "an eval's sources dropped into its own scratch vault's raw/",
    ("runtime/service.py", "ServiceManager.install"): "the systemd/launchd service file",
    ("runtime/service.py", "ServiceManager.uninstall"): "the service file removed",
    ("upkeep/doctor.py", "sweep_own_temp_files"): "the daemon's leftover temp files (its own marker only)",
}
# (``touch`` is left out: intake's StabilityTracker.touch is no file write, and an empty file
# created or an mtime moved changes no page's text.)
_WRITE_METHODS = {"write_text", "write_bytes", "unlink", "rmdir", "symlink_to", "hardlink_to"}
_WRITE_FUNCTIONS = {"atomic_replace_if", "atomic_write", "atomic_write_text", "atomic_write_bytes"}
_MOVES = {"os.replace", "os.rename", "os.remove", "os.unlink", "os.rmdir", "os.link", "os.symlink",
          "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.move", "shutil.copytree", "shutil.rmtree"}
_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
# What names the page folder or REVIEW.md in a writer's body.
_WIKI_NAMES = re.compile(r"\b(wiki|wiki_path|sources_dir|review_file|review_path)\b|REVIEW\.md|[\"']wiki/")


def _mode(call: ast.Call) -> str:
    arg = call.args[1] if len(call.args) >= 2 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else ""


def _write_kind(call: ast.Call) -> str:
    """What kind of file write ``call`` is ("" when none)."""
    name = _dotted(call.func)
    last = name.rsplit(".", 1)[-1] if name else getattr(call.func, "attr", "")
    if name in _MOVES:
        return name
    if name == "open" or (isinstance(call.func, ast.Attribute) and call.func.attr == "open" and name != "os.open"):
        mode = _mode(call) if name == "open" else next(
            (a.value for a in call.args[:1] if isinstance(a, ast.Constant) and isinstance(a.value, str)), "")
        return "open for writing" if set(mode) & set("wax+") else ""
    if name == "os.open":
        flags = {n.attr for arg in call.args[1:2] for n in ast.walk(arg) if isinstance(n, ast.Attribute)}
        return "os.open for writing" if flags & _WRITE_FLAGS else ""
    if last in _WRITE_FUNCTIONS:
        return last
    if isinstance(call.func, ast.Attribute) and last in _WRITE_METHODS:
        return f".{last}()"
    if isinstance(call.func, ast.Attribute) and last in ("replace", "rename") and len(call.args) == 1 \
            and not call.keywords:
        return f".{last}() (a move)"  # Path.replace/rename; str.replace takes two arguments
    return ""


def write_problems(found: tuple[Module, ...] | None = None) -> list[str]:
    """File writes outside the door and the listed writers; listed writers' writes whose target
    names wiki/ or REVIEW.md (the door is REVIEW.md's one writer too)."""
    problems = []
    for module in found if found is not None else modules():
        if module.rel.startswith(WRITING_ROOMS) or module.rel in WRITING_MODULES:
            continue
        for scope, node in _functions(module.tree):
            if not isinstance(node, ast.Call) or not (kind := _write_kind(node)):
                continue
            where = f"{module.rel}:{node.lineno}: {scope or '<module>'}"
            if (module.rel, scope) not in WRITERS_ELSEWHERE:
                problems.append(f"{where}: {kind}")
            elif _WIKI_NAMES.search(ast.get_source_segment(module.source, node) or ""):
                problems.append(f"{where}: {kind} of a file under wiki/ or REVIEW.md")
    return problems


def test_every_listed_writer_still_writes() -> None:
    """A writer listed for a function that no longer writes (or exists) is a stale exception."""
    writing = {(module.rel, scope) for module in modules() for scope, node in _functions(module.tree)
               if isinstance(node, ast.Call) and _write_kind(node)}
    assert set(WRITERS_ELSEWHERE) <= writing, sorted(set(WRITERS_ELSEWHERE) - writing)


def test_no_file_write_outside_the_door_but_the_listed_writers() -> None:
    """Every file write outside door/ and vcs/ is one of the writers listed, with what it
    writes; none of those names wiki/ or REVIEW.md (so a page or REVIEW.md changes only through
    the door's compare-and-swap, one commit per operation)."""
    problems = write_problems()
    assert not problems, "file writes outside the door (through the door, or list it with what it writes):\n" + \
        "\n".join(problems)


# -- the .wikiwright/ files ---------------------------------------------------------------------

# Expressions that are the vault's state folder in a module where the structure shows no
# ``.wikiwright``: a database file's own folder is it (every database is kept there).
STATE_DIR_ALIASES = {("core/sqlitedb.py", "path.parent"), ("core/vault.py", "self.state")}
_STATE_NAMES = {"state_dir", "state_folder"}


@cache
def _constants() -> dict[str, dict[str, str]]:
    """module -> its module-level string constants (``NAME = "x"``), imported ones included."""
    own: dict[str, dict[str, str]] = {}
    for module in modules():
        values: dict[str, str] = {}
        for node in module.tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                    isinstance(node.value.value, str):
                values.update({t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)})
        own[module.rel] = values
    merged = {rel: dict(values) for rel, values in own.items()}
    for module in modules():
        folder = module.rel.rsplit("/", 1)[0] if "/" in module.rel else ""
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ImportFrom) and node.level and node.module:
                base = folder.split("/") if folder else []
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                source = "/".join([*base, *node.module.split(".")]) + ".py"
                for alias in node.names:
                    if alias.name in own.get(source, {}):
                        merged[module.rel][alias.asname or alias.name] = own[source][alias.name]
    return merged


def _is_state_dir(rel: str, node: ast.AST, constants: dict[str, str]) -> bool:
    name = _dotted(node)
    if (rel, name) in STATE_DIR_ALIASES or name.split(".")[-1] in _STATE_NAMES:
        return True
    if name.endswith("vault.state"):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _name_of(node.right, constants) == ".wikiwright"
    return False


def _name_of(node: ast.AST, constants: dict[str, str]) -> str | None:
    """The file name an operand of ``/`` stands for (``*`` for a formatted part), None if unknown."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "*" for v in node.values)
    return None


def state_names_in_code(found: tuple[Module, ...] | None = None) -> set[str]:
    """The top-level names the code keeps under .wikiwright/ (``x/`` for a folder it makes)."""
    names: set[str] = set()
    consts = _constants()
    for module in found if found is not None else modules():
        constants = consts.get(module.rel, {})
        for node in ast.walk(module.tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and \
                    _is_state_dir(module.rel, node.left, constants):
                name = _name_of(node.right, constants)
                if name and name != ".wikiwright":
                    names.add(name.split("/", 1)[0])
    return names


def state_names_in_design(text: str | None = None) -> set[str]:
    """The names DESIGN.md §1 lists under ``.wikiwright/`` (one per line, deeper indented; a
    folder's trailing ``/`` dropped, as the code's names have none)."""
    lines = (text if text is not None else DESIGN.read_text(encoding="utf-8")).splitlines()
    start = next(n for n, line in enumerate(lines) if line.strip().startswith(".wikiwright/"))
    indent = len(lines[start]) - len(lines[start].lstrip())
    names = set()
    for line in lines[start + 1:]:
        if not line.strip() or line.strip().startswith("```"):
            break
        depth = len(line) - len(line.lstrip())
        if depth <= indent:
            break
        if depth == indent + 2:  # a name; deeper lines continue a description
            names.add(line.split()[0].rstrip("/"))
    return names


def test_the_wikiwright_folder_listed_in_design_is_what_the_code_keeps_there() -> None:
    in_code, in_design = state_names_in_code(), state_names_in_design()
    assert in_code == in_design, (f"in the code, not in DESIGN.md §1: {sorted(in_code - in_design)}; "
                                  f"in DESIGN.md §1, not in the code: {sorted(in_design - in_code)}")


# -- each check catches what it is for -----------------------------------------------------------
# A rule that cannot fail checks nothing: each checker is run on a small module that breaks it.

def _module(rel: str, source: str) -> Module:
    text = textwrap.dedent(source)
    return Module(rel, ast.parse(text), text)


def test_each_check_fails_on_a_module_that_breaks_its_rule() -> None:
    assert room_order_problems((_module("core/bad.py", "from ..door import Door\n"),)) == \
        ["core/bad.py imports door"]
    git_calls = _module("upkeep/bad.py", """
        import subprocess
        from ..vcs.repo import git_status
        def f(self, repo):
            self.repo.run("rev-list", "--all")
            repo.run("ls-files")
            subprocess.run(["git", "log"])
            git_status(repo, "merge-base")
    """)
    assert len(git_problems((git_calls,))) == 5, git_problems((git_calls,))
    databases = _module("query/bad.py", """
        import sqlite3 as lite
        from ..core.sqlitedb import open_db
        def f(vault, schema):
            lite.connect(vault.state / "state.db")
            open_db(vault.state / "catalog.db", schema)
    """)
    assert len(database_problems((databases,))) == 2, database_problems((databases,))
    doctor = _module("upkeep/doctor.py", """
        def f(ledger, vault, schema):
            migrate_on(ledger.shared_connection()[0], ledger.path, schema)
            return open_db(vault.db_path, schema)
    """)
    assert database_problems((doctor,)) == ["upkeep/doctor.py:4: open_db(...) opens a connection of its own"]
    own_parts = _module("upkeep/bad.py", """
        from ..intake.ledger import Ledger
        from ..vcs.repo import GitRepo
        from ..wiki import reviewfile
        def f(config, vault, ledger):
            store = reviewfile.ReviewStore.on(ledger)  # the ledger's connection: allowed
            return (Ledger(vault.db_path), GitRepo(vault.root), reviewfile.ReviewStore(vault.db_path),
                    open_term_index(vault.state), cost_ledger(vault), Door.open(config, vault), Door(config))
    """)
    assert [p.rsplit(": ", 1)[1] for p in part_problems((own_parts,))] == [
        "Ledger(...)", "GitRepo(...)", "ReviewStore(...)", "open_term_index(...)", "cost_ledger(...)",
        "Door.open(...)", "Door(...)"], \
        part_problems((own_parts,))
    assert part_problems((_module("runtime/context.py", own_parts.source),)) == []
    in_owner = _module("ingest/llm.py", """
        def cost_ledger(vault):
            return CostLedger(vault.state / "llm.db")
        class LLMClient:
            def __init__(self, vault):
                self.costs = cost_ledger(vault)  # its own: not the process's
    """)
    assert part_problems((in_owner,)) == ["ingest/llm.py:6: LLMClient.__init__: cost_ledger(...)"]
    writes = _module("upkeep/bad.py", """
        import os
        def f(vault, text):
            (vault.wiki / "x.md").write_text(text)
            open(vault.review_file, "a").write(text)
            os.replace("tmp", vault.wiki / "y.md")
            fd = os.open("z", os.O_WRONLY | os.O_CREAT)
            text.replace("a", "b")  # a string's replace: no write
    """)
    assert len(write_problems((writes,))) == 4, write_problems((writes,))
    listed = _module("intake/drop.py", """
        def drop_into_raw(vault, text):
            atomic_write_bytes(vault.wiki_path("note.md"), text)
    """)
    assert write_problems((listed,)) == \
        ["intake/drop.py:3: drop_into_raw: atomic_write_bytes of a file under wiki/ or REVIEW.md"]
    kept = _module("runtime/bad.py", """
        def f(vault, name):
            return vault.state / "secret.json", vault.root / ".wikiwright" / f"{name}.tmp"
    """)
    assert state_names_in_code((kept,)) == {"secret.json", "*.tmp"}
    design = DESIGN.read_text(encoding="utf-8")
    assert "    heartbeat.json" in design
    assert state_names_in_design(design.replace("    heartbeat.json ", "    beat.json      ")) == \
        state_names_in_design() - {"heartbeat.json"} | {"beat.json"}
