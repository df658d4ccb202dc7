"""Gunicorn's logger with the secret-redacting filter on its error and access logs.

Gunicorn configures its own handlers (``--access-logfile -``), outside Django's LOGGING,
and its access line carries the request line with the query string. Started with
``--logger-class brain.gunicorn_logging.Logger`` (the Procfile does), every line it writes
has passed ``brain.logging.SecretRedactingFilter``.
"""

from __future__ import annotations

from typing import Any

from gunicorn import glogging

from brain.logging import SecretRedactingFilter


class Logger(glogging.Logger):  # type: ignore[misc]
    """``gunicorn.glogging.Logger`` whose handlers mask secrets before writing."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.addFilter(SecretRedactingFilter())
