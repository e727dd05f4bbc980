"""Which words the offline engine takes for names (a page each when two sources share one):
an acronym only as written, a common word in capitals only where the prose writes it so, and no
phrase cut before its end or opened by praise. On the real pipeline (services fixture)."""

from __future__ import annotations

from wikiwright.ingest.terms import extract_terms
from wikiwright.wiki.pages import parse_page

from tests.conftest import Services


def _terms(text: str) -> set[str]:
    sentences = [s.strip() for s in text.replace("\n", " ").split(". ") if s.strip()]
    return {t.label for t in extract_terms(text, "Notes", sentences)}


def _concept_titles(services: Services) -> set[str]:
    titles = set()
    for path in services.vault.wiki.glob("*.md"):
        meta = parse_page(path.read_text(encoding="utf-8")).meta
        if meta.get("type") in ("concept", "entity"):
            titles.add(str(meta.get("title")))
    return titles


def test_a_common_word_in_capitals_is_a_name_only_where_the_prose_writes_it_so() -> None:
    key = ("Set LITELLM_PROXY_API_KEY before you start. The master key is never a fallback. "
           "A key that was not issued for the server is refused. Rotate the key every month. See API KEY.")
    assert "KEY" not in _terms(key)  # the prose says "key": KEY is that word
    head = "The HEAD of the branch carries the Check. The Check runs on HEAD before each deploy of the service."
    assert "HEAD" in _terms(head)  # written in capitals every time: a name
    assert "ID" not in _terms("Pass the session ID of the run. Every session ID is unique to the Run.")


def test_an_acronym_is_not_mentioned_by_its_lower_case_word_or_code(services: Services) -> None:
    """Two sources say CSRF after a sentence with `csrf.protect(app)` (code). Old code: the CSRF
    page quoted the code sentence as each source's mention (the acronym matched in any case)."""
    services.drop("forms.md", "# Forms\n\nCall `csrf.protect(app)` once when the application starts. CSRF attacks "
                              "forge a request from another site in the user's name.\n")
    services.drop("views.md", "# Views\n\nEvery view is wrapped by `csrf.exempt` when it takes no form. A CSRF "
                              "token travels with each form the views render.\n")
    assert {r.state for r in services.drain()} == {"ingested"}
    page = services.vault.wiki / "csrf.md"
    assert page.exists(), sorted(p.name for p in services.vault.wiki.glob("*.md"))
    quoted = [line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith(("- [[src", "> "))]
    assert len(quoted) >= 3, quoted
    assert all("CSRF" in line for line in quoted if not line.startswith("> —")), quoted


def test_a_command_in_backticks_and_a_common_acronym_get_no_page(services: Services) -> None:
    """`lite keys delete` in two sources is a command, not a concept; API and URL are as common
    as words. Old code: pages "lite keys delete" (a keyphrase read inside code spans) and "APIs"."""
    for name in ("cli", "proxy"):
        services.drop(f"{name}.md", f"# {name.title()}\n\nRun `lite keys delete` to remove a key from the proxy. "
                                    f"The {name} APIs take a URL and return JSON. The APIs change rarely.\n")
    assert {r.state for r in services.drain()} == {"ingested"}
    titles = {t.casefold() for t in _concept_titles(services)}
    assert not titles & {"lite keys delete", "apis", "api", "url"}, titles


def test_a_phrase_cut_before_its_end_or_opened_by_praise_gets_no_page(services: Services) -> None:
    """Two templated READMEs share whole sentences: every piece of them is "shared by two
    sources". Old code: pages "enables team-based prompt" and "powerful prompt management"."""
    for host in ("GitLab", "Bitbucket"):
        services.drop(f"{host.lower()}.md", (
            f"# LiteLLM {host} Prompt Management\n\nA powerful prompt management integration for {host}. "
            f"This enables team-based prompt management with {host}'s built-in access control and version "
            f"control capabilities. Prompts are stored as files in the repository.\n"))
    assert {r.state for r in services.drain()} == {"ingested"}
    titles = {t.casefold() for t in _concept_titles(services)}
    assert "enables team-based prompt" not in titles, titles
    assert not {t for t in titles if t.startswith("powerful")}, titles


def test_a_section_grown_in_place_keeps_its_blank_line_before_the_next_heading() -> None:
    """A source page's "Related pages" list, extended when a later source makes a concept page,
    stayed glued to the "## Secrets" heading after it (old code: no blank line between)."""
    from wikiwright.wiki.pages import get_section, set_section

    body = "# T\n\n## Related pages\n\n- [[a]]\n\n## Secrets\n\nRedacted.\n"
    grown = set_section(body, "Related pages", (get_section(body, "Related pages") or "").rstrip("\n") + "\n- [[b]]\n")
    assert "- [[b]]\n\n## Secrets\n" in grown, grown
    assert set_section(grown, "Secrets", "## Secrets\n\nRedacted.\n") == grown  # the last section: nothing added


# Found by ingesting 24 chapters of the Rust book (HTML, offline) and reading the wiki.

def test_a_double_backtick_code_span_does_not_hide_a_sentence_end() -> None:
    from wikiwright.ingest.offline import split_sentences

    text = ("When we tried this, we got the error `` the trait `Send` is not implemented for `Rc<i32>` ``. "
            "When we switched to `Arc<T>`, which does implement `Send`, the code compiled.\n")
    assert split_sentences(text) == [
        "When we tried this, we got the error `` the trait `Send` is not implemented for `Rc<i32>` ``.",
        "When we switched to `Arc<T>`, which does implement `Send`, the code compiled."]


def test_a_definition_is_read_through_type_parameters_emphasis_and_a_lead_word() -> None:
    from wikiwright.ingest.terms import mention_sentence

    sentences = ["When we switched to `Arc<T>`, which does implement `Send`, the code compiled.",
                 "Fortunately, `Arc<T>` *is* a type like `Rc<T>` that is safe to use in concurrent situations."]
    assert mention_sentence("Arc", sentences)[0] == sentences[1]
    narrating = ["Rust is telling us that we can't move the ownership of `counter` into many threads.",
                 "Rust takes a different path: memory is returned once its owner goes out of scope."]
    assert mention_sentence("Rust", narrating)[1] < 3.0  # "is telling": what it does, not what it is
    assert mention_sentence("Rust", ["Rust is not a scripting language, and it shows."])[1] < 2.0


def test_a_subject_the_title_names_is_a_concept_in_the_prose_s_case() -> None:
    body = ("# Validating References with Lifetimes\n\nLifetimes are another kind of generic. Every reference has "
            "lifetimes. The borrow checker compares lifetimes. Most of the time lifetimes are implicit.\n")
    sentences = ["Lifetimes are another kind of generic.", "Every reference has lifetimes.",
                 "The borrow checker compares lifetimes.", "Most of the time lifetimes are implicit."]
    terms = {t.label: t.kind for t in extract_terms(body, "Validating References with Lifetimes", sentences)}
    assert terms.get("lifetimes") == "concept", terms
    # A common word is the subject only when the prose uses it far more than English does:
    # "ownership" in a chapter about it, never "code" or "data" in any chapter.
    own = ["Ownership is a set of rules that govern memory.", "Each value has an owner, and ownership moves.",
           "The ownership rules are checked by the compiler.", "Ownership makes memory safety guarantees.",
           "The code below shows ownership moving between variables."]
    labels = {t.label for t in extract_terms("# What Is Ownership?\n\n" + " ".join(own), "What Is Ownership?", own)}
    assert "ownership" in labels, labels
    code = ["The code runs twice.", "Our code is short.", "This code compiles.", "All code here is safe."]
    assert "code" not in {t.label for t in extract_terms(" ".join(code), "Running Code on Cleanup", code)}
    encoded = ["The text is encoded as UTF-8.", "Every string is encoded.", "Encoded bytes are stored.",
               "Strings hold encoded text."]
    assert "encoded" not in {t.label for t in extract_terms(" ".join(encoded), "Storing UTF-8 Encoded Text",
                                                             encoded)}


def test_a_place_in_the_document_and_a_quoted_section_title_are_not_names() -> None:
    text = ("To enable comparisons, implement the PartialOrd trait (see Appendix C for more). "
            "See “Paths for Referring to an Item in the Module Tree” in Chapter 7 for the rules. "
            "The Valgrind team wrote “a fast checker” for Memcheck users")
    labels = _terms(text)
    assert not labels & {"Appendix C", "Chapter 7", "Paths for Referring", "Module Tree"}, labels
    assert "PartialOrd" in labels  # what the sentences name stays


def test_a_one_line_code_block_in_html_stays_a_block() -> None:
    from wikiwright.intake.extract.html import html_to_markdown

    page = ("<html><body><main><p>Knowing that you can take slices of literals leads us to one more improvement "
            "on it, and that is its signature:</p><pre><code class='language-rust'>fn first_word(s: &amp;String) "
            "-&gt; &amp;str {</code></pre><p>A more experienced Rustacean would write the signature shown in "
            "Listing 4-9 instead, because it allows us to use the same function on both kinds of value.</p>"
            "</main></body></html>")
    markdown = html_to_markdown(page)[0]
    assert "```\nfn first_word(s: &String) -> &str {\n```" in markdown, markdown


def test_cpp_and_csharp_are_not_the_page_of_c() -> None:
    from wikiwright.wiki.pages import slugify

    assert slugify("C++") == "c-plus-plus" and slugify("C#") == "c-sharp" and slugify("C") == "c"
    assert slugify("g++ flags") == "g-plus-plus-flags" and slugify("C++17") == "c-plus-plus-17"
    assert slugify("a+b") == "a-b" and slugify("#tag") == "tag"  # a sign between or before words stays a dash


def test_a_term_named_as_what_a_sentence_describes_is_defined_there() -> None:
    from wikiwright.ingest.terms import mention_sentence

    sentences = ["The threads will probably take turns, but that isn't guaranteed.",
                 "In most operating systems, the features that run these independent parts are called *threads*."]
    assert mention_sentence("threads", sentences)[0] == sentences[1]


def test_key_points_prefer_what_the_text_states_to_its_walk_through_exhibits() -> None:
    from wikiwright.ingest.offline import digest

    text = ("# Threads\n\nA thread runs part of a program at the same time as the others.\n\n"
            "The code in Listing 16-1 stops the spawned thread early because the main thread ends first.\n\n"
            "Notice in Listing 16-1 that the closure we pass to the spawned thread takes no arguments.\n\n"
            "The Rust standard library uses one operating system thread per language thread.\n\n"
            "A spawned thread ends when the main thread of the program ends.\n")
    points = digest(text, "markdown", "", "threads", summary_sentences=1, key_points=2).key_points
    assert points == ["The Rust standard library uses one operating system thread per language thread.",
                      "A spawned thread ends when the main thread of the program ends."], points


def test_a_name_inside_a_web_or_mail_address_is_no_mention(services: Services) -> None:
    """A URL, a mail address or a bare domain says where something is, not what a source is
    about. Old code: "https://github.com/…" in a README's last line made it a GitHub mention,
    quoting the bare address on the GitHub page."""
    services.drop("widget.md", "# Widget\n\nThe Widget team hosts its code on GitHub and reviews every change "
                               "there.\n")
    services.drop("gadget.md", "# Gadget\n\nGadget keeps its issue tracker on GitHub as well.\n")
    services.drop("gizmo.md", "# Gizmo\n\nGizmo reads sensor data from the serial port.\n\n"
                              "Report problems at https://github.com/acme/gizmo/issues or write to "
                              "gizmo@github.com for help.\n\nThe mirror is at gitlab.com/acme/gizmo for now.\n")
    assert {r.state for r in services.drain()} == {"ingested"}
    page = services.vault.wiki / "github.md"
    assert page.exists(), sorted(p.name for p in services.vault.wiki.glob("*.md"))
    meta = parse_page(page.read_text(encoding="utf-8")).meta
    assert sorted(meta["sources"]) == ["src-gadget", "src-widget"], meta["sources"]


def test_what_it_is_quotes_an_aside_without_its_brackets_and_prefers_a_sentence_standing_alone(
        services: Services) -> None:
    """Old code: Python's page quoted "(Python is pre-installed with most Linux distributions.)"
    in its brackets, and StackOverflow's "Alternatively, ask a question on StackOverflow …"
    (a sentence going on from the one before) over one that says it on its own."""
    services.drop("help.md", "# Getting help\n\nFor general questions use StackOverflow with the tag widget.\n")
    services.drop("docs.md", "# Building the docs\n\nThe docs are built with Python scripts only. (Python is "
                             "pre-installed with most Linux distributions.)\n")
    assert {r.state for r in services.drain()} == {"ingested"}
    services.drop("glib.md", "# GLib notes\n\nBugs go to the issue tracker of the project. Alternatively, ask a "
                             "question on StackOverflow and tag it glib. Our Python bindings are generated.\n")
    assert {r.state for r in services.drain()} == {"ingested"}
    python = (services.vault.wiki / "python.md").read_text(encoding="utf-8")
    assert "> Python is pre-installed with most Linux distributions." in python, python
    assert "(Python is" not in python
    overflow = (services.vault.wiki / "stackoverflow.md").read_text(encoding="utf-8")
    assert "> For general questions use StackOverflow with the tag widget." in overflow, overflow


def test_an_entry_about_something_else_is_not_what_a_term_is(services: Services) -> None:
    """tar's "**TAR_UID**: UID of the file owner." was the UID page's "What it is" (a list
    entry about a variable), over a sentence about the UID itself."""
    services.drop("accounts.md", "# Accounts\n\nEvery process runs under a UID that the kernel checks on each "
                                 "file access.\n")
    assert {r.state for r in services.drain()} == {"ingested"}
    services.drop("tar-env.md", "# Tar environment\n\nThe tar program exports these variables to its scripts.\n\n"
                                "- **TAR_UID**: UID of the file owner.\n- **TAR_GID**: group of the file owner.\n")
    assert {r.state for r in services.drain()} == {"ingested"}
    page = (services.vault.wiki / "uid.md").read_text(encoding="utf-8")
    assert "> Every process runs under a UID that the kernel checks on each file access." in page, page


def test_a_type_written_only_in_code_gets_no_page(services: Services) -> None:
    """The Rust book writes `i32` only in code spans (`Option<i32>`, `&[i32]`); old code read
    it from inside them and ranked "i32" second in the overview, after Rust."""
    services.drop("types.md", "# Data types\n\nHere, `i32` is the type of each element of the array.\n")
    services.drop("enums.md", "# Enums\n\nThe type of `some_number` is `Option<i32>` in this example.\n")
    services.drop("slices.md", "# Slices\n\nThis slice has the type `&[i32]` and borrows the array.\n")
    assert {r.state for r in services.drain()} == {"ingested"}
    assert not (services.vault.wiki / "i32.md").exists()
    assert "i32" not in (services.vault.wiki / "overview.md").read_text(encoding="utf-8")


def test_a_bibliography_section_names_nothing(services: Services) -> None:
    """wordfreq's and Trafilatura's READMEs end with "Citing …" sections of papers. Old code:
    a "Proceedings" page, quoting "In Proceedings of the 4th international conference …"."""
    for name in ("wordfreq", "trafilatura"):
        services.drop(f"{name}.md", f"# {name}\n\n{name} is a Python library for reading text.\n\n## Citing {name}\n\n"
                                    "- Halácsy, P. (2004). Creating open language resources. In Proceedings of the "
                                    "4th international conference on Language Resources and Evaluation.\n"
                                    "- Lison, P. (2016). Parallel Corpora. In Proceedings of the 10th Workshop "
                                    "on Web Corpora.\n")
    assert {r.state for r in services.drain()} == {"ingested"}
    assert not (services.vault.wiki / "proceedings.md").exists()
    assert "Proceedings" not in "".join(p.read_text(encoding="utf-8") for p in services.vault.wiki.glob("*.md"))
