"""REST's JSON parser: DRF's, with ``brain.inputs.parse_json``'s rules.

Its own module because DRF reads ``DEFAULT_PARSER_CLASSES`` while ``rest_framework.views`` is
still being imported, and ``brain.inputs`` imports that (through ``brain.errors``).
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class StrictJSONParser(JSONParser):
    """A REST body is refused in the same words as every other JSON body: nesting, NaN and
    overflowing numbers, and text no database stores (NUL, lone surrogates — DRF's own parser
    let a ``"\\ud800"`` through to the database driver: a 500 on every text field)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        from brain.inputs import InputRefused, parse_json  # at call time: see the module's docstring

        try:
            return parse_json(stream.read() if stream is not None else b"")
        except InputRefused as refused:
            raise ParseError(str(refused)) from None
