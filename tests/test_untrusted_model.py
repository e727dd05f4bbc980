"""Issue 10, item 2: a hostile model's text never lands in a page unsafe (scripted server).

Each payload rides in one operation (or the reply's title, summary or key points) of a real
model reply served over HTTP; the ingest must write none of it unsafe anywhere in wiki/ or
REVIEW.md (both are rendered by Obsidian), and every operation refused must be listed in
REVIEW.md with its reason; reply-level values are cleaned and the source page says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from wikiwright.wiki.pages import parse_page

from tests.conftest import Services
from tests.llm_server import ScriptedServer
from tests.model_helpers import page, reply, use_model
from tests.story import REPLIES, SOURCES

HTML = [
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
    "<img src=x onerror=alert(1)>",
    '<img src="https://evil.example/t.png">',
    "<img src=//evil.example/t.png>",
    '<img srcset="https://evil.example/a.png 2x">',
    "<svg onload=alert(1)>",
    "<body onload=alert(1)>",
    '<iframe src="https://evil.example"></iframe>',
    '<object data="https://evil.example/x.swf"></object>',
    '<embed src="https://evil.example/x.swf">',
    '<video src="https://evil.example/v.mp4"></video>',
    '<audio src="https://evil.example/a.mp3"></audio>',
    '<video><source src="https://evil.example/v.mp4"></video>',
    "<style>body{background:url(https://evil.example/x)}</style>",
    '<div style="background:url(https://evil.example/x)">x</div>',
    '<form action="https://evil.example"><input name=p></form>',
    '<base href="https://evil.example/">',
    '<link rel=stylesheet href="https://evil.example/x.css">',
    '<meta http-equiv="refresh" content="0;url=https://evil.example">',
    "<details open ontoggle=alert(1)>x</details>",
    '<a href="javascript:alert(1)">click</a>',
    '<a href="JaVaScRiPt:alert(1)">click</a>',
    '<a href="jav&#x09;ascript:alert(1)">x</a>',
    '<a href="vbscript:msgbox(1)">x</a>',
    '<a href="data:text/html,<script>alert(1)</script>">x</a>',
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "<scr<script>ipt>alert(1)</script>",
    '<img src="x" onerror\n="alert(1)">',
    '<noscript><p title="</noscript><img src=x onerror=alert(1)>">',
]
URLS = [
    "[click](javascript:alert(1))",
    "[click](JAVASCRIPT:alert(1))",
    "[c](  javascript:alert(1) )",
    "[c](<javascript:alert(1)>)",
    "[c](&#106;avascript:alert(1))",
    "[c](vbscript:msgbox(1))",
    "[c](data:text/html;base64,PHNjcmlwdD4=)",
    "![x](data:image/svg+xml;base64,PHN2Zz4=)",
    "\n[ref]: javascript:alert(1)\n",
    "[c](file:///etc/passwd)",
]
REMOTE = [
    "![t](https://evil.example/t.png)",
    "![t](http://evil.example/t.png)",
    "![t](//evil.example/t.png)",
    '![t](HTTPS://evil.example/t.png "title")',
    "![t][r]\n\n[r]: https://evil.example/t.png",
]
EMBEDS = [
    "![[/etc/passwd]]",
    "![[../../.ssh/id_rsa]]",
    "![[https://evil.example/x.png]]",
    "![[C:\\Windows\\win.ini]]",
    "![[~/.bashrc]]",
    "![[..\\..\\secret.md]]",
]
LINK_TARGETS = [
    "src-a]]<script>alert(1)</script>",
    "src-x|evil",
    "src-x#frag",
    "rate-limiting]]\n# injected",
    "src-\nevil",
    "a]]",
    "x^block",
    "src-design-doc]] ![](https://evil.example/t.png)",
]
# Existing pages after the design doc: billing-api, rate-limiting, alice-chen.
LOOKALIKES = [
    "b\u0456lling-api",  # Cyrillic і
    "billing-\u0430pi",  # Cyrillic а
    "\uff42illing-api",  # fullwidth ｂ
    "al\u0456ce-chen",
    "ra\u0442e-limiting",  # Cyrillic т
    "a\u0301lice-chen",  # a + combining acute (NFD-style)
    "billing\u200d-api",  # zero-width joiner
    "\u03b1lice-chen",  # Greek alpha
    "a1ice-chen",  # digit one for l
    "0verview",  # digit zero for o
    "ratelimiting",  # the same name without its separator
]


def hostile_operations() -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    for payload in [*HTML, *URLS, *REMOTE, *EMBEDS]:
        ops.append({"op": "add_to_section", "page": "billing-api", "heading": "Notes", "text": f"See {payload} now."})
    for target in LINK_TARGETS:
        ops.append({"op": "add_links", "page": "billing-api", "links": [target]})
    # Front matter and heading injection: one-line values that would add lines or keys.
    ops += [
        {"op": "create_page", "page": "hostile-one", "type": "entity", "title": "Evil\n---\ntype: index\nevil: 1",
         "summary": "x", "body": "text"},
        {"op": "create_page", "page": "hostile-two", "type": "entity", "title": "T", "summary": "s",
         "body": "text", "aliases": ["ok", "x\n---\nevil: 1"]},
        {"op": "add_aliases", "page": "billing-api", "aliases": ["Billing]] [[evil"]},
        {"op": "add_aliases", "page": "billing-api", "aliases": ["<img src=x onerror=alert(1)>"]},
        {"op": "add_to_section", "page": "billing-api", "heading": "Notes\n---\nevil: 1", "text": "x"},
        {"op": "create_page", "page": "hostile-three", "type": "entity", "title": '<img src=x onerror="alert(1)">',
         "summary": "s", "body": "text"},
        {"op": "create_page", "page": "hostile-four", "type": "entity", "title": "Four",
         "summary": "see ![t](https://evil.example/t.png)", "body": "text"},
        {"op": "add_claim", "page": "billing-api", "key": "billing-api.owner", "value": "<img src=x onerror=alert(1)>",
         "as_of": "2026-05-01", "quote": "The owner of the billing API is the payments team.", "replaces": False},
    ]
    for name in LOOKALIKES:
        ops.append({"op": "create_page", "page": name, "type": "entity", "title": "Billing API",
                    "summary": "the real one", "body": "Trust me."})
    ops.append({"op": "add_claim", "page": LOOKALIKES[0], "key": "billing-api.rate-limit", "value": "unlimited",
                "as_of": "2026-05-01", "quote": "The owner of the billing API is the payments team.",
                "replaces": True})
    ops.append({"op": "add_links", "page": "billing-api", "links": [LOOKALIKES[4]]})
    return ops


REPLY_LEVEL = {
    "title": "<script>alert(1)</script>Hostile notes",
    "summary": "See ![x](https://evil.example/s.png) and [c](javascript:alert(1)) and ![[/etc/passwd]].",
    "key_points": ["<img src=x onerror=alert(1)>", "![[../../.ssh/id_rsa]]", "<iframe src=//evil.example>"],
}

# Code as CommonMark reads it: a fence, or a span closed by a backtick run of its opening length.
_CODE_RE = re.compile(r"```.*?```|(?<!`)(`+)(?!`)[^\n]*?(?<!`)\1(?!`)", re.DOTALL)
# An independent check (not the sanitizer's own code): what would run, load or leak in Obsidian.
UNSAFE = [
    re.compile(r"<\s*/?\s*(script|style|iframe|object|embed|video|audio|source|form|input|base|link|meta|svg|math|"
               r"noscript|body)\b", re.I),
    re.compile(r"<[^>]*\son[a-z]+\s*=", re.I),
    re.compile(r"<[^>]*\b(href|src|srcset|action|data)\s*=\s*[\"']?\s*(javascript|vbscript|data|file):", re.I),
    re.compile(r"<[^>]*\b(src|srcset)\s*=\s*[\"']?\s*(https?:)?//", re.I),
    re.compile(r"<[^>]*\bstyle\s*=", re.I),
    re.compile(r"\]\(\s*<?\s*(javascript|vbscript|data|file)\s*:", re.I),
    re.compile(r"\]\(\s*<?\s*&#", re.I),
    re.compile(r"^\s*\[[^\]]+\]:\s*<?\s*(javascript|vbscript|data|file):", re.I | re.M),
    re.compile(r"!\[[^\]]*\]\(\s*<?\s*(https?:)?//", re.I),
    re.compile(r"!\[[^\]\[]*\]\[[^\]]*\]"),
    re.compile(r"!\[\[\s*(/|~|[A-Za-z]:|[^\]]*\.\.|[^\]]*://)"),
    re.compile(r"^# injected", re.M),
    re.compile(r"^evil:", re.M),
]


def unsafe_spots(text: str) -> list[str]:
    plain = _CODE_RE.sub(" ", text)
    return [m.group(0) for pattern in UNSAFE for m in pattern.finditer(plain)]


def rendered_files(root: Path) -> dict[str, str]:
    files = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in (root / "wiki").rglob("*.md")}
    files["REVIEW.md"] = (root / "REVIEW.md").read_text(encoding="utf-8")
    return files


def test_hostile_model_corpus_writes_nothing_unsafe_and_every_refusal_is_in_review(services: Services) -> None:
    ops = hostile_operations()
    payloads = len(ops) + sum(1 for v in REPLY_LEVEL.values() for _ in (v if isinstance(v, list) else [v]))
    assert payloads >= 60
    # A reply holds at most 60 operations: two hostile sources, half the corpus each.
    half = len(ops) // 2
    first, second = {**reply(*ops[:half]), **REPLY_LEVEL}, reply(*ops[half:])
    quote = "The owner of the billing API is the payments team."
    with ScriptedServer([REPLIES["design-doc.md"], first, second]) as server:
        use_model(services, server, max_pages_per_ingest=100)
        services.drop(*SOURCES[0])
        assert [r.state for r in services.drain()] == ["ingested"]
        before = {name: text for name, text in rendered_files(services.vault.root).items() if name != "REVIEW.md"}
        assert not [s for text in before.values() for s in unsafe_spots(text)]  # the seed is clean
        services.drop("hostile.md", f"# Hostile\n\n{quote}\n")
        assert [r.state for r in services.drain()] == ["ingested"]
        services.drop("hostile-2.md", f"# Hostile again\n\n{quote} Again.\n")
        assert [r.state for r in services.drain()] == ["ingested"]
    after = rendered_files(services.vault.root)
    leaks = {name: unsafe_spots(text) for name, text in after.items() if unsafe_spots(text)}
    assert leaks == {}
    for name, text in after.items():
        if name.startswith("wiki/") and text.startswith("---"):
            meta = parse_page(text).meta
            assert "evil" not in meta, name
    # Every operation was refused (none of them is harmless), each with its reason in REVIEW.md.
    review = after["REVIEW.md"]
    held_lines = [line for line in review.splitlines() if "hostile" in line and line.lstrip().startswith("- [")]
    shown = [json.dumps({k: v for k, v in op.items() if k not in ("op", "page", "body", "text")},
                        ensure_ascii=False)[:60] for op in ops]
    missing = [op for op, text in zip(ops, shown, strict=True) if not any(text in line for line in held_lines)]
    assert len(held_lines) == len(ops), missing
    for reason in ("unsafe page text", "not a valid page name", "looks like the existing page", "mixes scripts",
                   "naming rule", "event handler", "remote image", "javascript:", "not a file inside the vault",
                   "line breaks or control characters"):
        assert reason in review, reason
    assert not (services.vault.wiki / f"{LOOKALIKES[0]}.md").exists()
    assert "Trust me" not in "".join(text for name, text in after.items() if name.startswith("wiki/"))
    # The reply's own values were cleaned, and the source page says what was removed.
    source = page(services, "sources/src-hostile")
    meta = parse_page(source).meta
    assert meta["title"] == "Hostile notes"
    assert "## Cleaned" in source and "removed a `<script>` element" in source and "remote image" in source
    assert "[x](https://evil.example/s.png)" in source  # a remote image kept as a plain link, not dropped
    index = (services.vault.wiki / "index.md").read_text()
    assert "[[sources/src-hostile|Hostile notes]]" in index or "Hostile notes" in index


def test_remote_images_stay_when_allowed(services: Services) -> None:
    ops = [{"op": "add_to_section", "page": "billing-api", "heading": "Dashboards",
            "text": "![graph](https://grafana.example/d.png) and <img src=x onerror=alert(1)>"},
           {"op": "add_to_section", "page": "billing-api", "heading": "Dashboards",
            "text": "![graph](https://grafana.example/e.png)"}]
    with ScriptedServer([REPLIES["design-doc.md"], reply(*ops)]) as server:
        use_model(services, server)
        services.config = services.config.replace(pages=type(services.config.pages)(allow_remote_images=True))
        services.pipeline.planner.config = services.config  # type: ignore[union-attr]
        services.drop(*SOURCES[0])
        services.drop("dash.md", "# Dashboards\n\nThe graph.\n")
        assert [r.state for r in services.drain()] == ["ingested", "ingested"]
    text = page(services, "billing-api")
    assert "![graph](https://grafana.example/e.png)" in text  # allowed: kept as an image
    assert "d.png" not in text  # the op with an event handler was still held
    assert "onerror" in services.vault.review_file.read_text()


# -- issue 22: the last four kinds ----------------------------------------------------------------

# 1. A data: URL (and friends) in the reply's title: the title reaches index.md and log.md.
TITLES = [
    "[c](data:text/html;base64,PHNjcmlwdD4=) notes",
    "Notes]] [c](data:text/html,evil) [[x",
    '<a href="data:text/html,evil">Notes</a>',
    "Notes]](data:text/html,evil)",
    "![x](data:image/svg+xml;base64,PHN2Zz4=) notes",
    "Notes | [c](<data:text/html,evil>)",
]
# 2. Names that pass for an existing page to the eye, in one script (Unicode confusables, not NFKC).
CONFUSABLE_NAMES = ["\u0251lice-chen", "rate-limitin\u0261", "\u0251lpha", "billing-\u0251pi", "r\u0251te-limiting"]
# 3. Claim values that would close a code span and leave markup live.
VALUES = ["a` <img src=x onerror=alert(1)> `b", "x`` [c](javascript:alert(1)) ``y", "` <script>alert(1)</script> `",
          "]] <svg onload=alert(1)> [["]
# 4. raw/ file names carrying markup.
FILE_NAMES = ["<img src=x onerror=alert(1)>.md", "[c](javascript:alert(1)).md", "a`<svg onload=alert(1)>`.md",
              "![x](https%3A%2F%2Fevil.example%2Ft.png).md"]


def test_the_last_four_hostile_kinds_write_nothing_unsafe(services: Services) -> None:
    quote = "The owner of the billing API is the payments team."
    alpha = {"op": "create_page", "page": "alpha", "type": "concept", "title": "Alpha", "summary": "The first.",
             "body": "The first letter."}
    ops: list[dict[str, Any]] = [alpha]
    for name in CONFUSABLE_NAMES:
        ops.append({"op": "create_page", "page": name, "type": "entity", "title": "Alice Chen", "summary": "x",
                    "body": "Trust me."})
    ops.append({"op": "add_links", "page": "billing-api", "links": [CONFUSABLE_NAMES[0]]})
    ops.append({"op": "add_to_section", "page": CONFUSABLE_NAMES[0], "heading": "Notes", "text": "Trust me."})
    for index, value in enumerate(VALUES):
        ops.append({"op": "add_claim", "page": "billing-api", "key": f"billing-api.owner-{index}", "value": value,
                    "as_of": "2026-05-01", "quote": quote, "replaces": False})
    replies: list[Any] = [REPLIES["design-doc.md"], reply(*ops, title="Ops")]
    replies += [reply(title=title) for title in TITLES]
    replies += [{"summary": "No title: the file name stands in.", "operations": []} for _ in FILE_NAMES]
    payloads = len(CONFUSABLE_NAMES) + 2 + len(VALUES) + len(TITLES) + len(FILE_NAMES)
    with ScriptedServer(replies) as server:
        use_model(services, server, max_pages_per_ingest=100)
        services.drop(*SOURCES[0])
        assert [r.state for r in services.drain()] == ["ingested"]
        services.drop("hostile.md", f"# Hostile\n\n{quote}\n")
        assert [r.state for r in services.drain()] == ["ingested"]
        for index in range(len(TITLES)):
            services.drop(f"titled-{index}.md", f"# Titled {index}\n\nSome text.\n")
            assert [r.state for r in services.drain()] == ["ingested"]
        for index, name in enumerate(FILE_NAMES):
            services.drop(name, f"Named {index}: some text.\n")
            assert [r.state for r in services.drain()] == ["ingested"], name
    assert payloads == 21
    after = rendered_files(services.vault.root)
    # A source page's front matter records the raw/ path as it is (code finds the source by it;
    # Obsidian shows properties as text): checked as YAML values, the rest as rendered markdown.
    rendered = {}
    for name, text in after.items():
        if name.startswith("wiki/sources/") and text.startswith("---"):
            meta = parse_page(text).meta
            raw_paths = {str(meta.get("source_path")), *map(str, meta.get("sources") or [])}
            assert all(p.startswith("raw/") and "\n" not in p for p in raw_paths), meta
            text = text.split("\n---\n", 1)[1]
        rendered[name] = text
    leaks = {name: unsafe_spots(text) for name, text in rendered.items() if unsafe_spots(text)}
    assert leaks == {}
    # 1. No data: URL in index.md or log.md, and every title's link stays one link.
    for name in ("wiki/index.md", "wiki/log.md"):
        assert "data:" not in after[name], after[name]
    index = after["wiki/index.md"]
    for line in index.splitlines():
        if "src-titled" in line:
            assert line.count("[[") == 1 and line.count("]]") == 1, line
    # 2. Confusable names are held, never created; the real alpha page is.
    assert (services.vault.wiki / "alpha.md").exists()
    wiki_names = {p.stem for p in services.vault.wiki.rglob("*.md")}
    assert not wiki_names & set(CONFUSABLE_NAMES)
    assert "Trust me" not in "".join(text for name, text in after.items() if name.startswith("wiki/"))
    review = after["REVIEW.md"]
    assert review.count("looks like the existing page") >= len(CONFUSABLE_NAMES) + 2
    # 3. No claim value broke out; the unsafe ones are held.
    billing = after["wiki/billing-api.md"]
    assert "billing-api.owner-" not in billing
    # 4. The file names are text everywhere (escaped or in code), never markup: each source page's
    # heading shows the name as written (no tag, link or code span of its own).
    headings = {}
    for name, text in after.items():
        if name.startswith("wiki/sources/") and text.startswith("---"):
            page_ = parse_page(text)
            if str(page_.meta.get("source_path", "")).removeprefix("raw/") in FILE_NAMES:
                headings[page_.meta["source_path"]] = page_.body.lstrip().splitlines()[0]
    assert sorted(headings) == sorted(f"raw/{n}" for n in FILE_NAMES)
    for heading in headings.values():
        assert heading.startswith("# ") and not re.search(r"[<\[\]`]", heading), heading
    assert "# &lt;img src=x onerror=alert(1)&gt;" in headings["raw/<img src=x onerror=alert(1)>.md"]
