"""Build the ``pymodules`` retrieval evaluation set from the Python 3.11 module index (Debian ``python3-doc``).

    apt-get install -y python3-doc wamerican
    .venv/bin/python bench/data/build_pymodules.py [--html /usr/share/doc/python3.11/html]

Writes ``bench/data/pymodules/`` in BEIR format:

- ``corpus.jsonl``: every page of the library reference (``library/*.html``), one document per
  page, converted to Markdown-ish text with its section headings kept and capped at about 6000
  characters. A module page's title and first heading are cut to the module's name: their
  tagline (``zipfile — Work with ZIP archives``) often repeats the index's synopsis word for word.
- ``queries.jsonl``: one query per module of the Global Module Index (``py-modindex.html``): the
  module's one-line synopsis as the index gives it (``Read and write ZIP-format archive files``)
  with the module's own name, a ``Deprecated:`` mark and the final full stop removed (short
  keyword-style queries). The name is removed where it is written as a call, a dotted name or a
  word missing from the ``wamerican`` word list (``errno``), and kept where it is plain English
  (the ``queue`` of ``A synchronized queue class``). Modules without a synopsis, synopses of fewer
  than two or more than six words, and modules whose documentation starts beyond the kept part of
  their page (a submodule deep in its package's page) are left out; modules sharing a synopsis
  are one query.
- ``qrels.tsv``: the page documenting the module (where its ``module-`` anchor sits) = 2; the
  chapter pages whose table of contents lists that page, and the page of the nearest enclosing
  package documented on another page = 1.

The output is sorted and deterministic. The documentation is © Python Software Foundation,
PSF License Version 2 (Debian: ``/usr/share/doc/python3-doc/copyright``); the word list only
steers the name removal and is not part of the set.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

MAX_CHARS = 6000
MAX_WORDS = 6  # keyword-style queries: synopses longer than this are left out
_BLOCKS = {"p", "div", "section", "li", "dt", "dd", "tr", "table", "blockquote", "ul", "ol", "dl", "nav", "figure"}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_VOID = {"br", "hr", "img", "input", "link", "meta", "wbr", "col", "area", "base", "source"}
_TITLE_SUFFIX = re.compile(r"\s+—\s+Python [\d.]+ documentation$")


@dataclass
class Page:
    title: str = ""
    blocks: list[str] = field(default_factory=list)  # Markdown-ish blocks: headings, paragraphs, code
    anchors: dict[str, int] = field(default_factory=dict)  # id -> index of the block it precedes
    toc_links: list[str] = field(default_factory=list)  # pages listed in the page's table of contents


class _SphinxPage(HTMLParser):
    """Collects the main body of a Sphinx page as Markdown-ish blocks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self._stack: list[tuple[str, str]] = []  # (tag, role): main/skip/toc/toc1 (a top TOC entry)/li/other
        self._main = 0
        self._skip = 0
        self._toc = 0
        self._table = 0  # inside a table only rows are blocks; cells are joined with " | "
        self._buffer: list[str] = []
        self._prefix = ""
        self._heading = 0
        self._pre: list[str] | None = None
        self._in_title = False
        self._title: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        if tag == "title":
            self._in_title = True
        if tag in _VOID:
            return
        if self._skip or tag in {"script", "style"} or "headerlink" in classes or "contents" in classes:
            role = "skip"
            self._skip += 1
        elif tag == "div" and attributes.get("role") == "main":
            role = "main"
            self._main += 1
        elif "toctree-wrapper" in classes:
            role = "toc"
            self._toc += 1
        elif tag == "li":
            role = "toc1" if "toctree-l1" in classes else "li"
        else:
            role = "other"
        self._stack.append((tag, role))
        if role == "skip" or not self._main:
            return
        anchor = attributes.get("id")
        if anchor:
            self.page.anchors.setdefault(anchor, len(self.page.blocks) + bool("".join(self._buffer).strip()))
        href = attributes.get("href") or ""
        item = next((r for t, r in reversed(self._stack) if t == "li"), "")
        if tag == "a" and self._toc and item == "toc1" and href.endswith(".html") and "/" not in href:
            self.page.toc_links.append(href[: -len(".html")])
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
            open_tag, role = self._stack.pop()
            self._close(open_tag, role)
            if open_tag == tag:
                break

    def _close(self, tag: str, role: str) -> None:
        if role == "skip":
            self._skip -= 1
            return
        if not self._main:
            return
        if tag in _HEADINGS:
            self._flush()
            self._heading = 0
        elif tag == "pre" and self._pre is not None:
            code = "".join(self._pre).strip("\n")
            self._pre = None
            if code.strip():
                self.page.blocks.append("```\n" + code + "\n```")
        elif tag in _BLOCKS and (tag in {"tr", "table"} or not self._table):
            self._flush()
        if tag == "table":
            self._table -= 1
        if role == "toc":
            self._toc -= 1
        elif role == "main":
            self._main -= 1

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title.append(data)
        if self._skip or not self._main:
            return
        if self._pre is not None:
            self._pre.append(data)
        else:
            self._buffer.append(data)

    def _flush(self) -> None:
        text = re.sub(r"\s+", " ", "".join(self._buffer)).strip().replace("¶", "").strip()
        self._buffer = []
        if not text:
            return
        if self._heading:
            self.page.blocks.append("#" * self._heading + " " + text)
        else:
            self.page.blocks.append(self._prefix + text)
            self._prefix = ""

    def close(self) -> None:
        super().close()
        self._flush()
        self.page.title = _TITLE_SUFFIX.sub("", re.sub(r"\s+", " ", "".join(self._title)).strip())


def parse(path: Path) -> Page:
    parser = _SphinxPage()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    parser.close()
    return parser.page


def render(blocks: list[str]) -> tuple[str, int]:
    """The blocks as text cut at a block boundary near MAX_CHARS, and how many blocks were kept whole."""
    text = ""
    for kept, block in enumerate(blocks):
        if text and len(text) + 2 + len(block) > MAX_CHARS:
            return text, kept
        text = text + "\n\n" + block if text else block
        if len(text) > MAX_CHARS:  # a single block longer than the cap: keep its start
            return text[:MAX_CHARS].rsplit("\n", 1)[0], kept
    return text, len(blocks)


class _ModuleIndex(HTMLParser):
    """Rows of ``py-modindex.html``: (page, module, synopsis)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[tuple[str, str, str]] = []
        self._cell = 0
        self._target: tuple[str, str] | None = None
        self._em = False
        self._synopsis: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href") or ""
        if tag == "tr":
            self._cell, self._target, self._synopsis = 0, None, []
        elif tag == "td":
            self._cell += 1
        elif tag == "a" and "#module-" in href:
            page, _, anchor = href.partition("#module-")
            self._target = (page.removesuffix(".html"), anchor)
        elif tag == "em":
            self._em = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "em":
            self._em = False
        elif tag == "tr" and self._target:
            synopsis = re.sub(r"\s+", " ", "".join(self._synopsis)).strip()
            self.rows.append((self._target[0], self._target[1], synopsis))
            self._target = None

    def handle_data(self, data: str) -> None:
        if self._em and self._target and self._cell >= 3:  # the synopsis cell, not the platform note
            self._synopsis.append(data)


def query_text(module: str, synopsis: str, words: set[str]) -> str:
    """The synopsis as plain text without the module's name, a ``Deprecated:`` mark or the final full stop.

    The name is removed where it is written as a call (``crypt()``), as the full dotted name, or as a
    word that is not ordinary English (``errno``, ``syslog``); an English word that merely is the
    module's name (the ``queue`` of ``A synchronized queue class``) is kept.
    """
    text = re.sub(r"^Deprecated:\s*", "", synopsis)
    text = re.sub(r":pep:`(\d+)`", r"PEP \1", text)
    text = re.sub(r":[\w:]+:`~([^`]*\.)?([^`.]*)`", r"\2", text)
    text = re.sub(r":[\w:]+:`([^`]*)`", r"\1", text)
    last = module.rsplit(".", 1)[-1]
    parts = re.split(r"(``[^`]*``)", text)  # code literals are left alone
    for index in range(0, len(parts), 2):
        for name in sorted({module, last}):
            parts[index] = re.sub(rf"(?<![\w.]){re.escape(name)}\(\)", " ", parts[index])
            if "." in name or name.lower() not in words:
                parts[index] = re.sub(rf"(?<![\w.]){re.escape(name)}(?!\w)", " ", parts[index])
    text = re.sub(r"``([^`]*)``", r"\1", "".join(parts))
    text = re.sub(r"\s+([,;:)])", r"\1", re.sub(r"\s+", " ", text))
    return text.strip(" .,;:-–—")


def untagged(title: str, modules: set[str]) -> str:
    """A module page's title without its tagline (``zipfile — Work with ZIP archives`` gives ``zipfile``)."""
    match = re.match(r"([\w.]+)\s*(?:—|–|:)\s", title)
    return match.group(1) if match and match.group(1) in modules else title


def english_words(path: Path) -> set[str]:
    """The lower-case words of a word list (Debian ``wamerican``)."""
    return {line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip().islower()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--html", type=Path, default=Path("/usr/share/doc/python3.11/html"))
    parser.add_argument("--words", type=Path, default=Path("/usr/share/dict/american-english"))
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "pymodules")
    args = parser.parse_args()
    root: Path = args.html

    documents: dict[str, dict[str, str]] = {}
    kept_anchors: dict[str, set[str]] = {}  # page -> anchors within its kept text
    toc_parents: dict[str, set[str]] = {}  # page -> chapter pages listing it
    index = _ModuleIndex()
    index.feed((root / "py-modindex.html").read_text(encoding="utf-8"))
    index.close()
    modules = {module for _, module, _ in index.rows}
    for path in sorted((root / "library").glob("*.html")):
        name = f"library/{path.stem}"
        page = parse(path)
        title = untagged(page.title, modules)
        if page.blocks and page.blocks[0].startswith("# "):
            page.blocks[0] = "# " + untagged(page.blocks[0][2:], modules)
        text, kept = render(page.blocks)
        if not text:
            continue
        documents[name] = {"_id": name, "title": title, "text": text}
        kept_anchors[name] = {anchor for anchor, block in page.anchors.items() if block < kept}
        for linked in page.toc_links:
            if f"library/{linked}" != name:
                toc_parents.setdefault(f"library/{linked}", set()).add(name)

    page_of_module = {module: home for home, module, _ in index.rows}
    words = english_words(args.words)
    grades: dict[str, dict[str, int]] = {}  # query text -> doc -> grade
    skipped: list[str] = []  # modules without a usable synopsis or documented beyond the kept text
    for home, module, synopsis in sorted(index.rows, key=lambda row: row[1]):
        text = query_text(module, synopsis, words)
        if not 2 <= len(text.split()) <= MAX_WORDS or f"module-{module}" not in kept_anchors.get(home, set()):
            skipped.append(module)
            continue
        judged = grades.setdefault(text, {})
        judged[home] = 2
        for parent in sorted(toc_parents.get(home, set())):
            judged.setdefault(parent, 1)
        package = module
        while "." in package:
            package = package.rsplit(".", 1)[0]
            if page_of_module.get(package, home) != home:
                judged.setdefault(page_of_module[package], 1)
                break

    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for name in sorted(documents):
            out.write(json.dumps(documents[name], ensure_ascii=False) + "\n")
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
    print(f"wrote {args.out}: {len(documents)} documents, {len(texts)} queries ({len(skipped)} modules left out)")


if __name__ == "__main__":
    main()
