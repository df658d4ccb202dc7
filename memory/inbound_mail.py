"""Memories from forwarded mail: each member's secret inbound address, and capturing one mail.

The address ``memory+<token>@BRAIN_INBOUND_DOMAIN`` is a capability: whoever knows it can
write into its member's memory, so the token is 160 random bits, shown only to its member,
rotatable, and null while mail capture is off. Headers are forgeable, so the sender is also
checked: the envelope sender (MAIL FROM) and the From header must both be the member's own
account address. This is a second lock, not authentication — in production the receiver
sits behind the organisation's MX (which checks SPF, DKIM and DMARC) or listens on loopback
only (docs/operations.md).

``inbound_recipient_check`` answers the SMTP RCPT command; ``mail_capture`` answers DATA.
Both raise ``MailRefused`` (an SMTP code, an enhanced status and a line of text that never
holds the mail's content or a secret) and store nothing then. A captured mail becomes one
episodic memory through ``memory_capture_from`` (secret scanner, duplicate check,
classification, the member's capture defaults), keyed ``email:<Message-ID>`` so a
re-delivered mail is not stored twice; its attachments become sources through the upload
path (``ingest.services.document_ingest``), all in one transaction.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import re
import secrets
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from brain.ratelimit import RateLimited, hit
from brain.text.secrets import NulRefused, SecretRefused, find, refuse
from grants.audit import audit_record
from grants.models import Member
from memory.classify import MemoryInvalid
from memory.mail_message import Attachment, MailTooComplex, ParsedMail, parse_mail
from memory.models import Kind, Memory, MemoryPreference
from memory.services import MAX_CONTENT, memory_capture_from

logger = logging.getLogger(__name__)

LOCAL_PART = "memory"
TOKEN_BYTES = 20  # 160 bits: 32 base32 characters
MAX_ATTACHMENTS = 20
MAX_HEADER_BYTES = 64 * 1024
SOURCE = "email"
# Lower-case base32: a token survives a mail system or a person that changes the case of
# an address (RFC 5321 lets the receiver decide; some do fold local parts).
_RECIPIENT = re.compile(r"^memory\+([a-z2-7]{32})@([^@\s]+)$", re.IGNORECASE)


class MailRefused(Exception):
    """A mail (or one recipient of it) the receiver refuses; ``reply`` is the SMTP answer line."""

    def __init__(self, code: int, status: str, text: str) -> None:
        super().__init__(text)
        self.code = code
        self.status = status
        self.text = text

    @property
    def reply(self) -> str:
        return smtp_line(f"{self.code} {self.status} {self.text}")


@dataclass(frozen=True)
class MailReceipt:
    """What a captured mail did: the memory it became (or already was) and its attachments."""

    member_id: int
    memory_id: str
    outcome: str  # stored | flagged | duplicate (an existing memory says the same) | already (same Message-ID)
    stored_attachments: list[str]
    refused_attachments: int

    @property
    def reply(self) -> str:
        if self.outcome == "already":
            text = f"Already captured as memory {self.memory_id}: nothing stored again"
        elif self.outcome == "duplicate":
            text = f"You already had this memory ({self.memory_id}): nothing new stored"
        else:
            text = f"Stored as memory {self.memory_id}"
        if self.stored_attachments:
            text += f"; {len(self.stored_attachments)} attachment(s) stored as sources"
        if self.refused_attachments:
            text += f"; {self.refused_attachments} attachment(s) not stored (the memory says why)"
        return smtp_line(f"250 2.0.0 {text}")


def smtp_line(text: str) -> str:
    """One SMTP reply line: printable ASCII, at most 400 characters (RFC 5321 allows 512)."""
    flat = " ".join(text.split()).encode("ascii", "replace").decode("ascii")
    return flat[:400]


# --------------------------------------------------------------------------- the address


def inbound_address(token: str) -> str:
    return f"{LOCAL_PART}+{token}@{settings.BRAIN_INBOUND_DOMAIN}"


def inbound_address_of(member: Member) -> str | None:
    """The member's current inbound address, or None while mail capture is off."""
    token = MemoryPreference.objects.filter(member=member).values_list("inbound_token", flat=True).first()
    return inbound_address(token) if token else None


def _new_token() -> str:
    return base64.b32encode(secrets.token_bytes(TOKEN_BYTES)).decode("ascii").lower()


def _set_token(actor: Member, *, keep: bool, action: str) -> str | None:
    if not actor.is_active:
        raise PermissionDenied("only an active member has memory settings")
    with transaction.atomic():
        preference, _created = MemoryPreference.objects.select_for_update().get_or_create(member=actor)
        if action == "disable":
            preference.inbound_token = None
        elif not (keep and preference.inbound_token):
            preference.inbound_token = _new_token()
        preference.save(update_fields=["inbound_token"])
        audit_record(actor=actor, action=f"memory.inbound_address.{action}", target_type="member", target=str(actor.pk))
        return preference.inbound_token


def _require_email(actor: Member) -> None:
    """Mail is accepted only from the account's address: without one nothing could be captured."""
    if not (actor.user.email or "").strip():
        raise MemoryInvalid("mail capture needs an email address on your account (ask an administrator)")


def inbound_address_enable(*, actor: Member) -> str:
    """Turn mail capture on for ``actor``; returns their address (the current one if already on).

    Raises ``MemoryInvalid`` when their account has no email address: mail is accepted only
    from that address, so without one nothing could ever be captured.
    """
    _require_email(actor)
    token = _set_token(actor, keep=True, action="enable")
    assert token is not None
    return inbound_address(token)


def inbound_address_rotate(*, actor: Member) -> str:
    """A new address for ``actor``; the old one is refused from now on (mail capture stays on)."""
    _require_email(actor)
    token = _set_token(actor, keep=False, action="rotate")
    assert token is not None
    return inbound_address(token)


def inbound_address_disable(*, actor: Member) -> None:
    """Turn mail capture off: the address is retired (turning it on again gives a new one)."""
    _set_token(actor, keep=False, action="disable")


# --------------------------------------------------------------------------- receiving


def _token_of(recipient: str) -> str | None:
    """The token of a ``memory+<token>@<our domain>`` address, lower-cased; None for any other."""
    match = _RECIPIENT.match(recipient.strip())
    if match is None or match.group(2).casefold() != str(settings.BRAIN_INBOUND_DOMAIN).casefold():
        return None
    return match.group(1).lower()


def _unknown() -> MailRefused:
    return MailRefused(550, "5.1.1", "unknown recipient")


def same_address(a: str, b: str) -> bool:
    """Two addr-specs name the same mailbox: equal ignoring case — the domain by RFC 5321, the
    local part too because mainstream mail systems fold it, and people type their address
    in whatever case (``Alice@Example.com`` is the account ``alice@example.com``)."""
    left = _mailbox(a)
    return bool(left) and left == _mailbox(b)


def _mailbox(address: str) -> str:
    """``address`` as ``same_address`` compares it, or "" when it names no mailbox: read as
    UTF-8 (an internationalised header's 8-bit bytes reach us as surrogate escapes, and an
    ``elise@bücher.example`` From never matched its account), the domain in its IDNA form
    (``xn--bcher-kva.example`` is the same domain), case-folded."""
    text = address.strip()
    try:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8")
    except UnicodeError:
        return ""  # bytes that are not UTF-8 name no member's address
    local, at, domain = text.rpartition("@")
    if not at or not local or not domain:
        return ""
    with contextlib.suppress(UnicodeError):  # not a name IDNA can spell: compared as written
        domain = domain.encode("idna").decode("ascii")
    return f"{local}@{domain}".casefold()


def _recipient_member(recipient: str, *, lock: bool = False) -> Member:
    token = _token_of(recipient)
    if token is None:
        raise _unknown()
    rows = MemoryPreference.objects.select_related("member__user").filter(
        inbound_token=token, member__is_active=True, member__user__is_active=True
    )
    if lock:
        # Serialises this member's mail with a concurrent rotation, and two deliveries of one
        # mail with each other (the second then finds the first one's memory by its origin).
        rows = rows.select_for_update(of=("self",))
    preference = rows.first()
    if preference is None:
        raise _unknown()
    return preference.member


def _check_sender(member: Member, address: str, what: str) -> None:
    if not same_address(address, member.user.email or ""):
        raise MailRefused(
            550, "5.7.1", f"sender not allowed: this address takes mail only from its member's own address ({what})"
        )


def inbound_recipient_check(*, recipient: str, mail_from: str) -> int:
    """RCPT TO: the member whose address ``recipient`` is, given envelope sender ``mail_from``.

    Returns the member's id; raises ``MailRefused`` 550 5.1.1 for an address that is not a
    live inbound address (wrong token, retired, a suspended member) and 550 5.7.1 when the
    envelope sender is not the member's own address.
    """
    member = _recipient_member(recipient)
    _check_sender(member, mail_from, "envelope sender")
    return int(member.pk)


def mail_origin(mail: ParsedMail, raw: bytes) -> str:
    """``email:<Message-ID>``; a mail without a usable one is keyed by the SHA-256 of its bytes
    (so the same bytes delivered twice are still one memory)."""
    if mail.message_id:
        return f"email:{mail.message_id}"
    return f"email:sha256:{hashlib.sha256(raw).hexdigest()}"


def mail_capture(*, recipient: str, mail_from: str, raw: bytes) -> MailReceipt:
    """DATA: capture one mail sent to ``recipient`` by envelope sender ``mail_from``.

    Checks again what RCPT checked (the address may have been rotated since), then that the
    From header is exactly one address, the member's own. A Message-ID seen before answers
    ``already`` and changes nothing (a re-delivery must not undo edits made in the brain).
    Scans the text for secrets before anything is written; stores each attachment as a
    source with the member as uploader (refused ones — no ``suggest`` on ``captures/``, an
    unsupported type, too large — are listed in the memory and counted in the reply), then
    the memory. One transaction: a refusal leaves nothing behind (an original file may stay
    in storage, unreferenced, as after a refused upload).

    Raises ``MailRefused``: 550 (unknown recipient, sender, a secret, content the pipeline
    refuses) or 451 (the member's rate limit: the sending server retries later).
    """
    header_block = raw.split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0]
    if len(header_block) > MAX_HEADER_BYTES:
        # The standard parser re-reads a header each time it is asked: 350 KB of folded
        # parameters held the (shared) receiver for 28 s. A real mail's headers are a few KB.
        raise MailRefused(552, "5.3.4", f"the headers are over {MAX_HEADER_BYTES // 1024} KB")
    try:
        mail = parse_mail(raw)
    except RecursionError:
        # 1,200 nested multiparts: a permanent refusal, not a "try again" the sender repeats for days.
        raise MailRefused(554, "5.6.0", "the message's parts are nested too deeply") from None
    except MailTooComplex as complex_mail:
        raise MailRefused(552, "5.3.4", str(complex_mail)) from None
    except Exception as unreadable:
        # The standard email package raises what it meets on a malformed header (IndexError for
        # "filename*", UnicodeEncodeError, UnboundLocalError for "<a@["): a 451 had the sending
        # server try again for days. The same bytes never read better: refuse them for good.
        logger.warning("inbound mail unreadable (%s)", type(unreadable).__name__, exc_info=True)
        raise MailRefused(554, "5.6.0", "the message has a header that cannot be read. Nothing was stored") from None
    origin = mail_origin(mail, raw)
    with transaction.atomic():
        member = _recipient_member(recipient, lock=True)
        _check_sender(member, mail_from, "envelope sender")
        if len(mail.from_addresses) != 1:
            raise MailRefused(550, "5.7.1", "sender not allowed: the From header must name exactly one address")
        _check_sender(member, mail.from_addresses[0], "From header")
        existing = Memory.objects.filter(author=member, origin=origin).values_list("pk", flat=True).first()
        if existing is not None:
            return MailReceipt(int(member.pk), str(existing), "already", [], 0)
        _rate_limit(member, len(mail.attachments))
        # The most text the memory can hold of this mail, scanned before any attachment is written.
        _refuse_secret(memory_text(mail, stored=[], refused=[]))
        stored, refused = _ingest(member, mail.attachments)
        try:
            capture = memory_capture_from(
                actor=member, origin=origin, content=memory_text(mail, stored=stored, refused=refused),
                source=SOURCE, kind=Kind.EPISODIC, occurred_at=mail.sent_at, written_elsewhere=True,
            )  # fmt: skip
        except (SecretRefused, NulRefused) as refusal:
            raise _secret_refusal(refusal) from None
        except MemoryInvalid as invalid:
            raise MailRefused(550, "5.6.0", f"refused: {invalid}. Nothing was stored") from None
    # "updated"/"unchanged": a concurrent delivery of the same mail stored it first.
    outcome = "already" if capture.outcome in ("updated", "unchanged") else capture.outcome
    return MailReceipt(int(member.pk), str(capture.memory.pk), outcome, [key for key, _ in stored], len(refused))


def _rate_limit(member: Member, attachments: int) -> None:
    """The member's shared windows: one embedding write, and one upload per attachment."""
    try:
        hit(principal_key=f"member:{member.pk}", rate_class="write")
        if attachments:
            # Only what can be stored counts: a mail of 21 attachments (20 stored, the rest listed
            # as refused) cost 21 of a window of 20, and was deferred for ever.
            hit(principal_key=f"member:{member.pk}", rate_class="upload", cost=min(attachments, MAX_ATTACHMENTS))
    except RateLimited as limited:
        raise MailRefused(451, "4.7.1", f"too many captures: try again in {limited.retry_after} s") from None


def _secret_refusal(refusal: SecretRefused | NulRefused) -> MailRefused:
    # The refusal names the kind and the line, never the value.
    return MailRefused(550, "5.7.1", f"{refusal} Nothing was stored")


def _refuse_secret(text: str) -> None:
    try:
        refuse(text, field="mail")
    except (SecretRefused, NulRefused) as refusal:
        raise _secret_refusal(refusal) from None


def _ingest(member: Member, attachments: list[Attachment]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Store each attachment as the member's upload: ([(key, filename)], [(filename, why not)])."""
    from ingest.services import document_ingest

    stored: list[tuple[str, str]] = []
    refused: list[tuple[str, str]] = []
    for number, attachment in enumerate(attachments, start=1):
        if number > MAX_ATTACHMENTS:
            refused.append((attachment.filename, f"more than {MAX_ATTACHMENTS} attachments in one mail"))
            continue
        try:
            # Its own savepoint inside: a refused file leaves the rest of the mail intact.
            extraction = document_ingest(
                actor=member, filename=attachment.filename, data=attachment.data, title=attachment.filename
            )
        except PermissionDenied:
            refused.append((attachment.filename, "you may not upload documents (it needs suggest on captures/)"))
        except ValidationError as invalid:
            refused.append((attachment.filename, "; ".join(invalid.messages)))
        else:
            stored.append((extraction.document.source.key, attachment.filename))
    return stored, refused


def _shown(filename: str) -> str:
    # A name the upload path refused for a secret must not bring the secret into the memory.
    return "(a file whose name was refused)" if "\x00" in filename or find(filename) else filename


MAX_LIST = MAX_CONTENT // 5  # each attachment list's characters: 400 named files left no room for the mail


def _listed(label: str, items: list[str], separator: str) -> str:
    """``label`` and ``items`` joined, at most ``MAX_LIST`` characters: those past it are counted."""
    shown: list[str] = []
    used = len(label)
    for index, item in enumerate(items):
        rest = len(items) - index - 1
        tail = len(f"{separator}and {rest:,} more") if rest else 0
        if used + len(separator) + len(item) + tail > MAX_LIST:
            return label + separator.join([*shown, f"and {len(items) - index:,} more"])
        shown.append(item)
        used += len(separator) + len(item)
    return label + separator.join(shown)


def memory_text(mail: ParsedMail, *, stored: list[tuple[str, str]], refused: list[tuple[str, str]]) -> str:
    """The memory's content: the subject, the body, then the attachments; at most ``MAX_CONTENT``
    characters — a longer body is cut and says so."""
    subject = mail.subject or "(no subject)"
    notes = []
    if stored:
        notes.append(_listed("Attachments stored: ", [f"capture:{key} ({name})" for key, name in stored], ", "))
    if refused:
        notes.append(_listed("Attachments not stored: ", [f"{_shown(name)}: {why}" for name, why in refused], "; "))
    footer = "\n".join(notes)
    room = MAX_CONTENT - len(subject) - (len(footer) + 2 if footer else 0) - 2
    body = mail.body
    if len(body) > room:
        note = f"[Trimmed: the mail's text has {len(body):,} characters; the first {{kept:,}} are kept here.]"
        kept = max(0, room - len(note) - 2)  # the "{kept:,}" placeholder is longer than the number
        body = body[:kept].rstrip() + "\n\n" + note.format(kept=kept)
    return "\n\n".join(part for part in (subject, body, footer) if part)
