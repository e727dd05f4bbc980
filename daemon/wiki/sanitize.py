"""The one sanitizer for everything written into a page, from a model reply or from a source.

The vault is opened by Obsidian, which renders HTML inside markdown, fetches remote images and
resolves ``![[embeds]]``. So text from outside (a dropped file, a model reply) is cleaned here
before it becomes page text, whichever engine produced it:

- HTML goes through nh3 (the ammonia allow-list sanitizer): only harmless formatting tags and
  attributes survive; no script, style, iframe, object, embed, video, audio, form or base; no
  event handlers; no ``javascript:``/``vbscript:``/``data:`` URLs.
- Markdown links and images: a dangerous scheme removes the link (its text stays); a remote
  image (http, https, ``//host``) becomes a plain link unless ``pages.allow_remote_images``;
  a local image or embed must stay inside the vault.
- ``![[…]]`` embeds only of vault-relative names.
- Anything else that looks like a tag but is no HTML element — ``<newbase>``, an address
  ``<name@host>``, a generic ``List<T>``, ``<test_class.Instance>``, an autolink — is *escaped*
  (``&lt;``), so it shows as written: a person's or a source's text is never deleted for
  looking like markup, and an escape is not a change worth a note.
- Code (fenced blocks, inline spans) is text to Obsidian and is kept byte for byte.
- One-line values (titles, summaries, aliases, key points, claim values) are put on one line
  with control characters escaped, so a value cannot add lines, headings or front matter.

Every change is reported (:class:`Cleaned.notes`): a caller either applies the cleaned text
and says what was cleaned, or holds the value back for REVIEW.md with those reasons. Nothing is
removed silently.
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass, field
from html.parser import HTMLParser

import nh3

from ..core.logsetup import escape_controls

# Tags a page may carry (nh3's defaults, which already exclude every active element).
ALLOWED_TAGS = frozenset(nh3.ALLOWED_TAGS) - {"area", "map"}
ALLOWED_ATTRIBUTES = {tag: set(attrs) for tag, attrs in nh3.ALLOWED_ATTRIBUTES.items()}
ALLOWED_ATTRIBUTES.setdefault("*", set()).update({"title", "lang", "dir"})
LINK_SCHEMES = frozenset({"http", "https", "mailto", "obsidian"})
# Never anywhere: script runners and inline payloads.
BLOCKED_SCHEMES = frozenset({"javascript", "vbscript", "data", "file", "livescript", "mocha"})

_FENCE_RE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^[ ]{0,3}\1[`~]*[ \t]*$|\Z)", re.DOTALL | re.MULTILINE)
# A code span as CommonMark reads it: a run of backticks up to the next run of as many (so
# ``` `` a `b` c `` ``` is one span), on one line.
INLINE_CODE_RE = re.compile(r"(?<!`)(`+)(?!`)[^\n]*?(?<!`)\1(?!`)")
_TAG_START_RE = re.compile(r"<(?=[A-Za-z/!?])")
# [text](dest "title") and ![alt](dest); dest may be <bracketed>; whitespace/newlines allowed.
_MD_LINK_RE = re.compile(r"(!?)\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
                         r"((?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*)\)")
_REF_DEF_RE = re.compile(r"^([ ]{0,3}\[[^\]\n]+\]:[ \t]*)(<[^>\n]*>|\S+)(.*)$", re.MULTILINE)
_EMBED_RE = re.compile(r"!\[\[([^\]\n]*)\]\]")
_SCHEME_RE = re.compile(r"^([a-z][a-z0-9+.\-]*):")
_INVISIBLE_RE = re.compile(r"[\x00-\x20\x7f-\x9f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff]")
_LINE_BREAKS_RE = re.compile(r"[\r\n\u2028\u2029\x0b\x0c\x85]+")


@dataclass
class Cleaned:
    text: str
    notes: list[str] = field(default_factory=list)  # what was changed, for people

    @property
    def changed(self) -> bool:
        return bool(self.notes)


def _decoded_url(raw: str) -> str:
    """A URL as a browser reads it: entities decoded, invisible characters gone, lower case."""
    url = raw.strip()
    if url.startswith("<") and url.endswith(">"):
        url = url[1:-1]
    url = _INVISIBLE_RE.sub("", html.unescape(url)).strip()
    if url.startswith("<") and url.endswith(">"):  # ``(&lt;data:…>)``: the escaped form of ``(<data:…>)``
        url = url[1:-1].strip()
    return url.casefold()


def url_scheme(raw: str) -> str:
    match = _SCHEME_RE.match(_decoded_url(raw))
    return match.group(1) if match else ""


def is_remote(raw: str) -> bool:
    url = _decoded_url(raw).replace("\\", "/")
    return url.startswith("//") or url_scheme(raw) not in ("", )


def inside_vault(raw: str) -> bool:
    """A relative reference that cannot leave the vault (no scheme, no root, no ``..``) nor reach
    into a hidden folder or file (``.git/config``, ``.obsidian/…``, ``.env``: never page material)."""
    url = _decoded_url(raw).replace("\\", "/")
    if not url or url.startswith(("/", "~")) or url_scheme(raw) or ":" in url.split("/", 1)[0]:
        return False
    return not any(part.startswith(".") and part != "." for part in url.split("/"))


def _short(text: str, limit: int = 60) -> str:
    """A quoted fragment for a note, inert: notes are written into pages and REVIEW.md too."""
    text = escape_controls(text)
    return code_span(text if len(text) <= limit else text[: limit - 1] + "…")


# -- HTML --------------------------------------------------------------------------------------

class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, frozenset[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, frozenset(name for name, _ in attrs)))

    handle_startendtag = handle_starttag


def _tags_of(fragment: str) -> list[tuple[str, frozenset[str]]]:
    parser = _Tags()
    parser.feed(fragment)
    parser.close()
    return parser.found


_IMG_TAG_RE = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
_ATTR_RE = re.compile(r"""\b(src|alt)\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)""", re.IGNORECASE)


def _remote_img_to_link(fragment: str, allow_remote: bool, notes: list[str]) -> str:
    def swap(match: re.Match[str]) -> str:
        attrs = {k.lower(): v.strip("\"'") for k, v in _ATTR_RE.findall(match.group(0))}
        src = attrs.get("src", "")
        if not src or not is_remote(src) or url_scheme(src) in BLOCKED_SCHEMES:
            return match.group(0)
        if allow_remote and url_scheme(src) in ("http", "https", ""):
            return match.group(0)
        notes.append(f"a remote image ({_short(src)}) became a plain link (pages.allow_remote_images is off)")
        alt = attrs.get("alt", "").replace("[", "(").replace("]", ")") or "image"
        return f"[{alt}]({html.unescape(src).replace(' ', '%20').replace(')', '%29')})"

    return _IMG_TAG_RE.sub(swap, fragment)


def _attribute_filter(allow_remote: bool) -> object:
    def keep(tag: str, attribute: str, value: str) -> str | None:
        remote_ok = allow_remote and url_scheme(value) in ("http", "https")
        if attribute in ("src", "srcset") and not inside_vault(value) and not remote_ok:
            return None
        if attribute in ("href", "cite") and url_scheme(value) in BLOCKED_SCHEMES:
            return None
        return value

    return keep


def clean_html(fragment: str, *, allow_remote_images: bool = False) -> Cleaned:
    """``fragment`` through the allow-list; ``notes`` name each tag or attribute removed."""
    notes: list[str] = []
    fragment = _remote_img_to_link(fragment, allow_remote_images, notes)
    cleaned = nh3.clean(
        fragment, tags=set(ALLOWED_TAGS), attributes=ALLOWED_ATTRIBUTES, url_schemes=set(LINK_SCHEMES),
        link_rel=None, strip_comments=True, clean_content_tags={"script", "style", "template", "noscript"},
        attribute_filter=_attribute_filter(allow_remote_images),  # type: ignore[arg-type]
    )
    kept = _tags_of(cleaned)
    kept_names = {tag for tag, _ in kept}
    kept_attrs = {(tag, attr) for tag, attrs in kept for attr in attrs}
    for tag, attrs in _tags_of(fragment):
        if tag not in kept_names:
            notes.append(f"removed a {code_span(f'<{tag}>')} element (not allowed in pages)")
            continue
        for attr in sorted(attrs):
            if (tag, attr) not in kept_attrs:
                what = "an event handler" if attr.startswith("on") else "an attribute"
                notes.append(f"removed {what} {code_span(attr + '=')} from {code_span(f'<{tag}>')}")
    if not notes and _squash_html(cleaned) != _squash_html(fragment):
        notes.append(f"removed markup nh3 does not allow: {_short(fragment)}")
    return Cleaned(cleaned, list(dict.fromkeys(notes)))


def _squash_html(text: str) -> str:
    """Compare two fragments ignoring how nh3 re-serialises what it keeps."""
    text = html.unescape(re.sub(r"<[^>]*>", "", text))
    return " ".join(text.split())


# -- markdown ----------------------------------------------------------------------------------

def _split_code(text: str) -> list[tuple[bool, str]]:
    """(is_code, piece) in order: fenced blocks and inline spans are code."""
    pieces: list[tuple[bool, str]] = []
    pos = 0
    for fence in _FENCE_RE.finditer(text):
        pieces += _split_inline(text[pos:fence.start()])
        pieces.append((True, fence.group(0)))
        pos = fence.end()
    pieces += _split_inline(text[pos:])
    return [p for p in pieces if p[1]]


def _split_inline(text: str) -> list[tuple[bool, str]]:
    pieces: list[tuple[bool, str]] = []
    pos = 0
    for span in INLINE_CODE_RE.finditer(text):
        pieces.append((False, text[pos:span.start()]))
        pieces.append((True, span.group(0)))
        pos = span.end()
    pieces.append((False, text[pos:]))
    return pieces


def _clean_links(text: str, allow_remote: bool, notes: list[str]) -> str:
    def link(match: re.Match[str]) -> str:
        bang, label, dest, title = match.group(1), match.group(2), match.group(3), match.group(4)
        # An image inside a link's text ([![badge](https://…)](https://…), the README badge)
        # is an image all the same.
        inner = _MD_LINK_RE.sub(link, label) if "](" in label else label
        if inner != label:
            label = inner
            whole = f"{bang}[{label}]({dest}{title})"
        else:
            whole = match.group(0)
        scheme = url_scheme(dest)
        if scheme in BLOCKED_SCHEMES:
            notes.append(f"removed a {scheme}: {'image' if bang else 'link'} (its text is kept)")
            return label
        if not bang:
            if scheme and scheme not in LINK_SCHEMES:
                notes.append(f"removed a link with the {scheme}: scheme (its text is kept)")
                return label
            return whole
        if is_remote(dest):
            if allow_remote and scheme in ("http", "https", ""):
                return whole
            if scheme not in ("http", "https", ""):
                notes.append(f"removed an image with the {scheme}: scheme (its text is kept)")
                return label
            notes.append(f"a remote image ({_short(dest)}) became a plain link (pages.allow_remote_images is off)")
            return f"[{label or 'image'}]({dest}{title})"
        if not inside_vault(dest):
            notes.append(f"an image outside the vault ({_short(dest)}) became plain text")
            return label or "image"
        return whole

    text = _MD_LINK_RE.sub(link, text)

    def definition(match: re.Match[str]) -> str:
        scheme = url_scheme(match.group(2))
        if scheme in BLOCKED_SCHEMES or (scheme and scheme not in LINK_SCHEMES):
            notes.append(f"removed a link definition with the {scheme}: scheme")
            return match.group(1) + "#" + match.group(3)
        return match.group(0)

    text = _REF_DEF_RE.sub(definition, text)
    return _clean_reference_images(text, allow_remote, notes)


_REF_IMAGE_RE = re.compile(r"!\[([^\[\]\n]*)\](?:\[([^\[\]\n]*)\])?(?!\()")


def _clean_reference_images(text: str, allow_remote: bool, notes: list[str]) -> str:
    """``![alt][ref]`` / ``![ref]``: an image whose definition is remote (or unknown) becomes a link."""
    if allow_remote or "![" not in text:
        return text
    definitions = {m.group(0).split("]:", 1)[0].strip().lstrip("[").casefold(): m.group(2)
                   for m in _REF_DEF_RE.finditer(text)}

    def image(match: re.Match[str]) -> str:
        if match.start() > 0 and text[match.start() - 1] == "!":
            return match.group(0)
        label = (match.group(2) or match.group(1)).strip().casefold()
        dest = definitions.get(label)
        if dest is not None and inside_vault(dest):
            return match.group(0)
        notes.append(f"a reference image ({_short(label)}) that is remote or undefined became a plain link")
        return match.group(0)[1:]

    return _REF_IMAGE_RE.sub(image, text)


def _clean_embeds(text: str, notes: list[str]) -> str:
    def embed(match: re.Match[str]) -> str:
        inner = match.group(1)
        target = inner.split("|", 1)[0].split("#", 1)[0].strip()
        if target and inside_vault(target):
            return match.group(0)
        notes.append(f"an embed of {_short(target or '(nothing)')} (not a file inside the vault) became text")
        return inner.replace("[", "(").replace("]", ")")

    return _EMBED_RE.sub(embed, text)


def _clean_html_lines(text: str, allow_remote: bool, notes: list[str]) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        first = _TAG_START_RE.search(line)
        if first is None:
            out.append(line)
            continue
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        start = first.start()
        last_open = max(m.start() for m in _TAG_START_RE.finditer(body))
        close = body.find(">", last_open)
        end = len(body) if close < 0 else close + 1
        result = clean_html(body[start:end], allow_remote_images=allow_remote)
        notes.extend(result.notes)
        out.append(body[:start] + result.text + body[end:] + ending)
    return "".join(out)


# Every element name HTML, SVG or MathML knows (current and obsolete): a ``<name`` of one of these
# is markup, for nh3 to keep or remove (with a note); any other ``<…`` is text and is escaped.
HTML_ELEMENTS = frozenset("""
a abbr acronym address applet area article aside audio b base basefont bdi bdo bgsound big blink blockquote
body br button canvas caption center cite code col colgroup command content data datalist dd del details dfn
dialog dir div dl dt element em embed fieldset figcaption figure font footer form frame frameset h1 h2 h3 h4
h5 h6 head header hgroup hr html i iframe image img input ins isindex kbd keygen label legend li link listing
main map mark marquee math menu menuitem meta meter multicol nav nextid nobr noembed noframes noscript object
ol optgroup option output p param picture plaintext portal pre progress q rb rp rt rtc ruby s samp script
search section select shadow slot small source spacer span strike strong style sub summary sup svg table
tbody td template textarea tfoot th thead time title tr track tt u ul var video wbr xmp
animate animatemotion animatetransform circle clippath defs desc ellipse feimage filter foreignobject g
line lineargradient marker mask path pattern polygon polyline radialgradient rect set stop symbol text
textpath tspan use view annotation annotation-xml maction merror mfrac mglyph mi mmultiscripts mn mo mover
mpadded mphantom mroot mrow ms mspace msqrt mstyle msub msubsup msup mtable mtd mtext mtr munder munderover
semantics
""".split())  # noqa: SIM905 (a word list reads better than 220 quoted strings)
_TAG_LIKE_RE = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:_.@+\-]*)?([^<]?)")


def escape_non_html(text: str) -> str:
    """``<`` that does not open an HTML element (or a comment) becomes ``&lt;``: shown as written."""
    if "<" not in text:
        return text

    def one(match: re.Match[str]) -> str:
        name, after = match.group(2), match.group(3)
        whole = match.group(0)
        if name is None:
            # "<!--" and "<!DOCTYPE" are markup (nh3 drops comments); "<?php", "</ >" are text;
            # "< 5" and "<=" open nothing and stay as they are.
            return "&lt;" + whole[1:] if whole[1:2] in ("/", "?") else whole
        if name.casefold() in HTML_ELEMENTS and (after == "" or after in " \t\n\r/>"):
            return whole
        return "&lt;" + whole[1:]

    return _TAG_LIKE_RE.sub(one, text)


def escape_text(text: str) -> str:
    """``text`` with what looks like a tag but is no HTML element escaped, code left as it is
    (what :func:`clean_markdown` does to such text, without the rest of its cleaning)."""
    if "<" not in text:
        return text
    return "".join(piece if is_code else escape_non_html(piece) for is_code, piece in _split_code(text))


def clean_markdown(text: str, *, allow_remote_images: bool = False) -> Cleaned:
    """Page text made safe to render; code is left as it is."""
    notes: list[str] = []
    out = []
    for is_code, piece in _split_code(text):
        if is_code:
            out.append(piece)
            continue
        piece = escape_non_html(piece)
        piece = _clean_embeds(piece, notes)
        piece = _clean_links(piece, allow_remote_images, notes)
        piece = _clean_html_lines(piece, allow_remote_images, notes)
        piece = _defang_destinations(piece, notes)
        out.append(piece)
    return Cleaned("".join(out), list(dict.fromkeys(notes)))


# ``](javascript:…)`` left after the links were cleaned is no link of the text's own but could
# become one next to other text (``[[page|Notes]](data:…)`` in index.md): the URL is removed,
# as a dangerous link's is.
_LEFT_DESTINATION_RE = re.compile(r"\]\(\s*(?:<|&lt;)?\s*(?:" + "|".join(sorted(BLOCKED_SCHEMES))
                                  + r")\s*:[^)\n]*\)?", re.IGNORECASE)


def _defang_destinations(text: str, notes: list[str]) -> str:
    if "](" not in text:
        return text
    fixed = _LEFT_DESTINATION_RE.sub("]", text)
    if fixed != text:
        notes.append("removed a dangerous URL after a closing bracket (not a link of the text's own)")
    return fixed


def file_name_text(name: str) -> str:
    """A file name as page text: markup in it (``<img …>``, ``[c](javascript:…)``, backticks) is
    escaped so it shows as written and is never HTML, a link or code."""
    return (name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("[", "&#91;")
            .replace("]", "&#93;").replace("`", "&#96;"))


def one_line(text: str) -> str:
    """``text`` on one line: line breaks become spaces, other control characters are escaped."""
    return escape_controls(_LINE_BREAKS_RE.sub(" ", text)).strip()


def clean_line(text: str, *, allow_remote_images: bool = False) -> Cleaned:
    """A one-line value (title, summary, alias, key point, claim value) made safe."""
    flat = one_line(text)
    result = clean_markdown(flat, allow_remote_images=allow_remote_images)
    notes = list(result.notes)
    if flat != " ".join(text.split()) and _LINE_BREAKS_RE.sub(" ", text).strip() != flat:
        notes.append("control characters were escaped")
    return Cleaned(one_line(result.text), notes)


def link_label(text: str) -> str:
    """Display text for ``[[target|text]]``: one line, no ``]]`` or ``|`` to break out of it."""
    return one_line(text).replace("]]", "] ]").replace("[[", "[ [").replace("|", "¦") or "untitled"


# -- link targets and look-alike names ----------------------------------------------------------

def link_target_problem(target: str) -> str:
    """Why ``target`` cannot be the target of a ``[[link]]`` (empty when it can)."""
    if not target.strip():
        return "an empty link target"
    for bad, what in (("]]", "]]"), ("[[", "[["), ("|", "|"), ("#", "#"), ("^", "^")):
        if bad in target:
            return f"link target {_short(target)} contains {what}"
    if _LINE_BREAKS_RE.search(target) or any(unicodedata.category(ch).startswith("C") for ch in target):
        return f"link target {_short(target)} contains a line break or control character"
    return ""


# Latin look-alikes in other scripts (the common confusables).
_CONFUSABLES = str.maketrans({
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s",
    "ԁ": "d", "һ": "h", "ӏ": "l", "ԛ": "q", "ԝ": "w", "к": "k", "м": "m", "т": "t", "в": "b", "н": "h",
    "α": "a", "ο": "o", "ρ": "p", "ν": "v", "τ": "t", "ι": "i", "κ": "k", "χ": "x", "υ": "u", "ε": "e",
    "ı": "i", "ℓ": "l", "0": "o", "1": "l",
})


_PROTOTYPES: dict[int, str] | None = None


def _prototypes() -> dict[int, str]:
    """Each non-ASCII character Unicode lists as confusable with an ASCII letter or digit (its
    confusables table, via confusable-homoglyphs: ``ɑ`` → ``a``, ``ℓ`` → ``l``, ``ɡ`` → ``g``),
    mapped to that letter. Loaded on first use (a 1 MB table most commands never need)."""
    global _PROTOTYPES
    if _PROTOTYPES is None:
        table: dict[int, str] = {}
        try:
            from confusable_homoglyphs.confusables import confusables_data
        except ImportError:  # the hand list below still holds the common ones
            confusables_data = {}
        for char, homoglyphs in confusables_data.items():
            if len(char) != 1 or char.isascii():
                continue
            plain = [h["c"] for h in homoglyphs if len(h["c"]) == 1 and h["c"].isascii() and h["c"].isalnum()]
            if plain:
                table[ord(char)] = plain[0].casefold()
        _PROTOTYPES = table
    return _PROTOTYPES


def skeleton(name: str) -> str:
    """A name folded the way eyes read it: NFKC, case, accents, look-alike letters (Unicode's
    confusables, not only NFKC), separators."""
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", name).casefold())
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    folded = _INVISIBLE_RE.sub("", folded).translate(_CONFUSABLES).translate(_prototypes())
    return re.sub(r"[\W_]+", "", folded.translate(_CONFUSABLES))


def scripts_of(name: str) -> set[str]:
    """The scripts of the letters in ``name`` (LATIN, CYRILLIC, GREEK, CJK…)."""
    found = set()
    for ch in name:
        if ch.isalpha():
            try:
                found.add(unicodedata.name(ch).split(" ", 1)[0])
            except ValueError:
                found.add("UNKNOWN")
    return found


def lookalike_problem(name: str, existing: list[str]) -> str:
    """Why a new page ``name`` would pass for an existing page (homoglyphs, mixed scripts)."""
    scripts = scripts_of(name)
    if len(scripts & {"LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE"}) > 1:
        return f"page name {name!r} mixes scripts ({', '.join(sorted(scripts))}): a look-alike of another name?"
    if unicodedata.normalize("NFC", name) != name:
        return f"page name {name!r} is not in NFC normal form"
    key = skeleton(name)
    for other in existing:
        if other != name and skeleton(other) == key:
            return f"page name {name!r} looks like the existing page {other!r}"
    return ""


def code_span(text: str) -> str:
    """``text`` as one inline code span that nothing inside can close (file names with backticks)."""
    flat = one_line(text)
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"
