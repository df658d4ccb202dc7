"""Worker-seconds of the worst inputs found, each beside an ordinary twin of the same size.

    .venv/bin/python -m bench.hostile [--rounds 3]

Builds a throwaway database (``brain_bench_hostile``), then for each pair runs the path a
worker or web process would run, in this process, and prints the median CPU seconds of
each and their ratio (hostile / ordinary). Every hostile input should cost at most 5x its
twin. The pairs:

- documents through ``document_ingest`` + ``extraction_run`` (convert, mask, chunk, embed,
  store): a SubRip file with a 50,000-digit line (the ``srt`` package's regex took minutes),
  a text file of a digit and 200,000 line breaks (the type sniff's SubRip test was quadratic),
  HTML nested 20,000 elements deep, a DOCX zip bomb, a DOCX of 100,000 one-word paragraphs
  (python-docx built an object for each: 360 MB and 10 s for 300,000), a WebVTT file of one huge cue;
- HTML to text (``html_text``, uploads and mail): 100,000 broken end tags (Python's
  ``html.parser``, under BeautifulSoup before, was quadratic: 200 KB took 6.6 s);
- page validation (``page_validate``): a YAML alias bomb, frontmatter nested 30,000 deep;
- request bodies (``brain.inputs.parse_json``): 100,000 nested brackets;
- rendering (``rendered_text``, ``render_markdown``): 10,000 nested blockquotes, 16,000 repeated
  headings (their ids once counted up from 1 for each repeat: 33 s);
- the secret detector (``find``): 200 KB of single digits and separators, 8,000 unclosed
  private-key blocks, 40,000 IBAN-like starts, 20,000 URLs with credentials in them (a line
  number counted from the top for each finding: 2.4 MB took 60 s), "password:" then 100,000
  blanks (quadratic: 20,000 took 18 s, in every memory capture and upload title), 100,000
  underscores (20,000 took 15 s); and a JSON body whose
  string never closes;
- contradiction checks (``contradiction``): 4,000 years against 4,000 other years (every pair
  compared: 46 s at 20,000 characters), 10,000 bare numbers (each scanned back for its word);
- review and history diffs (``line_diff``): 50 line pairs of repeated words, 2,000 edited
  paragraphs with the blank line between them (20 s and 174 s while every equal pair was searched);
- inbound mail (``parse_mail``): 40 attachment parts of 50 KB of folded parameters each (the
  parser re-read each part's headers on every question: 45 s);
- calendars (``_own_zones``): 16,000 VTIMEZONE or STANDARD openings that never close (each was
  searched to the end of the file: 272 KB took 48 s);
- vault imports (``read_note``, ``read_page``): an Obsidian note of 32,000 unclosed code
  fences, a Notion page of 80,000 open brackets and one whose heading is 40,000 spaces (each
  took seconds to minutes, quadratic, before the note's size was checked).
"""

from __future__ import annotations

import argparse
import io
import random
import statistics
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

if not __package__:
    # Run as a file: replace (not prepend to) the script's own folder, where bench/secrets.py
    # would shadow the standard library's `secrets` module.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.scratch import drop_scratch, setup_scratch_django

WORDS = (
    "customer contract renewal pricing discount approval escalation account manager quarterly review onboarding "
    "checklist incident response runbook deployment release rollback database backup restore retention policy"
).split()


def prose(rng: random.Random, size: int) -> str:
    words: list[str] = []
    length = 0
    while length < size:
        words.append(rng.choice(WORDS))
        length += len(words[-1]) + 1
    return " ".join(words)[:size]


def wrapped(rng: random.Random, size: int, width: int = 72) -> str:
    """Ordinary prose as documents have it: lines of about ``width`` characters."""
    text = prose(rng, size)
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))[:size]


def srt_pair(rng: random.Random) -> tuple[bytes, bytes]:
    hostile = ("1\n00:00:01,000 --> 00:00:02,000\nhello\n\n2\n" + "1" * 50_000 + "\n").encode()
    cues: list[str] = []
    n = 1
    while sum(len(cue) for cue in cues) < len(hostile):
        cues.append(f"{n}\n00:00:{n % 60:02d},000 --> 00:00:{n % 60:02d},500\n{prose(rng, 60)}\n\n")
        n += 1
    return hostile, "".join(cues).encode()[: len(hostile)]


def newline_pair(rng: random.Random) -> tuple[bytes, bytes]:
    """A digit and a run of line breaks: the SubRip sniff tried every split of the run
    (quadratic, in the upload request: 40 KB took 17 s)."""
    bad = b"1" + b"\n" * 200_000 + b"x"
    return bad, wrapped(rng, len(bad)).encode()


def html_pair(rng: random.Random) -> tuple[bytes, bytes]:
    depth = 20_000
    hostile = ("<html><body>" + "<div>" * depth + "deep" + "</div>" * depth + "</body></html>").encode()
    paragraphs: list[str] = []
    while sum(len(p) for p in paragraphs) < len(hostile):
        paragraphs.append(f"<p>{prose(rng, 200)}</p>")
    return hostile, ("<html><body>" + "".join(paragraphs) + "</body></html>").encode()


def docx_pair(rng: random.Random) -> tuple[bytes, bytes]:
    import docx

    document = docx.Document()
    for _ in range(40):
        document.add_paragraph(prose(rng, 400))
    buffer = io.BytesIO()
    document.save(buffer)
    ordinary = buffer.getvalue()
    # The same package with one member that inflates 1,000-fold: a zip bomb.
    bomb = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(ordinary)) as source, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            out.writestr(info, source.read(info))
        out.writestr("word/media/padding.bin", b"\0" * (len(ordinary) * 1000))
    return bomb.getvalue(), ordinary


def dense_docx_pair(rng: random.Random) -> tuple[bytes, bytes]:
    """A document of 100,000 one-word paragraphs, and one of 400-character paragraphs as large."""
    import docx

    def package(paragraphs: list[str]) -> bytes:
        document = docx.Document()
        buffer = io.BytesIO()
        document.save(buffer)
        body = "".join(f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>" for text in paragraphs).encode()
        out = io.BytesIO()
        with (
            zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as source,
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z,
        ):
            for info in source.infolist():
                data = source.read(info)
                z.writestr(
                    info,
                    data.replace(b"<w:body>", b"<w:body>" + body) if info.filename == "word/document.xml" else data,
                )
        return out.getvalue()

    dense = package([rng.choice(WORDS) for _ in range(100_000)])
    ordinary: list[str] = []
    while len(package(ordinary)) < len(dense):
        ordinary.extend(prose(rng, 400) for _ in range(200))
    return dense, package(ordinary)


def vtt_pair(rng: random.Random) -> tuple[bytes, bytes]:
    hostile = ("WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n" + "x" * 60_000 + "\n").encode()
    cues = ["WEBVTT\n\n"]
    n = 1
    while sum(len(cue) for cue in cues) < len(hostile):
        cues.append(f"00:00:{n % 60:02d}.000 --> 00:00:{n % 60:02d}.500\n{prose(rng, 60)}\n\n")
        n += 1
    return hostile, "".join(cues).encode()[: len(hostile)]


def frontmatter(extra: str, body: str) -> str:
    return (
        "---\ntype: topic\nowner: bench\nstatus: approved\nchange_policy: gate\nas_of: 2026-11-30\n"
        f"title: Bench\n{extra}---\n\n# Bench\n\n{body}\n"
    )


def yaml_pairs(rng: random.Random) -> list[tuple[str, str, str]]:
    laughs = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
        f"{name}: &{name} [{','.join([f'*{prev}'] * 9)}]\n" for prev, name in zip("abcdefgh", "bcdefghi", strict=False)
    )
    bomb = frontmatter(laughs, "x")
    deep = frontmatter("category: " + "[" * 30_000 + "]" * 30_000 + "\n", "x")
    return [
        ("YAML alias bomb", bomb, frontmatter("", prose(rng, len(bomb)))),
        ("frontmatter nested 30,000 deep", deep, frontmatter("", prose(rng, len(deep)))),
    ]


def cpu_seconds(work: Callable[[], object], rounds: int, *, hostile: bool) -> tuple[float, str]:
    """Median CPU seconds of ``work`` and how it ended (a refusal is expected of hostile input)."""
    timings, outcome = [], "ok"
    for _ in range(rounds):
        started = time.process_time()
        try:
            result = work()
            outcome = result if isinstance(result, str) and len(result) <= 12 else "ok"  # a status word
        except Exception as exc:
            if not hostile:
                raise
            outcome = f"refused ({type(exc).__name__})"
        timings.append(time.process_time() - started)
    return statistics.median(timings), outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    args = parser.parse_args()
    setup_scratch_django("brain_bench_hostile")

    from brain import embeddings
    from brain.inputs import parse_json
    from brain.text.secrets import find
    from corpus.rendering import render_markdown, rendered_text
    from corpus.services import page_validate
    from grants.principals import SYSTEM
    from grants.services import grant_issue, member_create
    from ingest.models import Document
    from ingest.services import document_ingest, extraction_run

    bench = member_create(actor=SYSTEM, username="bench")
    grant_issue(actor=SYSTEM, member=bench, path="captures/", permission="suggest")
    embeddings.embed(["warm up the model"])
    rng = random.Random(7)
    counter = iter(range(1_000_000))

    def ingest(filename: str, data: bytes) -> Callable[[], object]:
        def work() -> object:
            # The same bytes again would return the first extraction: forget the last round's.
            Document.objects.all().delete()
            extraction = document_ingest(
                actor=bench, filename=filename, data=data, key=f"b/{next(counter)}", enqueue=False
            )
            return extraction_run(extraction.pk)

        return work

    rows: list[tuple[str, int, float, float, str]] = []

    def pair(label: str, size: int, hostile: Callable[[], object], ordinary: Callable[[], object]) -> None:
        bad, outcome = cpu_seconds(hostile, args.rounds, hostile=True)
        good, usual = cpu_seconds(ordinary, args.rounds, hostile=False)
        rows.append((label, size, bad, good, f"{outcome} / {usual}"))
        print(f"  measured: {label}", flush=True)

    for label, filename, (bad, good) in (
        ("SubRip, a 50,000-digit line", "x.srt", srt_pair(rng)),
        ("HTML nested 20,000 deep", "x.html", html_pair(rng)),
        ("DOCX zip bomb (1,000x)", "x.docx", docx_pair(rng)),
        ("DOCX, 100,000 one-word paragraphs", "x.docx", dense_docx_pair(rng)),
        ("WebVTT, one 60 KB cue", "x.vtt", vtt_pair(rng)),
        ("type sniff, a number then 200,000 breaks", "x.txt", newline_pair(rng)),
    ):
        pair(label, len(bad), ingest(filename, bad), ingest(filename, good))
    for label, bad_page, good_page in yaml_pairs(rng):
        pair(
            label, len(bad_page),
            lambda page=bad_page: page_validate(actor=SYSTEM, path="topics/bench.md", markdown=page),
            lambda page=good_page: page_validate(actor=SYSTEM, path="topics/bench.md", markdown=page),
        )  # fmt: skip
    from brain.text.html import html_text

    broken = "<html><body>" + "</" * 100_000
    tagged = "<html><body>" + "".join(f"<p>{prose(rng, 200)}</p>" for _ in range(len(broken) // 207))
    pair("HTML to text, 100,000 broken end tags", len(broken), lambda: html_text(broken), lambda: html_text(tagged))
    deep_json = "[" * 100_000 + "]" * 100_000
    plain_json = '{"content": "' + prose(rng, len(deep_json) - 16) + '"}'
    pair("JSON nested 100,000 deep", len(deep_json), lambda: parse_json(deep_json), lambda: parse_json(plain_json))
    quotes = "> " * 10_000 + "deep\n"
    pair(
        "Markdown, 10,000 nested quotes", len(quotes),
        lambda: rendered_text(quotes, page_path="topics/x.md"),
        lambda: rendered_text(prose(rng, len(quotes)), page_path="topics/x.md"),
    )  # fmt: skip
    repeats = "## a\n" * 16_000  # heading ids once counted up from 1 for every repeat (33 s)
    pair(
        "Markdown, 16,000 repeated headings", len(repeats),
        lambda: render_markdown(repeats, page_path="topics/x.md"),
        lambda: render_markdown("".join(f"## {word}\n" for word in prose(rng, len(repeats)).split()[:16_000]),
                                page_path="topics/x.md"),
    )  # fmt: skip
    digits = " ".join(rng.choice("0123456789") for _ in range(100_000))
    text = wrapped(rng, len(digits))
    pair("detector, 200 KB of spaced digits", len(digits), lambda: find(digits), lambda: find(text))
    begins = "-----BEGIN PRIVATE KEY-----\n" * 8_000
    begins_twin = wrapped(rng, len(begins))
    pair("detector, 8,000 unclosed key blocks", len(begins), lambda: find(begins), lambda: find(begins_twin))
    ibanish = "GB82 " * 40_000
    ibanish_twin = wrapped(rng, len(ibanish))
    pair("detector, 40,000 IBAN-like starts", len(ibanish), lambda: find(ibanish), lambda: find(ibanish_twin))
    urls = "https://u:p@h/" * 20_000  # 20,000 findings: line numbers counted from the top were quadratic
    urls_twin = wrapped(rng, len(urls))
    pair("detector, 20,000 credentialed URLs", len(urls), lambda: find(urls), lambda: find(urls_twin))
    # A prose cue, then a run of blanks the value never follows: the cue's two whitespace arms
    # split the run every way (20,000 spaces took 18 s; every memory, title and note is scanned).
    blanks = "password:" + " " * 100_000 + '""'
    blanks_twin = wrapped(rng, len(blanks))
    pair("detector, a cue then 100,000 blanks", len(blanks), lambda: find(blanks), lambda: find(blanks_twin))
    # A run of underscores: every underscore retried the closing-marker arm to the run's end.
    underscores = "a" + "_" * 100_000 + "a"
    underscores_twin = wrapped(rng, len(underscores))
    pair("detector, 100,000 underscores", len(underscores), lambda: find(underscores),
         lambda: find(underscores_twin))  # fmt: skip
    from memory.contradictions import contradiction

    # Contradiction checks read two memories of up to 20,000 characters each: every pair of
    # dates was compared (46 s), and every bare number scanned back for its word (quadratic).
    years = ("1990 " * 4000, "1991 " * 4000)
    ones = "1 " * 10_000
    sentences_twin = (prose(rng, 20_000), prose(rng, 20_000))
    pair("contradiction, 4,000 years against 4,000", 40_000, lambda: contradiction(*years),
         lambda: contradiction(*sentences_twin))  # fmt: skip
    pair("contradiction, 10,000 bare numbers", 40_000, lambda: contradiction(ones, ones),
         lambda: contradiction(*sentences_twin))  # fmt: skip
    quotes = '{"a": "' + '\\"' * 50_000 + "[" * 70
    flat = '{"a": "' + prose(rng, len(quotes) - 9) + '"}'
    pair("JSON, an unclosed string of escapes", len(quotes), lambda: parse_json(quotes), lambda: parse_json(flat))

    from corpus.diffs import line_diff

    # Review and history diffs: repeated words in a line pair and the blank line between every
    # paragraph made difflib's search cubic (20 s for one line pair; 174 s for 2,000 edited
    # paragraphs) before the most repeated elements were made junk.
    repeated = ([("a " * 1000)[:2000]] * 50, [("a b " * 500)[:2000]] * 50)
    # 1,990 characters, so the edited line (+8) stays within the word diff's 2,000: at 2,000 the
    # twin skipped its word pass altogether and measured nothing (a 418x "ratio" of 94 ms to 0).
    sentences = [prose(rng, 1990) for _ in range(50)]
    edited = (sentences, [line.replace(" ", " changed ", 1) for line in sentences])
    pair("diff, 50 line pairs of repeated words", 2 * 50 * 2000,
         lambda: line_diff(*repeated), lambda: line_diff(*edited))  # fmt: skip
    paragraphs = [prose(rng, 60) for _ in range(2000)]
    spaced_old = [line for paragraph in paragraphs for line in (paragraph, "")]
    spaced_new = [line for paragraph in paragraphs for line in (paragraph + " edited", "")]
    pair("diff, 2,000 edited paragraphs", sum(map(len, spaced_old)),
         lambda: line_diff(spaced_old, spaced_new),
         lambda: line_diff(paragraphs, [paragraph + " edited" for paragraph in paragraphs]))  # fmt: skip

    from memory.vaults.notion import read_page
    from memory.vaults.obsidian import read_note

    fences = "```a\n" * 32_000
    pair(
        "Obsidian note, 32,000 unclosed fences", len(fences),
        lambda: read_note("n.md", fences.encode()), lambda: read_note("n.md", wrapped(rng, len(fences)).encode()),
    )  # fmt: skip
    brackets = "[" * 80_000
    pair(
        "Notion page, 80,000 open brackets", len(brackets),
        lambda: read_page("p.md", brackets.encode()), lambda: read_page("p.md", wrapped(rng, len(brackets)).encode()),
    )  # fmt: skip
    spaced = "# a" + " " * 40_000 + "b"
    pair(
        "Notion page, a heading of 40,000 spaces", len(spaced),
        lambda: read_page("p.md", spaced.encode()), lambda: read_page("p.md", wrapped(rng, len(spaced)).encode()),
    )  # fmt: skip

    from memory.calendars import _own_zones

    unclosed = "BEGIN:VCALENDAR\r\n" + "BEGIN:VTIMEZONE\r\n" * 16_000 + "END:VCALENDAR\r\n"
    standards = "BEGIN:VTIMEZONE\r\nTZID:X\r\n" + "BEGIN:STANDARD\r\n" * 16_000 + "END:VTIMEZONE\r\n"
    events = "".join(
        f"BEGIN:VEVENT\r\nUID:e{n}@x\r\nSUMMARY:{prose(rng, 40)}\r\nEND:VEVENT\r\n" for n in range(len(unclosed) // 90)
    )
    pair("calendar, 16,000 unclosed zones", len(unclosed), lambda: _own_zones(unclosed), lambda: _own_zones(events))
    pair("calendar, 16,000 unclosed STANDARDs", len(standards), lambda: _own_zones(standards),
         lambda: _own_zones(events))  # fmt: skip

    from memory.mail_message import parse_mail

    head = b"From: a@example.com\r\nTo: b@example.com\r\nSubject: x\r\nMIME-Version: 1.0\r\n"
    folded = b"".join(b";\r\n p%d=v" % n for n in range(5_000))
    disposition = b'Content-Disposition: attachment; filename="a.txt"'
    part = b"--b\r\nContent-Type: text/plain\r\n" + disposition + folded + b"\r\n\r\nx\r\n"
    heavy = head + b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n' + part * 40 + b"--b--\r\n"
    plain_mail = head + b"Content-Type: text/plain\r\n\r\n" + wrapped(rng, len(heavy)).encode()
    pair("mail, 40 parts of 50 KB parameters", len(heavy), lambda: parse_mail(heavy), lambda: parse_mail(plain_mail))

    print(
        f"\n{'input':36} {'bytes':>9} {'hostile s':>10} {'ordinary s':>11} {'ratio':>7}  outcome (hostile / ordinary)"
    )
    worst = 0.0
    for label, size, hostile_s, ordinary_s, outcome in rows:
        ratio = hostile_s / max(ordinary_s, 1e-4)
        worst = max(worst, ratio)
        flag = "" if ratio <= 5 else "  OVER 5x"
        print(f"{label:36} {size:9,d} {hostile_s:10.3f} {ordinary_s:11.3f} {ratio:7.2f}  {outcome}{flag}")
    print(f"\nworst ratio {worst:.2f} (target <= 5); CPU seconds are medians of {args.rounds} rounds")
    if not args.keep:
        drop_scratch("brain_bench_hostile")


if __name__ == "__main__":
    main()
