"""Content negotiation for REST v1: DRF's, with an unknown ``?format=`` refused by name."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.negotiation import DefaultContentNegotiation


class FormatNamed(DefaultContentNegotiation):
    """DRF answers an unknown ``?format=`` with 404, as if the path did not exist (the OpenAPI
    document publishes the choices as an enum): it is a 400 naming them."""

    def filter_renderers(self, renderers: list[Any], format: str) -> list[Any]:
        kept = [renderer for renderer in renderers if renderer.format == format]
        if not kept:
            choices = ", ".join(sorted({str(renderer.format) for renderer in renderers}))
            raise ParseError(f"format must be one of {choices}", code="invalid")
        return kept
