"""Documents read by real parsers (issue 18, the parsing part): reStructuredText through
docutils, MyST roles in markdown, PDF text de-kerned, documentation pages laid out in tables.
Each source goes through the real pipeline (offline engine, one commit each); what the page
says is checked, never the extractor alone."""

from __future__ import annotations

from tests.conftest import Services
from tests.helpers import git
from tests.source_fixtures import _pdf
from tests.test_sources import page_of


def ingested_once(services: Services, name: str) -> tuple[dict, str]:
    services.drop(name, SOURCES[name])
    services.drain()
    meta, body = page_of(services, name)
    subjects = git(services.vault.root, "log", "--format=%s%n%b", "--grep", f"raw/{name}").count("Wikiwright-Source")
    assert subjects == 1, f"{name}: {subjects} commits"
    return meta, body


CHANGES_RST = """\
Changelog
=========

Version 2.1.0
-------------

Released 2024-05-01

-   The :func:`~flask.Flask.run` method reads the ``FLASK_DEBUG`` variable again,
    as it did before version two. :issue:`5123`
-   Reading :ref:`the deployment notes <deploying>` is now part of :doc:`/tutorial/quickstart`.

.. versionchanged:: 2.0
    The :class:`Config` object became a dict subclass.

.. code-block:: python

    app = Flask(__name__)

.. toctree::
   :maxdepth: 2

   intro
   api

.. note:: The :term:`application context` is pushed for every request.

.. autoclass:: flask.Flask
   :members:

.. _deploying:

Deploying
---------

Run the application under a production WSGI server, see :pep:`3333` and :unknownrole:`gunicorn`.

.. sphinx-tabs-unknown:: Linux

   Every worker process serves one request at a time.
"""

GLOSSARY_MD = """\
# Request handling

The {term}`application context` is pushed by {ref}`the request dispatcher <dispatch>` before a view runs;
the {doc}`tutorial <tutorial/index>` explains it, and {py:func}`flask.Flask.run` starts the server.

```{versionadded} 2.2
The {class}`Blueprint` object can be nested.
```

```{toctree}
:maxdepth: 2
intro
```

```{note}
A view that returns {obj}`None` is an error.
```

```{eval-rst}
.. deprecated:: 2.3
   Use :meth:`~flask.Flask.app_context` instead.
```
"""


def _kerned_pdf() -> bytes:
    """Text placed as groff places it: words positioned, no space characters; a kerned gap
    inside a word, a tight gap between words."""
    lines = [b"(The shell e) -400 (xecutes each command) -60 (as) -280 (if) -280 (the) -280 (user) -280 (typed)"
             b" -280 (it.)",
             b"(When a command is) -280 (found, the shell runs it in a separate en) -400 (vironment.)",
             b"(The getopt function parses preallocated argument vectors for) -280 (kubectl.)"]
    ops = b"BT /F1 11 Tf 72 720 Td 14 TL " + b" ".join(b"[" + line + b"] TJ T*" for line in lines) + b" ET"
    return _pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(ops) + ops + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman >>", b"<< /Title (Shell grammar) >>",
    ])


# The shape of the libxslt manual's pages: the whole page (logos, a menu, the prose) in nested
# layout tables, the prose in one cell.
XSLT_PAGE = """<?xml version="1.0" encoding="ISO-8859-1"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>The programming API</title></head>
<body bgcolor="#8b7765"><table border="0" width="100%" cellpadding="5"><tr><td width="120"><a href="http://x.org/">
<img src="logo.png" alt="Logo" /></a></td><td><table width="90%"><tr><td><h1>The XSLT C library for GNOME</h1>
<h2>The programming API</h2></td></tr></table></td></tr></table>
<table border="0" cellpadding="4" width="100%"><tr><td bgcolor="#8b7765"><table width="100%"><tr>
<td valign="top" width="200"><table width="100%"><tr><td><center><b>Main Menu</b></center></td></tr><tr><td>
<form action="search.php"><input name="query" type="text" /></form><ul><li><a href="index.html">Home</a></li>
<li><a href="intro.html">Introduction</a></li><li><a href="docs.html">Documentation</a></li>
<li><a href="bugs.html">Reporting bugs</a></li></ul></td></tr></table></td>
<td valign="top" bgcolor="#8b7765"><table width="100%"><tr><td><table width="100%"><tr><td>
<p>Integrating the stylesheet processor into an application takes a few steps. The parser is configured
for XSLT first, then the stylesheet is parsed with xsltParseStylesheetFile and the document with
xmlParseFile.</p>
<p>The stylesheet is applied to the document with xsltApplyStylesheet, and the result is saved with
xsltSaveResultToFile when it is needed.</p>
<ol><li>configure the parser for XSLT</li><li>parse the stylesheet</li><li>apply the stylesheet</li></ol>
<p><a href="bugs.html">Daniel Veillard</a></p></td></tr></table></td></tr></table></td></tr></table>
</td></tr></table></body></html>
"""

SOURCES: dict[str, str | bytes] = {
    "flask/CHANGES.rst": CHANGES_RST,
    "flask/glossary.md": GLOSSARY_MD,
    "bash/grammar.pdf": _kerned_pdf(),
    "libxslt/API.html": XSLT_PAGE,
}


def test_restructuredtext_roles_and_directives_are_rendered_or_dropped(services: Services) -> None:
    _meta, body = ingested_once(services, "flask/CHANGES.rst")
    for raw in (":func:", ":issue:", ":ref:", ":doc:", ":class:", ":term:", ":pep:", ":unknownrole:", ".. ",
                "::", "toctree", "autoclass", ":maxdepth:", "``"):
        assert raw not in body, (raw, body)
    # The role reads as "#5123" after the sentence; the engine's summary keeps whole sentences only.
    assert "The `run` method reads the `FLASK_DEBUG` variable again, as it did before version two." in body
    assert "Reading the deployment notes is now part of quickstart." in body
    assert "Changed in version 2.0: The `Config` object became a dict subclass." in body
    assert "Note: The application context is pushed for every request." in body
    assert "see PEP 3333 and gunicorn." in body
    assert "Every worker process serves one request at a time." in body  # an unknown directive's content
    assert "## Deploying" in body or "Deploying" in body


def test_myst_roles_in_markdown_are_reduced_to_their_text(services: Services) -> None:
    _meta, body = ingested_once(services, "flask/glossary.md")
    for raw in ("{term}", "{ref}", "{doc}", "{py:func}", "{class}", "{obj}", "{versionadded}", "{toctree}",
                "{note}", ":maxdepth:", "<dispatch>", "{eval-rst}", ":meth:", ".. "):
        assert raw not in body, (raw, body)
    assert "The application context is pushed by the request dispatcher before a view runs" in body
    assert "the tutorial explains it, and `flask.Flask.run` starts the server." in body
    assert "New in version 2.2: The `Blueprint` object can be nested." in body
    assert "Note: A view that returns `None` is an error." in body
    assert "Deprecated since version 2.3: Use `app_context` instead." in body  # reST inside markdown


def test_pdf_word_spacing_damage_is_repaired_where_confident(services: Services) -> None:
    _meta, body = ingested_once(services, "bash/grammar.pdf")
    assert "The shell executes each command as if the user typed it." in body
    assert "runs it in a separate environment." in body
    # Words the word list does not know are left alone, never split into common words.
    assert "The getopt function parses preallocated argument vectors for kubectl." in body
    for damage in ("e xecutes", "commandas", "en vironment"):
        assert damage not in body


def test_a_documentation_page_laid_out_in_tables_keeps_its_text(services: Services) -> None:
    _meta, body = ingested_once(services, "libxslt/API.html")
    summary = body.split("## Summary", 1)[1] if "## Summary" in body else body
    assert "Integrating the stylesheet processor into an application takes a few steps." in summary
    assert "The stylesheet is applied to the document with xsltApplyStylesheet" in body
    assert "| Integrating" not in body  # prose, not a table cell
    assert "Main Menu" not in body


def test_a_restructuredtext_topic_titled_by_its_title_field(services: Services) -> None:
    """A reST document opened by a field list (`:title:` as the AWS CLI's topic guides and
    Pelican write it) and no section title: its title is that field (old code: the file name,
    "aws-return-codes")."""
    services.drop("aws-return-codes.rst", (
        ":title: AWS CLI Return Codes\n:description: Describes the various return codes of the AWS CLI\n"
        ":category: General\n\nThese are the following return codes returned at the end of execution\n"
        "of a CLI command:\n\n* ``0`` -- The service responded with an HTTP response status code of 200.\n\n"
        "* ``1`` -- Limited to ``s3`` commands, at least one or more s3 transfers failed.\n\n"
        "See :ref:`s3-faq` for more.\n"))
    assert [r.state for r in services.drain()] == ["ingested"]
    meta, body = page_of(services, "aws-return-codes.rst")
    assert meta["title"] == "AWS CLI Return Codes", meta
    assert body.lstrip().startswith("# AWS CLI Return Codes\n"), body[:80]


def test_a_heading_with_badges_is_titled_by_its_words(services: Services) -> None:
    """``# rustfmt [![linux](…badge.svg)](…)``: the badges are links around images; the title is
    "rustfmt" (old code: "rustfmt [](https://github.com/…) [](…)")."""
    services.drop("README.md", (
        "# rustfmt [![linux](https://github.com/rust-lang/rustfmt/actions/workflows/linux.yml/badge.svg?event=push)]"
        "(https://github.com/rust-lang/rustfmt/actions/workflows/linux.yml) [![crates.io]"
        "(https://img.shields.io/crates/v/rustfmt-nightly.svg)](https://crates.io/crates/rustfmt-nightly)\n\n"
        "A tool for formatting Rust code according to style guidelines.\n"))
    assert [r.state for r in services.drain()] == ["ingested"]
    meta, _body = page_of(services, "README.md")
    assert meta["title"] == "rustfmt", meta
