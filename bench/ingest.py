"""Document ingest throughput on a mixed batch, and where the time goes.

    .venv/bin/python -m bench.ingest [--documents 60]

Builds a throwaway database and a batch of generated documents (PDF and DOCX written by
fpdf2 and python-docx, HTML, Markdown, text, VTT and SRT, each a few pages of prose with a
planted secret), ingests them through the service and runs each extraction in process.
Prints documents/s and MB/s overall and per type, and the share of the time spent storing,
converting, masking and embedding (the extracted text is chunked and embedded for semantic
``search_sources``).
"""

from __future__ import annotations

import argparse
import io
import os
import random
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

if not __package__:
    # Run as a file: replace (not prepend to) the script's own folder, where bench/secrets.py
    # would shadow the standard library's `secrets` module.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.scratch import drop_scratch, setup_scratch_django
from bench.search_scale import VOCABULARY

SECRET = "AKIAIOSFODNN7EXAMPLE"  # noqa: S105 (AWS's documented example key: a planted test value)


def prose(rng: random.Random, words: int) -> str:
    sentences: list[str] = []
    while sum(len(s.split()) for s in sentences) < words:
        sentences.append(" ".join(rng.choices(VOCABULARY[:300], k=rng.randint(8, 18))).capitalize() + ".")
    sentences.insert(len(sentences) // 2, f"The deploy key is {SECRET}.")
    return " ".join(sentences)


def stamp(second: int, mark: str) -> str:
    """A one-second cue's timing line (``.`` for WebVTT, ``,`` for SRT)."""
    at = f"00:{second // 60:02d}:{second % 60:02d}"
    return f"{at}{mark}000 --> {at}{mark}900"


def make(kind: str, text: str) -> tuple[str, bytes]:
    if kind == "pdf":
        from fpdf import FPDF

        pdf = FPDF()
        pdf.set_font("helvetica", size=10)
        for start in range(0, len(text), 3000):
            pdf.add_page()
            pdf.multi_cell(0, 6, text[start : start + 3000])
        return "doc.pdf", bytes(pdf.output())
    if kind == "docx":
        import docx

        document = docx.Document()
        for start in range(0, len(text), 800):
            document.add_paragraph(text[start : start + 800])
        buffer = io.BytesIO()
        document.save(buffer)
        return "doc.docx", buffer.getvalue()
    if kind == "html":
        paragraphs = "".join(f"<p>{text[i : i + 800]}</p>" for i in range(0, len(text), 800))
        return "doc.html", f"<!doctype html><html><body>{paragraphs}</body></html>".encode()
    if kind == "vtt":
        cues = "".join(f"{stamp(i, '.')}\n{text[i * 200 : i * 200 + 200]}\n\n" for i in range(len(text) // 200))
        return "doc.vtt", f"WEBVTT\n\n{cues}".encode()
    if kind == "srt":
        cues = "".join(
            f"{i + 1}\n{stamp(i, ',')}\n{text[i * 200 : i * 200 + 200]}\n\n" for i in range(len(text) // 200)
        )
        return "doc.srt", cues.encode()
    if kind == "markdown":
        return "doc.md", f"# Notes\n\n{text}\n".encode()
    return "doc.txt", text.encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=60)
    args = parser.parse_args()
    name = "brain_bench_ingest"
    # Originals go to a throwaway folder, never to the media of a running `make run`.
    media = tempfile.mkdtemp(prefix="brain-bench-ingest-")
    os.environ["BRAIN_MEDIA_ROOT"] = media
    setup_scratch_django(name)
    from grants.principals import SYSTEM
    from grants.services import grant_issue, member_create
    from ingest import services
    from ingest.converters import convert
    from ingest.models import Extraction

    try:
        member = member_create(actor=SYSTEM, username="uploader")
        grant_issue(actor=SYSTEM, member=member, path="captures/", permission="suggest")
        rng = random.Random(7)
        kinds = ["pdf", "docx", "html", "markdown", "text", "vtt", "srt"]
        batch = [make(kinds[i % len(kinds)], prose(rng, rng.randint(1500, 4000))) for i in range(args.documents)]
        phases: dict[str, float] = defaultdict(float)
        per_kind: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # seconds, bytes, count

        real_convert = convert

        def timed_convert(kind: str, data: bytes):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                return real_convert(kind, data)
            finally:
                phases["convert"] += time.perf_counter() - started

        real_mask = services.mask

        def timed_mask(text: str, **kwargs):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                return real_mask(text, **kwargs)
            finally:
                phases["mask"] += time.perf_counter() - started

        real_embed = services.embeddings.embed

        def timed_embed(texts):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                return real_embed(texts)
            finally:
                phases["embed"] += time.perf_counter() - started

        services.convert = timed_convert  # type: ignore[assignment]
        services.mask = timed_mask  # type: ignore[assignment]
        services.embeddings.embed = timed_embed  # type: ignore[assignment]
        services.embeddings.embed(["warm the model up"])
        phases.clear()
        total_bytes = sum(len(data) for _, data in batch)
        began = time.perf_counter()
        for filename, data in batch:
            started = time.perf_counter()
            extraction = services.document_ingest(actor=member, filename=filename, data=data, enqueue=False)
            phases["store"] += time.perf_counter() - started
            services.extraction_run(extraction.pk)
            kind = extraction.document.detected_type
            per_kind[kind][0] += time.perf_counter() - started
            per_kind[kind][1] += len(data)
            per_kind[kind][2] += 1
        elapsed = time.perf_counter() - began
        done = Extraction.objects.filter(status="done").count()
        print(f"{len(batch)} documents, {total_bytes / 1e6:.1f} MB: {done} extracted in {elapsed:.1f} s — "
              f"{len(batch) / elapsed:.1f} documents/s, {total_bytes / 1e6 / elapsed:.2f} MB/s")  # fmt: skip
        for kind, (seconds, size, count) in sorted(per_kind.items()):
            print(f"  {kind:9} {int(count):3} docs  {count / seconds:6.1f} docs/s  {size / 1e6 / seconds:6.2f} MB/s")
        other = elapsed - sum(phases.values())
        print("time share: " + ", ".join(f"{phase} {100 * seconds / elapsed:.0f} %" for phase, seconds in
                                         [*phases.items(), ("database + other", other)]))  # fmt: skip
        masked = sum(e.masked.get("credential", 0) for e in Extraction.objects.all())
        print(f"planted secrets masked: {masked} of {len(batch)}")
    finally:
        drop_scratch(name)
        shutil.rmtree(media, ignore_errors=True)


if __name__ == "__main__":
    main()
