"""Build the retrieval evaluation corpus from the PostgreSQL 15 manual (Debian ``postgresql-doc-15``).

    apt-get install postgresql-doc-15
    .venv/bin/python bench/data/build_pgdocs.py [--html /usr/share/doc/postgresql-doc-15/html]

Writes ``bench/data/pgdocs/corpus.jsonl`` in BEIR format (``{"_id", "title", "text"}``): one
document per manual page of the chosen chapters, converted to Markdown-ish text with
its section headings kept (so the importer chunks it like a real page) and capped in
length. The queries and relevance judgements beside it were written by hand for this
corpus. The manual is © The PostgreSQL Global Development Group, PostgreSQL License.
"""

from __future__ import annotations

import argparse
import json
import re
from html.parser import HTMLParser
from pathlib import Path

PREFIXES = (
    "backup", "continuous-archiving", "app-pgdump", "app-pgrestore", "app-pgbasebackup", "app-psql",
    "app-vacuumdb", "auth-", "client-authentication", "datatype-", "ddl-", "dml-", "functions-", "indexes-",
    "mvcc", "explicit-locking", "transaction-iso", "logical-replication", "hot-standby", "high-availability",
    "warm-standby", "wal-", "routine-vacuuming", "routine-reindex", "runtime-config-", "textsearch-", "tutorial-",
    "performance-tips", "populate", "using-explain", "pgtrgm", "pgstatstatements", "pgcrypto", "queries-",
    "plpgsql-", "rowtypes", "arrays", "sql-createindex", "sql-createpolicy", "sql-copy", "sql-vacuum",
    "sql-createtable", "sql-altertable", "sql-select", "sql-insert", "sql-explain", "sql-analyze",
    "sql-createrole", "sql-grant", "sql-createpublication", "sql-createsubscription", "postgres-fdw",
    "hstore", "ltree", "citext", "uuid-ossp", "tablefunc", "pgbench", "pgupgrade", "upgrading",
    "monitoring-stats", "monitoring-locks", "disk-usage", "locale", "collation", "charset",
)  # fmt: skip
MAX_CHARS = 6000
_BLOCKS = {"p", "pre", "li", "dt", "dd", "tr", "div", "table", "blockquote", "h1", "h2", "h3", "h4"}


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip_depth = 0
        self.title = ""
        self._in_title = False
        self._heading: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = dict(attrs).get("class") or ""
        if self.skip_depth or "navheader" in classes or "navfooter" in classes or tag in {"script", "style"}:
            self.skip_depth += 1
            return
        if tag == "title":
            self._in_title = True
        if tag in {"h1", "h2", "h3", "h4"}:
            self._heading = tag
            self.parts.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag in _BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if self.skip_depth:
            self.skip_depth -= 1
            return
        if tag == "title":
            self._in_title = False
        if tag == self._heading:
            self._heading = None
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self.skip_depth:
            return
        self.parts.append(re.sub(r"\s+", " ", data) if self._heading else data)


def convert(path: Path) -> tuple[str, str]:
    extractor = _Extractor()
    extractor.feed(path.read_text(encoding="utf-8", errors="replace"))
    text = "".join(extractor.parts)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n[ \t]+", "\n", text)  # indentation would turn prose into Markdown code blocks
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    title = re.sub(r"\s+", " ", extractor.title).strip()
    title = re.sub(r"^PostgreSQL: Documentation: \d+: ", "", title)
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS].rsplit("\n\n", 1)[0]
    return title, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--html", type=Path, default=Path("/usr/share/doc/postgresql-doc-15/html"))
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "pgdocs" / "corpus.jsonl")
    args = parser.parse_args()
    files = sorted(p for p in args.html.glob("*.html") if p.stem.startswith(PREFIXES))
    with args.out.open("w", encoding="utf-8") as out:
        for file in files:
            title, text = convert(file)
            if len(text) < 200:
                continue
            out.write(json.dumps({"_id": file.stem, "title": title, "text": text}, ensure_ascii=False) + "\n")
    print(f"wrote {args.out} ({len(files)} pages considered)")


if __name__ == "__main__":
    main()
