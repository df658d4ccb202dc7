"""Reading one inbound mail: what a memory is made of, and nothing else (no database, no Django).

``parse_mail(raw)`` reads RFC 5322 bytes with the standard library (``email.policy.default``)
and returns a ``ParsedMail``:

- ``subject``: the decoded Subject, unfolded, at most ``MAX_SUBJECT`` characters;
- ``body``: the text/plain body, else the text/html body as text; a mail forwarded *as an
  attachment* (``message/rfc822``) adds its From/Date/Subject/To and its own body after a
  ``---------- Forwarded message ----------`` line. Quoted forwarding headers of an inline
  forward are part of the body and stay as they are;
- ``sent_at``: the Date header as an aware datetime (``-0000`` read as UTC), or None when
  missing or unparsable;
- ``message_id``: the Message-ID without its angle brackets, or None when missing or not a
  plain printable token of at most ``MAX_MESSAGE_ID`` characters;
- ``from_addresses``: the addr-specs of the From header (empty when unreadable);
- ``attachments``: every part sent with ``Content-Disposition: attachment`` (at any depth,
  forwarded messages' included), with its filename and bytes. Inline parts (signature images,
  the body's alternatives) are not attachments.

Malformed mail does not raise: the ``email`` package records defects and this module falls
back to what it could read. A mail of more than ``MAX_PARTS`` MIME parts, or whose parts'
headers add up to more than ``MAX_ALL_HEADER_BYTES``, or with a ``Content-*`` header of more
than ``MAX_HEADER_PARAMETERS`` parameters, raises ``MailTooComplex``: the parser re-reads a
part's headers each time one is asked for, so 40 parts of 50 KB of folded parameters held the
receiver for 45 s, 200,000 tiny parts for 65 s, and ";a" * 30,000 in one Content-Type 32 s.
"""

from __future__ import annotations

import datetime as dt
import email
import email.policy
import re
from dataclasses import dataclass, field
from email.message import EmailMessage, Message
from email.utils import parsedate_to_datetime

from brain.text.html import html_text
from brain.text.secrets import storable
from memory.occurred import occurred_or_none

MAX_SUBJECT = 1_000
MAX_MESSAGE_ID = 250
MAX_PARTS = 500
MAX_ALL_HEADER_BYTES = 256 * 1024
MAX_HEADER_PARAMETERS = 100  # ";" in one Content-* header
FORWARDED = "---------- Forwarded message ----------"
# A Message-ID we can use as a key: printable ASCII without spaces or angle brackets.
_MESSAGE_ID = re.compile(r"^[!-;=?-~]{1,%d}$" % MAX_MESSAGE_ID)  # noqa: UP031 (a regex quantifier)


@dataclass(frozen=True)
class Attachment:
    """One attached file as sent: its name (or a stand-in) and its decoded bytes."""

    filename: str
    content_type: str
    data: bytes


@dataclass(frozen=True)
class ParsedMail:
    subject: str
    body: str
    sent_at: dt.datetime | None
    message_id: str | None
    from_addresses: list[str]
    attachments: list[Attachment] = field(default_factory=list)


class MailTooComplex(ValueError):
    """More MIME parts, or more header bytes across them, than a mail is read with."""


def _bounded_policy() -> email.policy.EmailPolicy[EmailMessage]:
    """``email.policy.default`` whose parser stops at the part past ``MAX_PARTS`` (it makes
    each part through the policy's factory, so the count is kept as the mail is read)."""
    made = 0

    def factory(policy: email.policy.Policy) -> EmailMessage:
        nonlocal made
        made += 1
        if made > MAX_PARTS:
            raise MailTooComplex(f"the message has more than {MAX_PARTS} MIME parts")
        return EmailMessage(policy=policy)

    return email.policy.default.clone(message_factory=factory)


def parse_mail(raw: bytes) -> ParsedMail:
    """Read ``raw`` (the DATA of one SMTP transaction) into a ``ParsedMail``; ``MailTooComplex``
    for a mail of too many parts or too many header bytes across them."""
    message = email.message_from_bytes(raw, policy=_bounded_policy())
    assert isinstance(message, EmailMessage)  # policy.default always builds EmailMessage
    # Counted as stored (raw_items parses nothing), before any header is read.
    header_bytes = sum(len(name) + len(value) for part in message.walk() for name, value in part.raw_items())
    if header_bytes > MAX_ALL_HEADER_BYTES:
        raise MailTooComplex(f"the message's headers are over {MAX_ALL_HEADER_BYTES // 1024} KB across its parts")
    # The header parser collects each parameter's defects quadratically, and a part's
    # Content-Type is re-read a dozen times: ";a" * 30,000 took 32 s. No mail needs many.
    for part in message.walk():
        for name, value in part.raw_items():
            if name.lower().startswith("content-") and str(value).count(";") > MAX_HEADER_PARAMETERS:
                raise MailTooComplex(f"a {name} header holds more than {MAX_HEADER_PARAMETERS} parameters")
    body_part = message.get_body(preferencelist=("plain", "html"))
    sections = [_text_of(body_part)] if body_part is not None else []
    attachments: list[Attachment] = []
    for part in message.walk():
        if part.get_content_type() == "message/rfc822":
            sections.append(_forwarded(part))
        elif part is not body_part and not part.is_multipart() and part.get_content_disposition() == "attachment":
            attachments.append(_attachment(part, len(attachments) + 1))
    return ParsedMail(
        subject=_header(message, "subject")[:MAX_SUBJECT],
        body="\n\n".join(section for section in sections if section),
        sent_at=_date(message),
        message_id=_message_id(message),
        from_addresses=_addresses(message, "from"),
        attachments=attachments,
    )


def _header(message: Message, name: str) -> str:
    """A header's decoded value on one line ("" when missing or undecodable)."""
    try:
        value = message.get(name)
    except (ValueError, TypeError, IndexError):  # a header the parser cannot even decode
        return ""
    return " ".join(str(value or "").split())


def _addresses(message: Message, name: str) -> list[str]:
    try:
        header = message.get(name)
        return [address.addr_spec for address in getattr(header, "addresses", ()) if address.addr_spec]
    except (ValueError, TypeError, IndexError, AttributeError):
        return []


def _date(message: Message) -> dt.datetime | None:
    raw = message.get("date")
    if raw is None:
        return None
    try:
        parsed = parsedate_to_datetime(str(raw))
    except (ValueError, TypeError, IndexError):
        return None
    # RFC 5322: "-0000" means the time is UTC but the sender's zone is unknown; the parser
    # returns it naive. A date no memory may carry (year 9999 at -14:00) is no date at all.
    return occurred_or_none(parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC))


def _message_id(message: Message) -> str | None:
    value = _header(message, "message-id").strip().removeprefix("<").removesuffix(">").strip()
    return value if _MESSAGE_ID.match(value) else None


def _text_of(part: Message) -> str:
    """A text part's content as plain text with LF line ends (HTML reduced to its text)."""
    try:
        content = part.get_content()  # type: ignore[attr-defined]
    except (LookupError, ValueError, AssertionError):  # an unknown charset or a broken transfer encoding
        payload = part.get_payload(decode=True)
        content = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
    # storable: a UTF-7 part can decode to a lone surrogate, which nothing downstream can encode.
    text = storable(content) if isinstance(content, str) else ""
    if part.get_content_subtype() == "html":
        text = html_text(text, drop_head=True)
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return "\n".join(lines).strip()


def _forwarded(part: Message) -> str:
    """A message forwarded as an attachment: its headers and body, as a mail client quotes them."""
    inner = part.get_payload(0) if part.is_multipart() else None
    if not isinstance(inner, EmailMessage):
        return ""
    headers = [f"{name}: {value}" for name in ("From", "Date", "Subject", "To") if (value := _header(inner, name))]
    body_part = inner.get_body(preferencelist=("plain", "html"))
    body = _text_of(body_part) if body_part is not None else ""
    return "\n".join([FORWARDED, *headers, "", body]).strip()


def _attachment(part: Message, number: int) -> Attachment:
    payload = part.get_payload(decode=True)
    filename = " ".join((part.get_filename() or "").split()) or f"attachment-{number}"
    return Attachment(
        filename=filename[:255],
        content_type=part.get_content_type(),
        data=payload if isinstance(payload, bytes) else b"",
    )
