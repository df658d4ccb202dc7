"""Structured JSON log lines carrying the request id."""

from __future__ import annotations

import logging
from typing import Any

from pythonjsonlogger.json import JsonFormatter as _BaseJsonFormatter

from brain.request_context import get_request_id
from brain.text.secrets import redact


class RequestIdFilter(logging.Filter):
    """Stamp every record with the current request id (None outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", None):
            record.request_id = get_request_id()
        return True


_STANDARD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message", "asctime", "request_id", "_secrets_redacted", "taskName",
}  # fmt: skip


class SecretRedactingFilter(logging.Filter):
    """Mask every secret in a record before any handler writes it.

    The message is formatted once (``msg % args``), exception text included, and passed
    through ``brain.text.secrets.redact``, which also reads URL escapes — so a card number
    in a query string (``/search?q=4111+1111…``) or a page path never reaches a log line.
    Attached to every handler we configure: Django's console handler, gunicorn's error and
    access logs (``brain.gunicorn_logging``) and Celery's worker and task logs.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "_secrets_redacted", False):
            return True
        try:
            message = record.getMessage()
        except Exception:  # a malformed format string: log what we can, safely
            message = f"{record.msg!r} {record.args!r}"
        record.msg = redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
            # Formatters (python-json-logger's among them) format exc_info afresh when it is set;
            # leave them only the redacted text.
            record.exc_info = None
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        # Extras become fields of the JSON line (Django's request logger adds the request,
        # whose repr holds the URL): each is written as its redacted text.
        for key, value in list(vars(record).items()):
            if key in _STANDARD_ATTRIBUTES or value is None or isinstance(value, bool | int | float):
                continue
            setattr(record, key, redact(value if isinstance(value, str) else repr(value)))
        record._secrets_redacted = True
        return True


class JsonFormatter(_BaseJsonFormatter):
    """One JSON object per line: time, level, logger, message, request_id and extras."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("fmt", "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s")
        kwargs.setdefault("rename_fields", {"asctime": "time", "levelname": "level", "name": "logger"})
        super().__init__(*args, **kwargs)
