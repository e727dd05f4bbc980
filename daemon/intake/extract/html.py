"""HTML: the main content as markdown, without navigation, headers, footers or banners.

Tables used for page layout (old documentation sites such as the libxslt manual put the whole
page, menu and prose, in nested tables) are unwrapped first: read as a data table, the prose
would become one huge table cell that nothing downstream reads as text. A table is layout when
it nests a table, holds block content (paragraphs, headings, lists, forms) in a cell, or says
``role="presentation"``.

With the ``html`` extra installed, trafilatura (a library made for main-content extraction)
does the work; it reads the string it is given and fetches nothing. Without it, or when it
finds no main content in a small page, a standard-library parser keeps the page's structure
(headings, lists, tables, code blocks) and drops ``nav``, ``header``, ``footer``, ``aside``,
forms, scripts and styles.
"""

from __future__ import annotations

import html as htmllib
import logging
import re
from html.parser import HTMLParser
from typing import ClassVar

from .bounds import check_html_depth

log = logging.getLogger(__name__)


def trafilatura_available() -> bool:
    try:
        import trafilatura  # noqa: F401
    except ImportError:
        return False
    return True


class _Markdown(HTMLParser):
    BLOCK: ClassVar[set[str]] = {"p", "div", "section", "article", "main", "blockquote", "dl", "dd", "dt",
                                 "table", "ul", "ol", "figure", "center"}
    CHROME: ClassVar[set[str]] = {"script", "style", "noscript", "template", "svg", "head", "nav", "header",
                                  "footer", "aside", "form", "button", "select", "iframe"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False
        self._pre = 0
        self._lists: list[str] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._rows: list[list[str]] = []

    def _emit(self, text: str) -> None:
        if self._cell is not None:
            self._cell.append(text)
        else:
            self.out.append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in self.CHROME:
            self._skip += 1
            return
        if self._skip:
            return
        if tag in self.BLOCK:
            self._emit("\n\n")
        if re.fullmatch(r"h[1-6]", tag):
            self._emit("\n\n" + "#" * int(tag[1]) + " ")
        elif tag == "br":
            self._emit("\n")
        elif tag in ("ul", "ol"):
            self._lists.append(tag)
        elif tag == "li":
            indent = "  " * max(0, len(self._lists) - 1)
            self._emit("\n" + indent + ("1. " if self._lists and self._lists[-1] == "ol" else "- "))
        elif tag == "pre":
            self._pre += 1
            self._emit("\n\n```\n")
        elif tag == "code" and not self._pre:
            self._emit("`")
        elif tag in ("strong", "b"):
            self._emit("**")
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in self.CHROME:
            self._skip = max(0, self._skip - 1)
            return
        if self._skip:
            return
        if re.fullmatch(r"h[1-6]", tag):
            self._emit("\n\n")
        elif tag in ("ul", "ol"):
            if self._lists:
                self._lists.pop()
            self._emit("\n\n")
        elif tag == "pre":
            self._pre = max(0, self._pre - 1)
            self._emit("\n```\n\n")
        elif tag == "code" and not self._pre:
            self._emit("`")
        elif tag in ("strong", "b"):
            self._emit("**")
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()).replace("|", "\\|"))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._row:
                self._rows.append(self._row)
            self._row = None
        elif tag == "table":
            self._flush_table()
        if tag in self.BLOCK:
            self._emit("\n\n")

    def _flush_table(self) -> None:
        rows, self._rows = self._rows, []
        if not rows:
            return
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
        lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        self.out.append("\n\n" + "\n".join(lines) + "\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if self._skip:
            return
        if self._pre:
            self._emit(data)
        else:
            self._emit(re.sub(r"\s+", " ", data))


def _tidy(text: str) -> str:
    lines = []
    in_fence = False
    for line in text.split("\n"):
        if line.startswith("```"):
            in_fence = not in_fence
        if not in_fence:
            line = line.rstrip()
            if not re.match(r"\s+(- |1\. )", line):
                line = line.lstrip()
        lines.append(line)
    text = "\n".join(lines)
    text = re.sub(r"\n[ \t]+\n", "\n\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    text = re.sub(r"^(#{1,6}) +", r"\1 ", text, flags=re.MULTILINE)
    return text.strip()


def html_to_markdown_stdlib(markup: str) -> tuple[str, str]:
    """(markdown, <title>) with the standard library's parser."""
    check_html_depth(markup)
    parser = _Markdown()
    parser.feed(markup)
    parser.close()
    return _tidy(htmllib.unescape("".join(parser.out))), " ".join(parser.title.split())


def html_title(markup: str) -> str:
    match = re.search(r"<title[^>]*>(.*?)</title\s*>", markup[:200_000], re.IGNORECASE | re.DOTALL)
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", "", match.group(1))).split()) if match else ""


def _real_h1_only(found: str, markup: str) -> str:
    """A ``# …`` line is a level-1 heading only when the page has that ``<h1>``; otherwise it
    came from code or text ("# define file ID mapping") and is escaped."""
    h1s = {" ".join(htmllib.unescape(re.sub(r"<[^>]+>", "", m)).split()).casefold()
           for m in re.findall(r"<h1[^>]*>(.*?)</h1\s*>", markup, re.IGNORECASE | re.DOTALL)}

    def keep(match: re.Match[str]) -> str:
        text = " ".join(match.group(1).replace("\\", "").split()).strip("#").strip().casefold()
        return match.group(0) if text in h1s else "\\" + match.group(0)

    return re.sub(r"^# (.*)$", keep, found, flags=re.MULTILINE)


_LAYOUT_BLOCKS = ("p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "dl", "table", "form", "pre", "blockquote")


def unwrap_layout_tables(markup: str) -> str:
    """The page with its layout tables turned into plain blocks (data tables are kept)."""
    if "<table" not in markup.lower():
        return markup
    try:
        import lxml.html
        from lxml import etree
    except ImportError:  # pragma: no cover - lxml comes with python-docx
        return markup
    try:
        parser = lxml.html.HTMLParser(huge_tree=False, no_network=True, remove_comments=True)
        tree = lxml.html.fromstring(re.sub(r"^\s*<\?xml[^>]*>", "", markup).encode("utf-8"), parser=parser)
    except (etree.ParserError, ValueError) as exc:
        log.info("HTML not parsed for layout tables (%s)", exc)
        return markup
    changed = False
    for table in list(tree.iter("table")):
        cells = list(table.iter("td", "th"))
        layout = (table.get("role") == "presentation" or table.find(".//table") is not None
                  or any(cell.find(f".//{block}") is not None for cell in cells for block in _LAYOUT_BLOCKS))
        if not layout:
            continue
        # Only this table's own rows and cells: a data table nested inside keeps its structure.
        own = [element for element in table.iter("tbody", "thead", "tfoot", "tr", "td", "th", "caption")
               if next(element.iterancestors("table"), None) is table]
        for element in [table, *own]:
            element.tag = "div"
        changed = True
    if not changed:
        return markup
    return str(lxml.html.tostring(tree, encoding="unicode"))


_PRE_CODE_END_RE = re.compile(r"(?<!\n)(</code>\s*</pre\s*>)", re.IGNORECASE)


def html_to_markdown(markup: str) -> tuple[str, str]:
    """(main content as markdown, the page's <title>)."""
    check_html_depth(markup)  # before lxml (under trafilatura) builds and walks a tree
    title = html_title(markup)
    markup = unwrap_layout_tables(markup)
    # trafilatura writes a one-line <pre><code> as an inline code span glued to the next
    # paragraph (`fn main() {` "A more experienced …"); ended by a newline it is a code block.
    markup = _PRE_CODE_END_RE.sub("\n\\1", markup)
    if trafilatura_available():
        import trafilatura

        try:
            found = trafilatura.extract(
                markup, output_format="markdown", include_tables=True, include_formatting=True,
                include_links=False, include_images=False, include_comments=False, favor_recall=True,
                deduplicate=False,
            )
        except Exception as exc:  # a parser bug must not lose the source: fall back below
            log.warning("trafilatura could not read a page (%s); using the built-in reader", exc)
            found = None
        if found and len(found.strip()) >= 40:
            return _real_h1_only(found.strip(), markup), title
    body, parsed_title = html_to_markdown_stdlib(markup)
    return body, title or parsed_title
