"""Content negotiation for REST v1: DRF's, with an unknown ``?format=`` refused by name."""

from __future__ import annotations

from collections.abc import Iterable

from rest_framework.exceptions import ParseError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer


class FormatNamed(DefaultContentNegotiation):
    """DRF answers an unknown ``?format=`` with 404, as if the path did not exist (the OpenAPI
    document publishes the choices as an enum): it is a 400 naming them."""

    def filter_renderers(self, renderers: Iterable[BaseRenderer], format: str) -> list[BaseRenderer]:
        offered = list(renderers)
        kept = [renderer for renderer in offered if renderer.format == format]
        if not kept:
            choices = ", ".join(sorted({str(renderer.format) for renderer in offered}))
            raise ParseError(f"format must be one of {choices}", code="invalid")
        return kept
