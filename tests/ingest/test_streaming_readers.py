"""Word documents and HTML are read as streams: what text they give, and memory that follows the text.

The memory checks run the reader in a child process and compare its peak resident size with a
child that read a tiny document: python-docx and BeautifulSoup (used before) grew by hundreds of
megabytes on documents of many small elements, which the 25 MB upload limit allowed.
"""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.test import override_settings

from brain.text.html import html_text
from ingest.converters import ConversionFailed, convert
from ingest.docx_text import TooLong, docx_text, main_part

ROOT = Path(__file__).resolve().parents[2]
NAMESPACES = (
    'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
    'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"'
)


def package(body: str, *, part: str = "word/document.xml", rels: str | None = None) -> bytes:
    """A minimal .docx holding ``body`` as the main part's ``w:body``."""
    if rels is None:
        rels = (
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
            f'relationships/officeDocument" Target="{part}"/></Relationships>'
        )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("_rels/.rels", rels)
        archive.writestr(part, f"<w:document {NAMESPACES}><w:body>{body}</w:body></w:document>")
    return buffer.getvalue()


def read(data: bytes, max_chars: int = 1_000_000) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return docx_text(archive, max_chars)


def test_docx_runs_tabs_breaks_and_hyphens_read_as_word_shows_them() -> None:
    body = (
        "<w:p><w:pPr><w:tabs><w:tab w:val='left' w:pos='720'/></w:tabs></w:pPr>"
        "<w:r><w:t>Hotel limit</w:t></w:r><w:r><w:tab/><w:t>EUR 180</w:t><w:br/><w:t>per night</w:t>"
        "<w:br w:type='page'/><w:t>e</w:t><w:noBreakHyphen/><w:t>mail</w:t></w:r></w:p>"
        "<w:p><w:del><w:r><w:delText>deleted words</w:delText></w:r></w:del>"
        "<w:ins><w:r><w:t>inserted words</w:t></w:r></w:ins></w:p>"
    )
    # The tab stop in the paragraph's properties is layout, not text; deleted text is not text.
    assert read(package(body)) == "Hotel limit\tEUR 180\nper nighte-mail\ninserted words"


def test_docx_tables_read_in_place_one_row_a_line() -> None:
    cell = "<w:tc><w:p><w:r><w:t>{}</w:t></w:r></w:p></w:tc>"
    row = "<w:tr>" + cell.format("Role") + cell.format("Limit") + "</w:tr>"
    second = (
        "<w:tr>"
        + cell.format("Staff")
        + "<w:tc><w:p><w:r><w:t>180</w:t></w:r></w:p><w:p><w:r><w:t>a night</w:t></w:r></w:p></w:tc></w:tr>"
    )
    body = f"<w:p><w:r><w:t>Before</w:t></w:r></w:p><w:tbl>{row}{second}</w:tbl><w:p><w:r><w:t>After</w:t></w:r></w:p>"
    assert read(package(body)) == "Before\nRole | Limit\nStaff | 180\na night\nAfter"


def test_docx_text_box_fallback_copy_is_not_read_twice() -> None:
    box = "<w:txbxContent><w:p><w:r><w:t>Boxed note</w:t></w:r></w:p></w:txbxContent>"
    body = (
        "<w:p><w:r><mc:AlternateContent>"
        f"<mc:Choice Requires='wps'>{box}</mc:Choice><mc:Fallback>{box}</mc:Fallback>"
        "</mc:AlternateContent><w:t>Main text</w:t></w:r></w:p>"
    )
    assert read(package(body)) == "Boxed note\nMain text"


def test_docx_main_part_is_the_one_the_package_names() -> None:
    data = package("<w:p><w:r><w:t>Elsewhere</w:t></w:r></w:p>", part="word/document2.xml")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert main_part(archive) == "word/document2.xml"
    assert read(data) == "Elsewhere"
    # A package without relationships falls back to the usual name.
    plain = io.BytesIO()
    with zipfile.ZipFile(plain, "w") as archive:
        archive.writestr("word/document.xml", f"<w:document {NAMESPACES}><w:body/></w:document>")
    with zipfile.ZipFile(plain) as archive:
        assert main_part(archive) == "word/document.xml"


def test_docx_stops_at_the_character_limit_separators_included() -> None:
    body = "<w:p><w:r><w:t>abcdefghij</w:t></w:r></w:p>" * 20
    assert len(read(package(body), max_chars=219)) == 219  # 200 characters and 19 line ends
    with pytest.raises(TooLong):
        read(package(body), max_chars=218)
    # Empty paragraphs and table cells are text too once joined: 7.2 million stored characters
    # once came from a document under the limit by this count.
    with pytest.raises(TooLong):
        read(package("<w:p/>" * 1000), max_chars=500)
    row = "<w:tbl><w:tr>" + "<w:tc><w:p/></w:tc>" * 200 + "</w:tr></w:tbl>"
    with pytest.raises(TooLong):
        read(package(row), max_chars=500)
    limits = {**django_settings.BRAIN_INGEST_LIMITS, "MAX_CHARS": 500}
    with pytest.raises(ConversionFailed, match="longer than"), override_settings(BRAIN_INGEST_LIMITS=limits):
        convert("docx", package("<w:p/>" * 1000))


def test_docx_tracked_deletions_and_moved_text_are_read_once() -> None:
    body = (
        "<w:p><w:r><w:t>kept</w:t></w:r><w:del><w:r><w:br/><w:tab/><w:delText>gone</w:delText></w:r></w:del>"
        "<w:moveFrom><w:r><w:t>moved text</w:t></w:r></w:moveFrom></w:p>"
        "<w:p><w:moveTo><w:r><w:t>moved text</w:t></w:r></w:moveTo></w:p>"
    )
    assert read(package(body)) == "kept\nmoved text"


def _damaged(flag: str) -> bytes:
    """A .docx whose main part cannot be read: bad deflate data, a strange method, encrypted."""
    data = bytearray(package("<w:p><w:r><w:t>" + "words " * 200 + "</w:t></w:r></w:p>"))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        local = archive.getinfo("word/document.xml").header_offset
    central = data.rindex(b"PK\x01\x02")  # the main part is the last entry
    start = local + 30 + int.from_bytes(data[local + 26 : local + 28], "little")
    if flag == "deflate":
        data[start : start + 8] = b"\xff" * 8
    elif flag == "method":
        data[local + 8 : local + 10] = (99).to_bytes(2, "little")
        data[central + 10 : central + 12] = (99).to_bytes(2, "little")
    else:
        data[local + 6] |= 1
        data[central + 8] |= 1
    return bytes(data)


@pytest.mark.parametrize("flag", ["deflate", "method", "encrypted"])
def test_docx_damaged_archive_members_fail_with_a_reason_not_a_crash(flag: str) -> None:
    with pytest.raises(ConversionFailed, match="could not be read"):
        convert("docx", _damaged(flag))


def test_docx_damaged_or_entity_laden_xml_fails_with_a_reason(settings: object) -> None:
    damaged = package("<w:p><w:r><w:t>unclosed")
    with pytest.raises(ConversionFailed, match="could not be read"):
        convert("docx", damaged)
    external = io.BytesIO()
    with zipfile.ZipFile(external, "w") as archive:
        archive.writestr(
            "word/document.xml",
            '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
            f"<w:document {NAMESPACES}><w:body><w:p><w:r><w:t>&x;</w:t></w:r></w:p></w:body></w:document>",
        )
    # An external entity is never fetched: no file's content becomes text.
    try:
        text = convert("docx", external.getvalue()).text
    except ConversionFailed:
        text = ""
    assert "root:" not in text


def test_a_real_python_docx_document_reads_whole() -> None:
    import docx

    document = docx.Document()
    document.add_heading("Expenses", level=1)
    document.add_paragraph("The nightly hotel limit is EUR 180.")
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Approver", "Finance"
    buffer = io.BytesIO()
    document.save(buffer)
    converted = convert("docx", buffer.getvalue())
    assert converted.text == "Expenses\nThe nightly hotel limit is EUR 180.\nApprover | Finance"
    assert (converted.extractor, converted.extractor_version) == ("brain-docx", "2")


def test_html_reads_blocks_as_lines_and_inline_text_as_one() -> None:
    html = (
        "<!doctype html><html><head><title>Expenses</title><style>p{}</style></head><body>"
        "<!-- a comment --><p>The hotel   limit is <b>EUR&nbsp;180</b> a night.</p>"
        "<ul><li>one<li>two</ul><table><tr><td>Role<td>Limit</table>"
        "<pre>line 1\n  indented\n</pre><script>var secret = 1;</script><noscript>no</noscript>"
        "<template><p>hidden</p></template>Tail</body></html>"
    )
    assert html_text(html) == (
        "Expenses\nThe hotel limit is EUR 180 a night.\none\ntwo\nRole\nLimit\nline 1\n  indented\nTail"
    )
    assert html_text(html, drop_head=True).startswith("The hotel limit")
    assert html_text("") == html_text("  ") == ""
    assert html_text("just words") == "just words"


def test_html_keeps_the_last_line_of_pre_and_breaks_at_every_block() -> None:
    assert html_text("<pre>def f():\n    return 1</pre>after") == "def f():\n    return 1\nafter"
    assert html_text("a<center>b</center><fieldset><legend>c</legend>d</fieldset><textarea>e</textarea>") == (
        "a\nb\nc\nd\ne"
    )


def test_html_with_a_lone_surrogate_reads_with_a_replacement_character() -> None:
    # A UTF-7 mail part can decode to a lone surrogate, which libxml2 cannot take: it was an
    # UnicodeEncodeError, and the mail was refused with "try again later" for days.
    assert html_text("<p>before \ud800 after</p>") == "before \ufffd after"


def test_html_of_only_scripts_has_no_text() -> None:
    with pytest.raises(ConversionFailed, match="no text was found"):
        convert("html", b"<html><body><script>var a = 1;</script></body></html>")


def peak_growth_kb(reading: str, data: bytes, tmp_path: Path) -> int:
    """Peak resident kilobytes of a child running ``reading`` on ``data`` beyond one reading a tiny input."""

    def peak(content: bytes) -> int:
        path = tmp_path / "input"
        path.write_bytes(content)
        script = textwrap.dedent(
            f"""
            import io, resource, sys, zipfile
            sys.path.insert(0, {str(ROOT)!r})
            from brain.text.html import html_text
            from ingest.docx_text import docx_text
            data = open({str(path)!r}, "rb").read()
            {reading}
            print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
            """
        )
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
        return int(result.stdout.split()[-1])

    return peak(data) - peak(TINY[reading])


HTML_READING = "html_text(data.decode())"
DOCX_READING = "docx_text(zipfile.ZipFile(io.BytesIO(data)), 10**7)"
TINY = {HTML_READING: b"<p>x</p>", DOCX_READING: package("<w:p><w:r><w:t>x</w:t></w:r></w:p>")}


def test_many_small_elements_cost_memory_by_text_not_by_element(tmp_path: Path) -> None:
    # 200,000 three-letter paragraphs: BeautifulSoup grew by ~220 MB on this page (670 MB at 5 MB).
    html = ("<html><body>" + "<p><b>abc</b></p>" * 200_000 + "</body></html>").encode()
    assert peak_growth_kb(HTML_READING, html, tmp_path) < 80_000
    # One 5 MB line of words: split() and join() made an object a word (~150 MB).
    line = ("<html><body><p>" + "ab " * 1_700_000 + "</p></body></html>").encode()
    assert peak_growth_kb(HTML_READING, line, tmp_path) < 80_000
    # 200,000 two-letter paragraphs: python-docx grew by ~160 MB.
    document = package("<w:p><w:r><w:t>ab</w:t></w:r></w:p>" * 200_000)
    assert peak_growth_kb(DOCX_READING, document, tmp_path) < 80_000


def test_webvtt_past_its_cue_or_line_count_fails_before_it_is_parsed() -> None:
    """webvtt-py made an object of every cue and line before the length was checked (900,000
    tiny cues: 33 s and ~820 MB of a worker)."""
    cue = "00:00.000 --> 00:01.000\na\n\n"
    assert "a" in convert("vtt", ("WEBVTT\n\n" + cue * 3).encode()).text
    with pytest.raises(ConversionFailed, match="more than 100,000 cues"):
        convert("vtt", ("WEBVTT\n\n" + cue * 100_001).encode())
    with pytest.raises(ConversionFailed, match="more than 500,000 lines"):
        convert("vtt", ("WEBVTT\n\n00:00.000 --> 00:01.000\n" + "a\n" * 500_001).encode())
