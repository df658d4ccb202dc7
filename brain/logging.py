"""Structured JSON log lines carrying the request id."""

from __future__ import annotations

import logging
from typing import Any

from pythonjsonlogger.json import JsonFormatter as _BaseJsonFormatter

from brain.request_context import get_request_id


class RequestIdFilter(logging.Filter):
    """Stamp every record with the current request id (None outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", None):
            record.request_id = get_request_id()
        return True


class JsonFormatter(_BaseJsonFormatter):
    """One JSON object per line: time, level, logger, message, request_id and extras."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("fmt", "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s")
        kwargs.setdefault("rename_fields", {"asctime": "time", "levelname": "level", "name": "logger"})
        super().__init__(*args, **kwargs)
