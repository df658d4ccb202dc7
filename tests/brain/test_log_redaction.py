"""No log line holds a secret: Django's console handler, gunicorn's access and error logs, Celery."""

from __future__ import annotations

import datetime as dt
import io
import logging
import shlex
import tempfile
from pathlib import Path
from types import SimpleNamespace

from celery.signals import after_setup_logger, after_setup_task_logger
from django.test import SimpleTestCase
from gunicorn.config import Config

from brain.logging import SecretRedactingFilter

CARD_QUERY = "4111" + "+1111+1111+1111"
CARD_PATH = "4111-1111-" + "1111-1111"
AWS = "AKIA" + "QYLPMN5HHHFPZAM2"
FRAGMENTS = ("1111+1111", "1111-1111", "MN5HHHFPZAM2")
ROOT = Path(__file__).resolve().parents[2]


def assert_clean(text: str) -> None:
    for fragment in FRAGMENTS:
        assert fragment not in text, text


class GunicornLogTests(SimpleTestCase):
    def test_the_procfile_starts_gunicorn_with_the_redacting_logger(self) -> None:
        web = next(line for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("web:"))
        arguments = shlex.split(web.split(":", 1)[1])
        assert arguments[arguments.index("--logger-class") + 1] == "brain.gunicorn_logging.Logger"
        assert "brain.gunicorn_logging.Logger" in (ROOT / "docker-compose.yml").read_text()

    def test_access_and_error_lines_hold_no_secret(self) -> None:
        log_file = Path(self.enterContext(_temporary_directory())) / "access.log"
        config = Config()
        config.set("accesslog", str(log_file))
        config.set("errorlog", str(log_file))
        config.set("logger_class", "brain.gunicorn_logging.Logger")
        logger = config.logger_class(config)
        environ = {
            "REQUEST_METHOD": "GET",
            "RAW_URI": f"/search?q={CARD_QUERY}",
            "PATH_INFO": "/search",
            "QUERY_STRING": f"q={CARD_QUERY}",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_REFERER": f"https://brain.example.org/pages/topics/{CARD_PATH}.md",
        }
        response = SimpleNamespace(status="200 OK", sent=12, headers=[])
        request = SimpleNamespace(headers=[("REFERER", environ["HTTP_REFERER"])])
        logger.access(response, request, environ, dt.timedelta(milliseconds=5))
        logger.error("worker failed on /memory/recall?q=%s", AWS)
        for handler in [*logger.access_log.handlers, *logger.error_log.handlers]:
            handler.flush()
        written = log_file.read_text()
        assert "GET /search?q=" in written
        assert "[REDACTED payment_card]" in written
        assert_clean(written)


class CeleryLogTests(SimpleTestCase):
    def test_worker_and_task_handlers_get_the_filter(self) -> None:
        for signal in (after_setup_logger, after_setup_task_logger):
            stream = io.StringIO()
            logger = logging.getLogger(f"test.celery.{signal.name}")
            logger.handlers = [logging.StreamHandler(stream)]
            logger.propagate = False
            signal.send(sender=None, logger=logger, loglevel=logging.INFO, logfile=None, format="%(message)s",
                        colorize=False)  # fmt: skip
            assert any(isinstance(f, SecretRedactingFilter) for f in logger.handlers[0].filters)
            logger.warning("task ingest.extract failed for %s", f"capture key notes/{CARD_PATH}")
            assert "[REDACTED payment_card]" in stream.getvalue()
            assert_clean(stream.getvalue())


class ConsoleLogTests(SimpleTestCase):
    def test_messages_arguments_and_tracebacks_are_redacted(self) -> None:
        root = logging.getLogger()
        handler = next(h for h in root.handlers if any(isinstance(f, SecretRedactingFilter) for f in h.filters))
        stream = io.StringIO()
        assert isinstance(handler, logging.StreamHandler)
        previous = handler.setStream(stream)
        try:
            logging.getLogger("brain.request").error("GET %s -> 500", f"/pages/topics/{CARD_PATH}.md")
            # Django's request logger passes the request as an extra: it becomes a JSON field.
            from django.test import RequestFactory

            request = RequestFactory().get(f"/search?q={CARD_QUERY}")
            logging.getLogger("django.request").error("Service Unavailable: /search", extra={"request": request})
            try:
                raise ValueError(f"bad token {AWS}")
            except ValueError:
                logging.getLogger("brain.tasks").exception("job failed")
        finally:
            handler.setStream(previous)
        written = stream.getvalue()
        assert "job failed" in written
        assert "ValueError" in written
        assert_clean(written)


def _temporary_directory() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory()
