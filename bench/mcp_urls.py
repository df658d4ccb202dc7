"""The benchmark's URLconf: the real one plus a plain view serving a fixed JSON body.

Never mounted by the product: ``bench.mcp_settings`` points ``ROOT_URLCONF`` here only in
the gunicorn the throughput benchmark starts.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from brain.urls import urlpatterns as brain_urlpatterns


@cache
def _body() -> bytes:
    return Path(os.environ["BRAIN_BENCH_PLAIN_BODY"]).read_bytes()


@csrf_exempt
def plain(request: HttpRequest) -> HttpResponse:
    """The floor: Django's full middleware stack returning the same JSON read_page returned."""
    return HttpResponse(_body(), content_type="application/json")


urlpatterns = [*brain_urlpatterns, path("bench/plain", plain)]
