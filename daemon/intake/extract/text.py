"""Text by content: decoding bytes, and giving plain text the structure it already has.

Any file whose bytes decode as text is text, whatever its name (``README.Debian``,
``LICENSE``, ``Makefile``, ``.cfg``, ``.log``). Decoding tries UTF-8 (with or without BOM),
UTF-16 (BOM or detectable), then cp1252/Latin-1. A man page rendered to text (``man -P cat``)
becomes markdown: its banner line (``LS(1)  User Commands  LS(1)``) is dropped, its section
names become ``##`` headings and its NAME line becomes the document's title.
"""

from __future__ import annotations

import re

from ...core.errors import SourceRejected

_CONTROL_RE = re.compile(r"[\x00-\x07\x0b\x0e-\x1a\x1c-\x1f\x7f-\x9f]")


def _printable_share(text: str) -> float:
    if not text:
        return 1.0
    # Counted by the regex engine, not a Python loop: a 10 MB page is read in milliseconds.
    bad = sum(1 for _ in _CONTROL_RE.finditer(text))
    return 1 - bad / len(text)


def decode_bytes(data: bytes) -> tuple[str, str]:
    """Decode text bytes; raise SourceRejected for binary or undecodable content."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="strict"), "utf-8-sig"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16"), "utf-16"
        except UnicodeDecodeError:
            raise SourceRejected("undecodable", "has a UTF-16 byte-order mark but is not valid UTF-16") from None
    if b"\x00" in data:
        # UTF-16 without a BOM: ASCII-range text leaves every other byte NUL.
        sample = data[:4096]
        even_nul = sample[0::2].count(0) / max(1, len(sample[0::2]))
        odd_nul = sample[1::2].count(0) / max(1, len(sample[1::2]))
        for share, codec in ((odd_nul, "utf-16-le"), (even_nul, "utf-16-be")):
            if share > 0.6 and len(data) % 2 == 0:
                try:
                    text = data.decode(codec)
                except UnicodeDecodeError:
                    continue
                if _printable_share(text) > 0.97:
                    return text, codec
        raise SourceRejected("binary", "contains NUL bytes: binary data, not text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        if _printable_share(text) > 0.97:
            return text, "utf-8"
        raise SourceRejected("binary", "is mostly control characters: binary data, not text")
    text = data.decode("cp1252", errors="replace")
    if "\ufffd" not in text and _printable_share(text) > 0.97:
        return text, "cp1252"
    text = data.decode("latin-1")
    if _printable_share(text) > 0.97:
        return text, "latin-1"
    raise SourceRejected("undecodable", "is neither UTF-8, UTF-16 nor Latin-1 text (binary or unknown encoding)")


# -- man pages ---------------------------------------------------------------------------------

_OVERSTRIKE_RE = re.compile(r".\x08")
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_MAN_BANNER_RE = re.compile(r"^\s*([A-Za-z0-9_.:+-]+)\(([0-9][A-Za-z0-9]*|[nlx])\)\s{2,}.*?\s{2,}\1\(\2\)\s*$")
_MAN_SECTION_RE = re.compile(r"^([A-Z][A-Z0-9 /&,-]{1,40})$")


def strip_terminal_formatting(text: str) -> str:
    """``man -P cat`` output keeps bold and underline as ``X\\bX`` and ``_\\bX`` pairs."""
    if "\x08" not in text and "\x1b" not in text:
        return text
    return _ANSI_RE.sub("", _OVERSTRIKE_RE.sub("", text))


def man_page_to_markdown(text: str) -> tuple[str, str] | None:
    """(markdown, title) for text that is a rendered man page, else None."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines[:5]) if line.strip()), None)
    if first is None:
        return None
    banner = _MAN_BANNER_RE.match(lines[first])
    if not banner:
        return None
    name, section = banner.group(1), banner.group(2)
    out: list[str] = []
    title = f"{name}({section})"
    in_name = False
    footer_re = re.compile(rf"^\S.*\s{{2,}}{re.escape(name)}\({re.escape(section)}\)\s*$", re.IGNORECASE)
    rest = lines[first + 1:]
    tag = ""
    for number, line in enumerate(rest):
        stripped = line.strip()
        if footer_re.match(line) or _MAN_BANNER_RE.match(line):
            continue  # the footer (and page banners of multi-page renderings)
        heading = _MAN_SECTION_RE.match(line.rstrip())
        if heading and not line.startswith((" ", "\t")):
            in_name = heading.group(1).strip() == "NAME"
            out += ["", f"## {heading.group(1).strip().title()}", ""]
            continue
        if in_name and stripped:
            match = re.match(r"^(.+?)\s+[-\u2010\u2013\u2014]+\s+(.+)$", stripped)
            if match and title == f"{name}({section})":
                own = match.group(1).split(",")[0].strip()  # "ls", not the banner's "LS"
                if own.casefold() == name.casefold():
                    name = own
                title = f"{name}({section}) — {match.group(2).strip()}"
        shape = _man_line_shape(rest, number)
        text = escape_tag_shapes(escape_hash_lines(stripped))  # man's indentation would read as code
        if shape == "heading":
            out += ["", f"### {text}", ""]  # a sub-heading ("   Matching Control")
            continue
        if shape == "tag":
            # A tagged paragraph ("-e PATTERNS, --regexp=PATTERNS" over its indented
            # description) is a list entry, tag first: not the opening words of a sentence.
            tag = text
            continue
        if tag:
            out += ["", f"- **{tag}**: {text}"]
            tag = ""
            continue
        out.append(text)
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip() + "\n"
    # groff breaks a long word across lines with U+2010 ("discus‐" over "sion"); the hyphen a
    # word has of its own is "-" in its output, so this one is only the break: the word is mended.
    body = _MAN_HYPHEN_BREAK_RE.sub(lambda m: "".join(g for g in m.groups() if g), body)
    return body, title


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _man_line_shape(lines: list[str], number: int) -> str:
    """"heading" for a man page's sub-heading (indented less than the text, over more indented
    lines), "tag" for a tagged paragraph's tag (a short line over its more indented
    description), '' for a line of running text. Only a line that opens a block counts."""
    line = lines[number]
    stripped = line.strip()
    if not stripped or line.startswith("\t") or len(stripped) > 60 or number + 1 >= len(lines):
        return ""
    above = lines[number - 1] if number else ""
    if above.strip() and not _MAN_SECTION_RE.match(above.rstrip()) and not (
            _indent(above) < _indent(line) and _man_line_shape(lines, number - 1) == "heading"):
        return ""  # inside a paragraph
    below = lines[number + 1]
    if not below.strip() or _indent(below) <= _indent(line):
        return ""
    if _indent(line) < 5 and not re.search(r"[.:;,]$", stripped) and not stripped.startswith("-"):
        return "heading"
    return "tag"


_MAN_HYPHEN_BREAK_RE = re.compile(r"([a-z])\u2010\n[ \t]*([a-z])|([A-Z_])\u2010\n[ \t]*([A-Z_])")


# "<I>", "<T>", "</b>" in plain text are words in brackets (a placeholder, a name), never markup:
# left as they are, a page would show "<I>" as italics. An address ("<https://…>",
# "<bug-tar@gnu.org>") is no tag either and stays for the reader to see as a link.
_TAG_SHAPED_RE = re.compile(r"<(?=/?[A-Za-z][A-Za-z0-9-]*(?:[\s/>]|$))")


def escape_tag_shapes(text: str) -> str:
    """``<`` that would open an HTML element in plain text, written ``&lt;`` (shown as ``<``)."""
    return _TAG_SHAPED_RE.sub("&lt;", text) if "<" in text else text


def escape_hash_lines(text: str) -> str:
    """``#`` at the start of a line of plain text is a comment or a shell prompt: escaped."""
    return re.sub(r"^#", r"\\#", text, flags=re.MULTILINE)


# -- setext and reStructuredText titles ---------------------------------------------------------

_UNDERLINE_RE = re.compile(r"^(=+|-+|~+|\*+|#+)\s*$")


def atx_headings(text: str) -> str:
    """Setext (``Title`` over ``=====``) and reStructuredText titles as ``#`` headings.

    The first underline character met is level 1 (an overlined title counts before it), the
    next new one level 2, and so on, as reStructuredText assigns them. Fenced code is left alone.
    """
    lines = text.split("\n")
    levels: list[str] = []
    out: list[str] = []
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        if in_fence:
            out.append(line)
            i += 1
            continue
        over = _UNDERLINE_RE.match(line)
        # Overline + title + underline (reStructuredText document title).
        if (over and i + 2 < len(lines) and lines[i + 1].strip() and _UNDERLINE_RE.match(lines[i + 2])
                and lines[i + 2].strip()[0] == line.strip()[0] and len(line.strip()) >= len(lines[i + 1].strip()) - 2
                and len(line.strip()) >= 3):
            key = "over" + line.strip()[0]
            title = lines[i + 1].strip()
            if key not in levels:
                levels.append(key)
            out.append("#" * min(6, levels.index(key) + 1) + " " + title)
            i += 3
            continue
        if (i + 1 < len(lines) and line.strip() and not line.startswith(("#", " ", "\t", "-", "*", "|", ">"))
                and _UNDERLINE_RE.match(lines[i + 1]) and len(lines[i + 1].strip()) >= 3
                and len(lines[i + 1].strip()) >= len(line.strip()) - 2 and len(line.strip()) <= 100
                and (i == 0 or not lines[i - 1].strip())):
            key = lines[i + 1].strip()[0]
            if key not in levels:
                levels.append(key)
            out.append("#" * min(6, levels.index(key) + 1) + " " + line.strip())
            i += 2
            continue
        out.append(line)
        i += 1
    return "\n".join(out)
