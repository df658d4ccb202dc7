"""Reading a mail into text: odd charsets and parts never cost the mail (or a retry loop)."""

from __future__ import annotations

import pytest

from memory.mail_message import MailTooComplex, parse_mail

HEADERS = b"From: alice@example.com\r\nTo: inbox@brain.example.org\r\nSubject: Note\r\nMIME-Version: 1.0\r\n"


@pytest.mark.parametrize("subtype", ["plain", "html"])
def test_a_utf7_part_holding_a_lone_surrogate_reads_with_a_replacement_character(subtype: str) -> None:
    # "+2D0-" is UTF-7 for U+D800 alone: the HTML reader could not encode it (the mail was
    # answered 451 and retried for days), and no text column can store it.
    body = b"<p>before +2D0- after</p>" if subtype == "html" else b"before +2D0- after"
    raw = HEADERS + f"Content-Type: text/{subtype}; charset=utf-7\r\n\r\n".encode() + body + b"\r\n"
    assert parse_mail(raw).body == "before \ufffd after"


def multipart(parts: list[bytes]) -> bytes:
    body = b"".join(b"--b\r\n" + part + b"\r\n" for part in parts) + b"--b--\r\n"
    return HEADERS + b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n' + body


def test_a_mail_of_ordinary_attachments_reads_whole() -> None:
    attachment = b'Content-Type: text/plain\r\nContent-Disposition: attachment; filename="a.txt"\r\n\r\nhello'
    mail = parse_mail(multipart([b"Content-Type: text/plain\r\n\r\nSee attached.", *[attachment] * 40]))
    assert mail.body == "See attached."
    assert len(mail.attachments) == 40


def test_too_many_parts_or_too_many_header_bytes_across_them_are_refused_before_reading() -> None:
    """The parser re-reads a part's headers each time one is asked for: 40 parts of 50 KB of
    folded parameters held the receiver for 45 s, and 200,000 tiny parts for 65 s."""
    tiny = b"Content-Type: text/plain\r\n\r\nx"
    with pytest.raises(MailTooComplex, match="more than 500 MIME parts"):
        parse_mail(multipart([tiny] * 20_000))
    folded = b"".join(b";\r\n p%d=v" % n for n in range(5_000))
    heavy = b'Content-Type: text/plain\r\nContent-Disposition: attachment; filename="a.txt"' + folded + b"\r\n\r\nx"
    with pytest.raises(MailTooComplex, match="headers are over 256 KB"):
        parse_mail(multipart([heavy] * 10))
    # One Content-Type of many parameters, within the byte limit: the header parser collects
    # their defects quadratically (";a" * 30,000 took 32 s).
    crowded = b"Content-Type: text/plain" + b";a" * 20_000 + b"\r\nSubject: hi\r\n\r\nbody"
    with pytest.raises(MailTooComplex, match="Content-Type header holds more than 100 parameters"):
        parse_mail(crowded)
    signed = b'Content-Type: text/plain; charset="utf-8"; format=flowed; delsp=yes\r\n\r\nHello.'
    assert parse_mail(signed).body == "Hello."
