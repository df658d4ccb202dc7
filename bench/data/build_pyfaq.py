"""Build the ``pyfaq`` retrieval evaluation set from the Python 3.11 FAQ (Debian ``python3-doc``).

    apt-get install -y python3-doc  # the HTML itself comes in python3.11-doc
    .venv/bin/python bench/data/build_pyfaq.py [--html /usr/share/doc/python3.11/html]

Writes ``bench/data/pyfaq/`` in BEIR format:

- ``queries.jsonl``: one query per question of the Python FAQ (``faq/*.html``): the question's
  own heading, verbatim (long natural-language questions). Questions asked twice with the same
  words (``What is Python?``) are one query judged against both answers.
- ``corpus.jsonl``: every FAQ answer as its own document (the question heading is left out, so
  the query is not the document's own title; the FAQ's name and category are kept as ``#`` and
  ``##`` headings), plus every page of the library reference, tutorial, HOWTOs and language
  reference, the glossary, and any other page an answer links to, converted to Markdown-ish
  text with their section headings kept and capped at about 6000 characters.
- ``qrels.tsv``: a question's own answer = 2 (an answer that only says "See the next question."
  passes the 2 on to the next answer as well); every page and every other FAQ answer its answer
  links to = 1.

The output is sorted and deterministic. The documentation is © Python Software Foundation,
PSF License Version 2 (Debian: ``/usr/share/doc/python3-doc/copyright``).
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
PAGE_FOLDERS = ("library", "tutorial", "howto", "reference")
EXTRA_PAGES = ("glossary",)
NOT_CONTENT = {"genindex", "py-modindex", "search", "contents", "index", "copyright", "license", "bugs", "about"}
_BLOCKS = {"p", "div", "section", "li", "dt", "dd", "tr", "table", "blockquote", "ul", "ol", "dl", "nav", "figure"}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_VOID = {"br", "hr", "img", "input", "link", "meta", "wbr", "col", "area", "base", "source"}
_TITLE_SUFFIX = re.compile(r"\s+—\s+Python [\d.]+ documentation$")


@dataclass
class Block:
    kind: str  # "heading", "text" or "code"
    text: str
    sections: tuple[str, ...]
    level: int = 0

    def render(self, shift: int = 0) -> str:
        if self.kind == "heading":
            return "#" * max(1, min(6, self.level + shift)) + " " + self.text
        if self.kind == "code":
            return "```\n" + self.text + "\n```"
        return self.text


@dataclass
class Page:
    title: str = ""
    blocks: list[Block] = field(default_factory=list)
    links: list[tuple[tuple[str, ...], str]] = field(default_factory=list)  # (sections, href)
    anchors: dict[str, tuple[str, ...]] = field(default_factory=dict)  # id -> sections it sits in
    children: dict[str, list[str]] = field(default_factory=dict)  # section id -> child section ids
    headings: dict[str, Block] = field(default_factory=dict)  # section id -> its heading


class _SphinxPage(HTMLParser):
    """Collects the main body of a Sphinx page as blocks, with their sections and links."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self._stack: list[tuple[str, str]] = []  # (tag, role): role is main/skip/section/other
        self._main = 0
        self._skip = 0
        self._sections: list[str] = []
        self._buffer: list[str] = []
        self._prefix = ""
        self._heading = 0
        self._table = 0  # inside a table only rows are blocks; cells are joined with " | "
        self._pre: list[str] | None = None
        self._in_title = False
        self._title: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        if tag == "title":
            self._in_title = True
        if tag in _VOID:
            if tag == "br" and self._pre is not None:
                self._pre.append("\n")
            return
        if self._skip or tag in {"script", "style"} or "headerlink" in classes or "contents" in classes:
            role = "skip"
            self._skip += 1
        elif tag == "div" and attributes.get("role") == "main":
            role = "main"
            self._main += 1
        elif tag == "section" and self._main:
            role = "section"
            parent = self._sections[-1] if self._sections else ""
            section = attributes.get("id") or f"_anon{len(self.page.children)}"
            self.page.children.setdefault(parent, []).append(section)
            self.page.children.setdefault(section, [])
            self._sections.append(section)
        else:
            role = "other"
        self._stack.append((tag, role))
        if role == "skip" or not self._main:
            return
        anchor = attributes.get("id")
        if anchor:
            self.page.anchors.setdefault(anchor, tuple(self._sections))
        if tag == "a" and attributes.get("href"):
            self.page.links.append((tuple(self._sections), attributes["href"] or ""))
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
                self.page.blocks.append(Block("code", code, tuple(self._sections)))
        elif tag in _BLOCKS and (tag in {"tr", "table"} or not self._table):
            self._flush()
        if tag == "table":
            self._table -= 1
        if role == "section":
            self._sections.pop()
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
        sections = tuple(self._sections)
        if self._heading:
            block = Block("heading", text, sections, self._heading)
            if sections and sections[-1] not in self.page.headings:
                self.page.headings[sections[-1]] = block
        else:
            block = Block("text", self._prefix + text, sections)
            self._prefix = ""
        self.page.blocks.append(block)

    def close(self) -> None:
        super().close()
        self._flush()
        self.page.title = _TITLE_SUFFIX.sub("", re.sub(r"\s+", " ", "".join(self._title)).strip())


def parse(path: Path) -> Page:
    parser = _SphinxPage()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    parser.close()
    return parser.page


def render(blocks: list[Block], shift: int = 0, head: str = "") -> str:
    """Blocks as Markdown-ish text, cut at a block boundary near MAX_CHARS."""
    text = head
    for block in blocks:
        piece = block.render(shift)
        if text and len(text) + 2 + len(piece) > MAX_CHARS:
            if not text.strip() or text == head:
                text = (text + "\n\n" + piece)[:MAX_CHARS].rsplit("\n", 1)[0]
            break
        text = text + "\n\n" + piece if text else piece
    return text.strip()


def resolve(source: str, href: str) -> tuple[str, str] | None:
    """(page, fragment) of a link inside the documentation tree, or None for an outside link."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", href):
        return None
    target, _, fragment = href.partition("#")
    if not target:
        return source, fragment
    if not target.endswith(".html"):
        return None
    page = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))[: -len(".html")]
    return None if page.startswith("..") else (page, fragment)


def leaf_sections(page: Page, section: str, ancestors: list[str]) -> list[tuple[str, list[str]]]:
    """The sections without subsections below ``section``, each with its ancestors below ``section``."""
    leaves: list[tuple[str, list[str]]] = []
    for child in page.children[section]:
        if page.children[child]:
            leaves += leaf_sections(page, child, [*ancestors, child])
        else:
            leaves.append((child, ancestors))
    return leaves


@dataclass
class Question:
    text: str
    answers: list[str]  # document ids
    links: set[tuple[str, str]]  # (page, fragment)


def faq_answers(root: Path) -> tuple[list[Question], list[dict[str, str]], dict[tuple[str, str], str]]:
    """The questions, the answer documents and a map (faq page, anchor) -> answer document id."""
    questions: list[Question] = []
    documents: list[dict[str, str]] = []
    answer_of_anchor: dict[tuple[str, str], str] = {}
    for path in sorted((root / "faq").glob("*.html")):
        if path.stem == "index":
            continue
        source = f"faq/{path.stem}"
        page = parse(path)
        top = page.children.get("", [])
        if len(top) != 1:
            raise SystemExit(f"{path}: expected one top section, found {top}")
        leaves = leaf_sections(page, top[0], [])
        page_heading = page.headings[top[0]].text
        pointer: Question | None = None
        for number, (section, ancestors) in enumerate(leaves, start=1):
            doc_id = f"{source}/{number:02d}"
            question = page.headings[section]
            blocks = [b for b in page.blocks if section in b.sections and b is not question]
            head = "\n\n".join(
                ["# " + page_heading] + ["#" * (i + 2) + " " + page.headings[a].text for i, a in enumerate(ancestors)]
            )
            text = render(blocks, head=head)
            if text == head:
                continue
            title = " — ".join([page_heading] + [page.headings[a].text for a in ancestors])
            documents.append({"_id": doc_id, "title": title, "text": text})
            for anchor, sections in page.anchors.items():
                if section in sections:
                    answer_of_anchor[(source, anchor)] = doc_id
            links: set[tuple[str, str]] = set()
            for sections, href in page.links:
                target = resolve(source, href) if section in sections else None
                if target:
                    links.add(target)
            if pointer is not None:  # the previous answer was only "See the next question."
                pointer.answers.append(doc_id)
            questions.append(Question(question.text, [doc_id], links))
            pointer = questions[-1] if re.fullmatch(r"See the next question\.?", text[len(head) :].strip()) else None
    return questions, documents, answer_of_anchor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--html", type=Path, default=Path("/usr/share/doc/python3.11/html"))
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "pyfaq")
    args = parser.parse_args()
    root: Path = args.html

    questions, documents, answer_of_anchor = faq_answers(root)
    # Judgements: own answer 2; linked FAQ answers and linked pages 1.
    grades: dict[str, dict[str, int]] = {}  # normalised question text -> doc -> grade
    texts: dict[str, str] = {}
    linked_pages: set[str] = set()
    for question in questions:
        key = " ".join(question.text.lower().split())
        texts.setdefault(key, question.text)
        judged = grades.setdefault(key, {})
        for answer in question.answers:
            judged[answer] = 2
        for linked, fragment in sorted(question.links):
            if linked.startswith("faq/"):
                target = answer_of_anchor.get((linked, fragment))
                if target and target not in question.answers:
                    judged.setdefault(target, 1)
            elif linked.split("/")[-1] not in NOT_CONTENT:
                linked_pages.add(linked)
                judged.setdefault(linked, 1)

    pages = {f"{folder}/{p.stem}" for folder in PAGE_FOLDERS for p in (root / folder).glob("*.html")}
    pages |= set(EXTRA_PAGES) | linked_pages
    for name in sorted(pages):
        path = root / f"{name}.html"
        if not path.exists():
            continue
        page = parse(path)
        text = render(page.blocks)
        if len(text) >= 200 or name in linked_pages:
            documents.append({"_id": name, "title": page.title, "text": text})
    present = {d["_id"] for d in documents if d["text"]}

    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for document in sorted(documents, key=lambda d: d["_id"]):
            if document["_id"] in present:
                out.write(json.dumps(document, ensure_ascii=False) + "\n")
    keys = sorted(grades, key=lambda k: min(d for d, g in grades[k].items() if g == 2))
    with (args.out / "queries.jsonl").open("w", encoding="utf-8") as out:
        for number, key in enumerate(keys, start=1):
            out.write(json.dumps({"_id": f"q{number:03d}", "text": texts[key]}, ensure_ascii=False) + "\n")
    with (args.out / "qrels.tsv").open("w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for number, key in enumerate(keys, start=1):
            for doc, grade in sorted(grades[key].items(), key=lambda item: (-item[1], item[0])):
                if doc in present:
                    out.write(f"q{number:03d}\t{doc}\t{grade}\n")
    print(f"wrote {args.out}: {len(present)} documents, {len(keys)} queries")


if __name__ == "__main__":
    main()
