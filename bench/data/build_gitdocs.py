"""Build the ``gitdocs`` retrieval evaluation set from Git's documentation (Debian ``git-doc`` and ``git``).

    apt-get install -y git git-doc
    .venv/bin/python bench/data/build_gitdocs.py [--html /usr/share/doc/git-doc] \\
        [--relnotes /usr/share/doc/git/RelNotes]

Writes ``bench/data/gitdocs/`` in BEIR format:

- ``queries.jsonl``: one query per manual page (``git-add(1)``, ``gitglossary(7)``, …): the
  one-line description of its NAME section (``git-add - Add file contents to the index`` gives
  ``Add file contents to the index``) with the page's own name removed (short keyword-style
  queries). Pages sharing a description are one query.
- ``corpus.jsonl``: every HTML page of ``git-doc`` (manual pages, guides, ``howto/``,
  ``technical/``) converted to Markdown-ish text with its section headings kept, plus the
  release notes ``git`` ships (``RelNotes/*.txt``, their underlined headings turned into ``#``
  lines), each capped at about 6000 characters. A manual page loses its NAME section (the
  query, verbatim) and the closing ``GIT`` section (``Part of the git(1) suite``).
- ``qrels.tsv``: the manual page the description is from = 2; the pages its SEE ALSO section
  links to = 1.

The output is sorted and deterministic. Git and its documentation are © Linus Torvalds and
others, GNU General Public License version 2 (Debian: ``/usr/share/doc/git/copyright``).
"""

from __future__ import annotations

import argparse
import json
import posixpath
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

MAX_CHARS = 6000
_BLOCKS = {"p", "div", "li", "dt", "dd", "tr", "table", "blockquote", "ul", "ol", "dl"}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_VOID = {"br", "hr", "img", "input", "link", "meta", "wbr", "col", "area", "base", "source"}
_SKIP_IDS = {"footer", "footnotes", "toc"}


@dataclass
class Page:
    title: str = ""
    blocks: list[tuple[int, str]] = field(default_factory=list)  # (heading level or 0, Markdown-ish text)
    links: list[tuple[int, str]] = field(default_factory=list)  # (index of the block holding it, href)


class _AsciidocPage(HTMLParser):
    """Collects an AsciiDoc (or DocBook) HTML page as Markdown-ish blocks, with its links."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self._stack: list[tuple[str, bool]] = []  # (tag, skipped)
        self._skip = 0
        self._table = 0  # inside a table only rows are blocks; cells are joined with " | "
        self._buffer: list[str] = []
        self._prefix = ""
        self._heading = 0
        self._pre: list[str] | None = None
        self._in_title = False
        self._title: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        classes = set((attributes.get("class") or "").split())
        if tag == "title":
            self._in_title = True
        if tag in _VOID:
            return
        skipped = bool(
            self._skip or tag in {"script", "style", "title"} or attributes.get("id") in _SKIP_IDS or "toc" in classes
        )
        self._stack.append((tag, skipped))
        if skipped:
            self._skip += 1
            return
        if tag == "a" and attributes.get("href"):
            self.page.links.append((len(self.page.blocks), attributes["href"] or ""))
        if tag in _HEADINGS:
            self._flush()
            self._heading = int(tag[1])
        elif tag == "pre":
            self._flush()
            self._pre = []
        elif tag in {"td", "th"}:
            if "".join(self._buffer).strip():
                self._buffer.append(" | ")
        elif tag in _BLOCKS and (tag in {"tr", "table"} or not self._table):
            self._flush()
            if tag == "li":
                self._prefix = "- "
        if tag == "table":
            self._table += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in _VOID or not any(open_tag == tag for open_tag, _ in self._stack):
            return
        while self._stack:
            open_tag, skipped = self._stack.pop()
            self._close(open_tag, skipped)
            if open_tag == tag:
                break

    def _close(self, tag: str, skipped: bool) -> None:
        if skipped:
            self._skip -= 1
            return
        if tag in _HEADINGS:
            self._flush()
            self._heading = 0
        elif tag == "pre" and self._pre is not None:
            code = "".join(self._pre).strip("\n")
            self._pre = None
            if code.strip():
                self.page.blocks.append((0, "```\n" + code + "\n```"))
        elif tag in _BLOCKS and (tag in {"tr", "table"} or not self._table):
            self._flush()
        if tag == "table":
            self._table -= 1

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title.append(data)
        if self._skip:
            return
        if self._pre is not None:
            self._pre.append(data)
        else:
            self._buffer.append(data)

    def _flush(self) -> None:
        text = re.sub(r"\s+", " ", "".join(self._buffer)).strip()
        self._buffer = []
        if not text:
            return
        if self._heading:
            self.page.blocks.append((self._heading, text))
        else:
            self.page.blocks.append((0, self._prefix + text))
            self._prefix = ""

    def close(self) -> None:
        super().close()
        self._flush()
        self.page.title = re.sub(r"\s+", " ", "".join(self._title)).strip()


def parse(path: Path) -> Page:
    parser = _AsciidocPage()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    parser.close()
    return parser.page


def cap(pieces: list[str]) -> str:
    """The pieces joined by blank lines, cut at a piece boundary near MAX_CHARS."""
    text = ""
    for piece in pieces:
        if text and len(text) + 2 + len(piece) > MAX_CHARS:
            break
        text = text + "\n\n" + piece if text else piece
    return text[:MAX_CHARS].rsplit("\n", 1)[0] if len(text) > MAX_CHARS else text


def section_end(blocks: list[tuple[int, str]], start: int) -> int:
    """Index of the first block after the section whose heading is ``blocks[start]``."""
    level = blocks[start][0]
    for index in range(start + 1, len(blocks)):
        if 0 < blocks[index][0] <= level:
            return index
    return len(blocks)


@dataclass
class ManPage:
    names: list[str]
    description: str
    see_also: set[str]  # document ids


def convert_page(path: Path, doc_id: str) -> tuple[dict[str, str], ManPage | None]:
    """The corpus document for an HTML page and, for a manual page, its NAME line and SEE ALSO links."""
    page = parse(path)
    blocks = page.blocks
    drop: set[int] = set()
    man: ManPage | None = None
    headings = {text: index for index, (level, text) in enumerate(blocks) if level == 2}
    name_at = headings.get("NAME")
    if name_at is not None and name_at + 1 < len(blocks) and " - " in blocks[name_at + 1][1]:
        names, _, description = blocks[name_at + 1][1].partition(" - ")
        see_also: set[str] = set()
        if "SEE ALSO" in headings:
            start = headings["SEE ALSO"]
            end = section_end(blocks, start)
            for index, href in page.links:
                target = href.partition("#")[0]
                if start <= index < end and target.endswith(".html") and "://" not in target:
                    linked = posixpath.normpath(posixpath.join(posixpath.dirname(doc_id), target))
                    see_also.add(linked.removesuffix(".html"))
        man = ManPage([n.strip() for n in names.split(",")], description.strip(), see_also - {doc_id})
        drop |= {name_at, name_at + 1}
    if "GIT" in headings:
        drop |= set(range(headings["GIT"], section_end(blocks, headings["GIT"])))
    text = cap(["#" * level + " " + text if level else text for i, (level, text) in enumerate(blocks) if i not in drop])
    title = page.title or next((heading for level, heading in blocks if level), doc_id)  # a few pages have no <title>
    return {"_id": doc_id, "title": title, "text": text}, man


def convert_release_notes(path: Path) -> dict[str, str]:
    """A plain-text release note with its ``===``/``---`` underlined headings as ``#``/``##`` lines."""
    lines = [line.rstrip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    out: list[str] = []
    title = ""
    for line in lines:
        underline = re.fullmatch(r"(=+|-+)", line)
        if underline and out and out[-1].strip() and len(line) >= 3 and not out[-1].startswith("#"):
            heading = out.pop().strip()
            title = title or heading
            out += ["", ("# " if line[0] == "=" else "## ") + heading, ""]
        else:
            out.append(line.lstrip())  # indentation would turn prose into Markdown code blocks
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", "\n".join(out)) if p.strip()]
    return {"_id": f"RelNotes/{path.stem}", "title": title or f"Git {path.stem} release notes", "text": cap(paragraphs)}


def query_text(man: ManPage) -> str:
    """The NAME description without the page's own names (``git-p4``, ``git p4``)."""
    text = man.description
    for name in man.names:
        for form in {name, name.replace("-", " ", 1)}:
            text = re.sub(rf"(?<![\w-]){re.escape(form)}(?![\w-])", " ", text)
    return re.sub(r"\s+([,;:.)])", r"\1", re.sub(r"\s+", " ", text)).strip(" .,;:")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--html", type=Path, default=Path("/usr/share/doc/git-doc"))
    parser.add_argument("--relnotes", type=Path, default=Path("/usr/share/doc/git/RelNotes"))
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "gitdocs")
    args = parser.parse_args()
    root: Path = args.html

    documents: dict[str, dict[str, str]] = {}
    manuals: dict[str, ManPage] = {}
    for path in sorted(root.glob("*.html")) + sorted(root.glob("*/*.html")):
        if path.is_symlink():  # index.html is git.html again
            continue
        doc_id = path.relative_to(root).as_posix().removesuffix(".html")
        document, man = convert_page(path, doc_id)
        if document["text"]:
            documents[doc_id] = document
        if man:
            manuals[doc_id] = man
    for path in sorted(args.relnotes.glob("*.txt")):
        document = convert_release_notes(path)
        if document["text"]:
            documents[document["_id"]] = document

    grades: dict[str, dict[str, int]] = {}  # query text -> doc -> grade
    for doc_id, man in sorted(manuals.items()):
        text = query_text(man)
        if len(text.split()) < 2 or doc_id not in documents:
            continue
        judged = grades.setdefault(text, {})
        judged[doc_id] = 2
        for linked in sorted(man.see_also):
            judged.setdefault(linked, 1)

    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for doc_id in sorted(documents):
            out.write(json.dumps(documents[doc_id], ensure_ascii=False) + "\n")
    texts = sorted(grades, key=lambda t: (min(d for d, g in grades[t].items() if g == 2), t))
    with (args.out / "queries.jsonl").open("w", encoding="utf-8") as out:
        for number, text in enumerate(texts, start=1):
            out.write(json.dumps({"_id": f"q{number:03d}", "text": text}, ensure_ascii=False) + "\n")
    with (args.out / "qrels.tsv").open("w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for number, text in enumerate(texts, start=1):
            for doc, grade in sorted(grades[text].items(), key=lambda item: (-item[1], item[0])):
                if doc in documents:
                    out.write(f"q{number:03d}\t{doc}\t{grade}\n")
    print(f"wrote {args.out}: {len(documents)} documents, {len(texts)} queries from {len(manuals)} manual pages")


if __name__ == "__main__":
    main()
