"""Reading a mail into text: odd charsets and parts never cost the mail (or a retry loop)."""

from __future__ import annotations

import pytest

from memory.mail_message import parse_mail

HEADERS = b"From: alice@example.com\r\nTo: inbox@brain.example.org\r\nSubject: Note\r\nMIME-Version: 1.0\r\n"


@pytest.mark.parametrize("subtype", ["plain", "html"])
def test_a_utf7_part_holding_a_lone_surrogate_reads_with_a_replacement_character(subtype: str) -> None:
    # "+2D0-" is UTF-7 for U+D800 alone: the HTML reader could not encode it (the mail was
    # answered 451 and retried for days), and no text column can store it.
    body = b"<p>before +2D0- after</p>" if subtype == "html" else b"before +2D0- after"
    raw = HEADERS + f"Content-Type: text/{subtype}; charset=utf-7\r\n\r\n".encode() + body + b"\r\n"
    assert parse_mail(raw).body == "before \ufffd after"
