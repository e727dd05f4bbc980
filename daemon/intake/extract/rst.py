"""reStructuredText through docutils, as the markdown the rest of the pipeline reads.

Titles and sections become ``#`` headings, lists, tables, literal blocks and definition lists
keep their shape, and every role and directive is either rendered to its text or dropped by
rule, never left raw: ``:ref:`Title <label>``` reads "Title", ``:func:`~pkg.mod.run``` reads
```run```, ``:issue:`123``` reads "#123", ``.. versionchanged:: 2.0`` reads "Changed in version
2.0: …", ``.. code-block::`` is a fenced block, ``.. toctree::``, ``.. index::`` and autodoc
directives are dropped. Sphinx is not needed: a role or directive docutils does not know gets
a generic handler (its text, or its content) instead of an error. File inclusion and raw
passthrough are off: a source never reads another file.
"""

from __future__ import annotations

import re
import threading
from typing import Any, ClassVar

from docutils import nodes
from docutils.parsers.rst import Directive, directives, roles

# Roles whose text is code (Sphinx's Python/C domains and standard roles).
_CODE_ROLES = {
    "func", "meth", "class", "attr", "mod", "obj", "data", "exc", "const", "envvar", "option", "program", "file",
    "samp", "command", "makevar", "mimetype", "regexp", "token", "keyword", "type", "member", "macro", "struct",
    "var", "enum", "enumerator", "expr", "texpr", "code", "literal", "kbd", "confval", "setting",
}
_NUMBER_ROLES = {"issue", "pr", "pull", "gh", "bug", "ghissue", "ghpull"}
_OWN_ROLES = {"ref", "doc", "pep", "rfc", "term", "abbr", "dfn", "numref", "download"}  # ours, not docutils' own
# Directives dropped whole: navigation, indexes, autodoc, settings of the renderer.
_DROPPED = {
    "toctree", "index", "highlight", "currentmodule", "module", "automodule", "autoclass", "autofunction",
    "automethod", "autoattribute", "autodata", "autoexception", "autosummary", "autoprogram", "literalinclude",
    "include", "raw", "graphviz", "inheritance-diagram", "sectionauthor", "moduleauthor",
    "codeauthor", "tabularcolumns", "default-role", "default-domain", "role", "meta", "click", "jinja",
    "testsetup", "testcleanup", "plot", "image", "figure", "todolist", "program", "py:module", "py:currentmodule",
}
_VERSIONS = {"versionadded": "New in version", "versionchanged": "Changed in version",
             "deprecated": "Deprecated since version", "versionremoved": "Removed in version"}
_CODE_DIRECTIVES = {"code-block", "sourcecode", "code", "testcode", "testoutput", "doctest", "console", "prompt"}


def _role_text(name: str, text: str) -> str:
    explicit = re.match(r"^(.*?)\s*<([^<>]+)>$", text, re.DOTALL)
    if explicit and explicit.group(1).strip():
        return " ".join(explicit.group(1).split())
    target = explicit.group(2) if explicit else text
    target = target.strip()
    if target.startswith("~"):
        target = target[1:].rsplit(".", 1)[-1]
    target = target.lstrip("!")
    if name.split(":")[-1] in _NUMBER_ROLES and target.isdigit():
        return f"#{target}"
    if name in ("pep", "rfc"):
        return f"{name.upper()} {target.split('#', 1)[0]}"
    if name == "doc":  # a document's path: its last part reads as its name ("a/index" as "a")
        parts = [part for part in target.split("/") if part]
        if len(parts) > 1 and parts[-1] == "index":
            parts.pop()
        return parts[-1] if parts else target
    return target


def _generic_role(name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: Any = None,
                  content: Any = None) -> tuple[list[Any], list[Any]]:
    short = name.split(":")[-1].lower()
    shown = _role_text(short, nodes.unescape(text))
    if short in _CODE_ROLES:
        return [nodes.literal(rawtext, shown)], []
    return [nodes.Text(shown)], []


class _Generic(Directive):
    """Any directive docutils does not know: its content is read as body text, its arguments
    (a signature, a version) shown as a leading line where they carry meaning."""

    required_arguments = 0
    optional_arguments = 100
    final_argument_whitespace = True
    has_content = True
    option_spec: ClassVar[Any] = None  # any option accepted and ignored

    def run(self) -> list[Any]:
        name = self.name.split(":")[-1].lower()
        full = self.name.lower()
        if name in _DROPPED or full in _DROPPED or name.startswith("auto"):
            return []
        argument = " ".join(" ".join(self.arguments).split())
        if name in _CODE_DIRECTIVES:
            return [nodes.literal_block("\n".join(self.content), "\n".join(self.content))] if self.content else []
        container = nodes.container()
        if self.content:
            self.state.nested_parse(self.content, self.content_offset, container)
        if name in _VERSIONS:
            # ".. versionchanged:: 2.0 text" (or the text on the next lines): the version, then prose.
            version, _, rest = argument.partition(" ")
            lead = f"{_VERSIONS[name]} {version}".strip()
            if rest:
                inline, _messages = self.state.inline_text(rest, self.lineno)
                container.insert(0, nodes.paragraph("", "", nodes.Text(lead + ": "), *inline))
            else:
                first = container.children[0] if container.children else None
                if isinstance(first, nodes.paragraph):
                    first.insert(0, nodes.Text(lead + ": "))
                else:
                    container.insert(0, nodes.paragraph("", lead + "."))
        elif argument and name in {"function", "class", "method", "attribute", "data", "exception", "decorator",
                                   "classmethod", "staticmethod", "property", "envvar", "option", "describe",
                                   "object", "type", "member", "macro", "cmdoption", "confval"}:
            container.insert(0, nodes.paragraph("", "", nodes.literal(argument, argument)))
        elif argument and name in {"seealso", "rubric", "tab", "group-tab", "topic", "card", "dropdown"}:
            container.insert(0, nodes.paragraph("", argument))
        return list(container.children)


class _Option(dict[str, Any]):
    """An option_spec that accepts every option (Sphinx directives have many)."""

    def __contains__(self, key: object) -> bool:
        return True

    def __bool__(self) -> bool:  # docutils parses options only when the spec is truthy
        return True

    def __getitem__(self, key: str) -> Any:
        return directives.unchanged


_Generic.option_spec = _Option()
_hooked = threading.Lock()
_installed: list[bool] = []


def _install_fallbacks() -> None:
    """Unknown roles and directives get the generic handlers instead of an error node."""
    with _hooked:
        if _installed:
            return
        original_role, original_directive = roles.role, directives.directive

        def role(role_name: str, language_module: Any, lineno: int, reporter: Any) -> tuple[Any, list[Any]]:
            found, messages = original_role(role_name, language_module, lineno, reporter)
            if found is None or role_name.split(":")[-1].lower() in _CODE_ROLES | _NUMBER_ROLES | _OWN_ROLES:
                return _generic_role, []
            return found, messages

        def directive(directive_name: str, language_module: Any, document: Any) -> tuple[Any, list[Any]]:
            short = directive_name.split(":")[-1].lower()
            if short in _VERSIONS or short in _CODE_DIRECTIVES or short in _DROPPED or directive_name in _DROPPED:
                return _Generic, []
            found, messages = original_directive(directive_name, language_module, document)
            return (found, messages) if found is not None else (_Generic, [])

        roles.role = role
        directives.directive = directive
        _installed.append(True)


def looks_rst(text: str) -> bool:
    """reST's own marks: directives (``.. name::``), roles (``:name:`x```), or ``::`` blocks with
    underlined titles."""
    return bool(re.search(r"^\.\. [\w:-]+::", text, re.MULTILINE)
                or re.search(r"(?<![\w`]):[\w:+-]+:`[^`]+`", text)
                or (re.search(r"::\s*$", text, re.MULTILINE) and re.search(r"^([=\-~^*#])\1{2,}\s*$", text,
                                                                             re.MULTILINE)))


_SPHINX_METADATA_RE = re.compile(
    r"\A(?:[ \t]*\n)*(?::(?:orphan|nocomments|nosearch|no-search|tocdepth|fieldlist):[^\n]*\n)+")


def rst_to_markdown(text: str) -> tuple[str, str]:
    """(markdown, document title) of reStructuredText."""
    from docutils.core import publish_doctree

    _install_fallbacks()
    settings = {
        "report_level": 5, "halt_level": 5, "warning_stream": False, "file_insertion_enabled": False,
        "raw_enabled": False, "_disable_config": True, "doctitle_xform": True, "sectsubtitle_xform": False,
        "syntax_highlight": "none", "smart_quotes": False, "input_encoding": "unicode",
    }
    # Sphinx's file-wide metadata (":orphan:", ":tocdepth: 2") opening the file is no content,
    # and left in place it keeps docutils from taking the first section's title as the document's.
    text = _SPHINX_METADATA_RE.sub("", text, count=1)
    tree = publish_doctree(text, settings_overrides=settings)
    writer = _Markdown()
    title = ""
    for child in tree.children:
        if isinstance(child, nodes.title):
            title = " ".join(child.astext().split())
            break
    lone = None if title else _lone_section(tree)
    if lone is not None:
        # The document's one section under a logo or a row of badges ("|Logo|" over "tqdm" and
        # "===="): docutils takes no title past them, but the section's is the document's.
        title = " ".join(lone.astext().split())
        writer.level = 0
    writer.block(tree)
    if not title:
        title = _declared_title(tree)
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(writer.out)).strip() + "\n"
    return body, title


def _decoration(node: Any) -> bool:
    """A node that says nothing: a comment, a target, a substitution's definition, an image, a
    paragraph of images and substitution references alone (a logo, badges)."""
    if isinstance(node, (nodes.comment, nodes.target, nodes.substitution_definition, nodes.image, nodes.raw,
                         nodes.system_message, nodes.pending, nodes.decoration)):
        return True
    if isinstance(node, nodes.paragraph):
        return all(_decoration_inline(child) for child in node.children)
    return False


def _decoration_inline(node: Any) -> bool:
    if isinstance(node, nodes.Text):
        return not str(node).strip()
    if isinstance(node, (nodes.image, nodes.substitution_reference)):
        return True
    if isinstance(node, nodes.problematic):  # "|Logo|" whose definition docutils did not apply
        return re.fullmatch(r"\|[^|]+\|_{0,2}", node.astext().strip()) is not None
    if isinstance(node, nodes.reference):  # a badge: a link around an image
        return all(_decoration_inline(child) for child in node.children)
    return False


def _lone_section(tree: nodes.document) -> Any:
    """The title node of the document's only top-level section when everything beside it is
    decoration; None otherwise."""
    sections = [child for child in tree.children if isinstance(child, nodes.section)]
    if len(sections) != 1 or not all(_decoration(c) for c in tree.children if c is not sections[0]):
        return None
    heading = sections[0].next_node(nodes.title)
    return heading if heading is not None and heading.astext().strip() else None


def _declared_title(tree: nodes.document) -> str:
    """A ``:title:`` field opening the document (the metadata of Pelican, the AWS CLI's topics
    and others), when it has no title of its own."""
    for child in tree.children[:3]:
        if isinstance(child, (nodes.docinfo, nodes.field_list)):
            for field in child.children:
                if isinstance(field, nodes.field) and len(field.children) > 1 and \
                        field.children[0].astext().strip().casefold() == "title":
                    return " ".join(field.children[1].astext().split())
    return ""


class _Markdown:
    """Walks a docutils tree and writes markdown blocks."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.level = 1

    def inline(self, node: Any) -> str:
        if isinstance(node, nodes.Text):
            return str(node).replace("\n", " ")
        if isinstance(node, nodes.literal):
            text = node.astext().replace("\n", " ")
            return f"`{text}`" if "`" not in text else f"`` {text} ``"
        if isinstance(node, nodes.strong):
            return f"**{self.inlines(node)}**"
        if isinstance(node, nodes.emphasis):
            return f"*{self.inlines(node)}*"
        if isinstance(node, (nodes.footnote_reference, nodes.citation_reference, nodes.substitution_definition,
                             nodes.target, nodes.system_message, nodes.comment, nodes.raw, nodes.image)):
            return ""
        if isinstance(node, nodes.problematic):  # never raw markup: the text inside the role
            return re.sub(r"^:[\w:+-]+:`(.*)`_?$|^`(.*)`_?$", lambda m: m.group(1) or m.group(2) or "",
                          node.astext())
        return self.inlines(node)

    def inlines(self, node: Any) -> str:
        return "".join(self.inline(child) for child in node.children)

    def emit(self, text: str, indent: str = "") -> None:
        text = text.strip("\n")
        if not text.strip():
            return
        self.out.append("\n".join(indent + line if line else line for line in text.split("\n")))
        self.out.append("")

    def block(self, node: Any, indent: str = "") -> None:
        for child in node.children:
            self.one(child, indent)

    def one(self, node: Any, indent: str = "") -> None:  # one branch per node type
        if isinstance(node, nodes.title):
            marks = "#" * min(6, self.level)
            self.emit(f"{marks} {' '.join(self.inlines(node).split())}", indent)
        elif isinstance(node, nodes.subtitle):
            self.emit(f"{'#' * min(6, self.level + 1)} {' '.join(self.inlines(node).split())}", indent)
        elif isinstance(node, nodes.section):
            self.level += 1
            self.block(node, indent)
            self.level -= 1
        elif isinstance(node, nodes.paragraph):
            self.emit(" ".join(self.inlines(node).split()), indent)
        elif isinstance(node, (nodes.literal_block, nodes.doctest_block)):
            self.emit("```\n" + node.astext() + "\n```", indent)
        elif isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
            for number, item in enumerate(node.children, start=1):
                mark = f"{number}. " if isinstance(node, nodes.enumerated_list) else "- "
                self.item(item, mark, indent)
        elif isinstance(node, nodes.definition_list):
            for item in node.children:
                term = " ".join(self.inlines(item.next_node(nodes.term)).split()) if item.next_node(nodes.term) else ""
                definition = item.next_node(nodes.definition)
                self.emit(f"**{term}**", indent)
                if definition is not None:
                    self.block(definition, indent)
        elif isinstance(node, (nodes.field_list, nodes.docinfo)):
            for field in node.children:
                if isinstance(field, nodes.field):
                    name = field.children[0].astext()
                    value = " ".join(field.children[1].astext().split()) if len(field.children) > 1 else ""
                else:  # docinfo's own elements (author, version, ...)
                    name, value = field.tagname.title(), " ".join(field.astext().split())
                self.emit(f"{name}: {value}", indent)
        elif isinstance(node, nodes.option_list):
            for item in node.children:
                options = item.children[0].astext()
                description = " ".join(item.children[1].astext().split()) if len(item.children) > 1 else ""
                self.emit(f"- `{options}`: {description}", indent)
        elif isinstance(node, nodes.table):
            self.table(node, indent)
        elif isinstance(node, nodes.Admonition):
            label = node.tagname.title() if node.tagname != "admonition" else ""
            start = len(self.out)
            self.block(node, indent)
            if label and len(self.out) > start and not self.out[start].startswith(("#", "-", "`", "|")):
                self.out[start] = f"{indent}{label}: {self.out[start].lstrip()}"
        elif isinstance(node, nodes.line_block):
            self.emit("\n".join(" ".join(line.astext().split()) for line in node.traverse(nodes.line)), indent)
        elif isinstance(node, (nodes.comment, nodes.target, nodes.substitution_definition, nodes.system_message,
                               nodes.raw, nodes.image, nodes.footnote, nodes.citation, nodes.pending,
                               nodes.decoration, nodes.meta if hasattr(nodes, "meta") else nodes.comment)):
            return
        elif isinstance(node, (nodes.Text, nodes.Inline)):
            self.emit(self.inline(node), indent)
        elif isinstance(node, nodes.figure):
            caption = node.next_node(nodes.caption)
            if caption is not None:
                self.emit(" ".join(self.inlines(caption).split()), indent)
        else:  # block_quote, container, compound, topic, sidebar, rubric...
            if isinstance(node, (nodes.rubric,)):
                self.emit(f"**{' '.join(self.inlines(node).split())}**", indent)
                return
            self.block(node, indent)

    def item(self, item: Any, mark: str, indent: str) -> None:
        start = len(self.out)
        self.block(item, indent + " " * len(mark))
        if len(self.out) > start:
            first = self.out[start]
            self.out[start] = indent + mark + first[len(indent) + len(mark):]
            # Items of one list stay together (no blank line between single-paragraph items).
            if start >= 2 and self.out[start - 1] == "" and self.out[start - 2].lstrip().startswith(
                    (mark.strip(), "- ", "1. ")) and self.out[start - 2].startswith(indent):
                del self.out[start - 1]

    def table(self, node: Any, indent: str) -> None:
        rows: list[list[str]] = []
        for row in node.traverse(nodes.row):
            rows.append([" ".join(entry.astext().split()).replace("|", "\\|") for entry in row.children])
        if not rows:
            return
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
        lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        self.emit("\n".join(lines), indent)


# -- MyST (Sphinx roles and directives inside markdown) ------------------------------------------

_MYST_ROLE_RE = re.compile(r"\{([A-Za-z][\w:+.-]*)\}`([^`\n]+)`")
_MYST_FENCE_RE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,}|:{3,})\{(?P<name>[\w:+.-]+)\}[ \t]*(?P<args>.*)$")
_ADMONITIONS = {"note", "warning", "tip", "important", "caution", "attention", "danger", "error", "hint", "seealso",
                "admonition", "todo"}


def has_myst(text: str) -> bool:
    return bool(_MYST_ROLE_RE.search(text) or re.search(r"^ {0,3}(`{3,}|:{3,})\{[\w:+.-]+\}", text, re.MULTILINE))


def _myst_roles(line: str) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1).split(":")[-1].lower()
        shown = _role_text(name, match.group(2))
        return f"`{shown}`" if name in _CODE_ROLES else shown

    return _MYST_ROLE_RE.sub(one, line)


def myst_to_markdown(text: str) -> str:
    """Markdown with MyST's roles (``{term}`x```, ``{ref}`Title <label>```, ``{doc}`path```)
    reduced to their text and its directive fences (```` ```{note} ````, ```` ```{code-block} ````,
    ```` ```{toctree} ````) turned into plain markdown or dropped, by the same rules as reST."""
    if not has_myst(text):
        return text
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    plain_fence = ""
    while i < len(lines):
        line = lines[i]
        if plain_fence:
            out.append(line)
            if line.strip().startswith(plain_fence):
                plain_fence = ""
            i += 1
            continue
        fence = _MYST_FENCE_RE.match(line)
        if fence is None:
            opening = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
            if opening:
                plain_fence = opening.group(1)
                out.append(line)
            elif re.match(r"^\([\w:.-]+\)=\s*$", line):
                pass  # a MyST target label
            else:
                out.append(_myst_roles(line))
            i += 1
            continue
        marker, name, args = fence.group("fence"), fence.group("name").lower(), fence.group("args").strip()
        body: list[str] = []
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(marker) and lines[i].strip().strip(marker[0]) == ""):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        while body and re.match(r"^:[\w-]+:", body[0]):  # directive options
            body.pop(0)
        if body and body[0].strip() == "---":  # options as a YAML block
            end = next((n for n in range(1, len(body)) if body[n].strip() == "---"), 0)
            body = body[end + 1:]
        short = name.split(":")[-1]
        if short in _DROPPED or short.startswith("auto") or name in _DROPPED:
            continue
        if short in _CODE_DIRECTIVES:
            out += ["```" + args.split(" ")[0], *body, "```"]
            continue
        if short == "eval-rst":  # reStructuredText inside markdown: read as such
            out += rst_to_markdown("\n".join(body))[0].strip("\n").split("\n")
            continue
        content = myst_to_markdown("\n".join(body)).strip("\n").split("\n") if body else []
        if short in _VERSIONS:
            version, _, rest = args.partition(" ")
            lead = f"{_VERSIONS[short]} {version}".strip()
            if rest:
                content = [f"{lead}: {_myst_roles(rest)}", *content]
            elif content:
                content = [f"{lead}: {content[0]}", *content[1:]]
            else:
                content = [f"{lead}."]
        elif short in _ADMONITIONS:
            label = args if short == "admonition" and args else short.replace("seealso", "see also").capitalize()
            if content:
                content = [f"{label}: {content[0]}", *content[1:]]
        elif args:
            content = [_myst_roles(args), "", *content]
        out += content
    return "\n".join(out)
