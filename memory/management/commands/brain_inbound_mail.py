"""``python manage.py brain_inbound_mail``: the SMTP receiver for mail capture, until interrupted.

Listens on ``BRAIN_INBOUND_SMTP_HOST:BRAIN_INBOUND_SMTP_PORT`` (default 127.0.0.1:2525; the
Procfile's ``mail`` process, so ``make run`` starts it) for ``memory+<token>@BRAIN_INBOUND_DOMAIN``.
Each accepted or refused message is one log line without content (logger ``memory.inbound_mail``).
Stops cleanly on Ctrl-C or SIGTERM. Production: behind the organisation's MX, never open to
the internet directly (docs/operations.md).
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.inbound_smtp import inbound_controller


class Command(BaseCommand):
    help = "Receive forwarded mail as memories (SMTP) until interrupted."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", help="address to listen on (default BRAIN_INBOUND_SMTP_HOST)")
        parser.add_argument("--port", type=int, help="port to listen on (default BRAIN_INBOUND_SMTP_PORT)")

    def handle(self, *args: Any, **options: Any) -> None:
        host = options.get("host") or settings.BRAIN_INBOUND_SMTP_HOST
        port = options.get("port") or settings.BRAIN_INBOUND_SMTP_PORT
        controller = inbound_controller(hostname=host, port=port)
        stopping = threading.Event()
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, lambda *_: stopping.set())
        try:
            controller.start()
        except OSError as exc:
            raise CommandError(
                f"cannot listen on {host}:{port} ({exc.strerror or exc}); "
                "set BRAIN_INBOUND_SMTP_HOST / BRAIN_INBOUND_SMTP_PORT"
            ) from None
        self.stdout.write(
            f"inbound mail: listening on {host}:{port} for memory+…@{settings.BRAIN_INBOUND_DOMAIN}", ending="\n"
        )
        self.stdout.flush()
        try:
            while not stopping.wait(1.0):  # a timed wait: the signal handler runs between waits
                pass
        finally:
            controller.stop()
            self.stdout.write("inbound mail: stopped")
