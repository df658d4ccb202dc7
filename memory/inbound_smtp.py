"""The inbound SMTP receiver (aiosmtpd): RCPT and DATA answered by ``memory.inbound_mail``.

The asyncio loop only speaks SMTP; every database call runs through ``sync_to_async``
with ``thread_sensitive=True`` (one thread for all of Django, as Django's own async views do)
and gives its connection back afterwards, like a request does. One recipient per message:
each message is one member's. Each accepted or refused message is logged as one line with
the member id, the reply code and counts — never an address (it holds the secret token)
nor any content.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections

from memory.inbound_mail import MailRefused, inbound_recipient_check, mail_capture

logger = logging.getLogger("memory.inbound_mail")
_T = TypeVar("_T")

TEMPORARY_FAILURE = "451 4.3.0 Temporary failure: try again later"


def _with_connection(function: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """Run ``function`` as one unit of database work: a fresh or healthy connection in, and
    a closed one out when it is past its age (``CONN_MAX_AGE``) or broken — a request's rule."""
    close_old_connections()
    try:
        return function(*args, **kwargs)
    finally:
        close_old_connections()


async def _django(function: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    return await sync_to_async(_with_connection, thread_sensitive=True)(function, *args, **kwargs)


def _peer(session: Session) -> str:
    peer = session.peer
    return str(peer[0]) if isinstance(peer, tuple) and peer else str(peer or "?")


class InboundMailHandler:
    """aiosmtpd hooks. An unexpected error (the database or Redis away) answers 451, so the
    sending server keeps the mail and retries; its traceback goes to the log (redacted there)."""

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, rcpt_options: list[str]
    ) -> str:
        if envelope.rcpt_tos:
            return "452 4.5.3 One recipient per message: send a copy to each address"
        try:
            member_id = await _django(inbound_recipient_check, recipient=address, mail_from=envelope.mail_from or "")
        except MailRefused as refused:
            logger.info("inbound mail refused at RCPT: %s %s (peer %s)", refused.code, refused.status, _peer(session))
            return refused.reply
        except Exception:
            logger.exception("inbound mail RCPT failed; answered 451")
            return TEMPORARY_FAILURE
        logger.debug("inbound mail recipient accepted for member %s", member_id)
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        raw = envelope.original_content or b""
        try:
            receipt = await _django(
                mail_capture, recipient=envelope.rcpt_tos[0], mail_from=envelope.mail_from or "", raw=raw
            )
        except MailRefused as refused:
            logger.info(
                "inbound mail refused: %s %s, %d bytes (peer %s)",
                refused.code,
                refused.status,
                len(raw),
                _peer(session),
            )
            return refused.reply
        except Exception:
            logger.exception("inbound mail capture failed; answered 451")
            return TEMPORARY_FAILURE
        logger.info(
            "inbound mail accepted: member %s, memory %s %s, %d attachment(s) stored, %d refused, %d bytes",
            receipt.member_id, receipt.memory_id, receipt.outcome, len(receipt.stored_attachments),
            receipt.refused_attachments, len(raw),
        )  # fmt: skip
        return receipt.reply


def inbound_controller(*, hostname: str | None = None, port: int | None = None) -> Controller:
    """A threaded aiosmtpd ``Controller`` for the receiver (``start()`` binds, ``stop()`` ends it).

    Defaults: ``BRAIN_INBOUND_SMTP_HOST`` / ``BRAIN_INBOUND_SMTP_PORT``; messages over
    ``BRAIN_INBOUND_MAX_BYTES`` get 552 before they are stored.
    """
    # aiosmtpd logs every sender and recipient at INFO: a recipient is a secret address.
    logging.getLogger("mail.log").setLevel(logging.WARNING)
    return Controller(
        InboundMailHandler(),
        hostname=hostname or settings.BRAIN_INBOUND_SMTP_HOST,
        port=settings.BRAIN_INBOUND_SMTP_PORT if port is None else port,
        server_hostname=settings.BRAIN_INBOUND_DOMAIN,
        ident="Brain inbound mail",
        data_size_limit=settings.BRAIN_INBOUND_MAX_BYTES,
        enable_SMTPUTF8=True,
    )
