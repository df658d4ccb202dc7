"""A figure's value is a number as written: never read into one nobody typed."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from corpus.figures import figure_check
from grants.principals import SYSTEM


@pytest.mark.parametrize(
    "value",
    ["1_000", " 12 ", "١٢", "12 ", "1,000", "0x1A", "NaN", "Infinity", "1e18"],
)
def test_a_figure_value_is_refused_unless_written_as_a_plain_number(value: str) -> None:
    """Decimal read "1_000", " 12 " and other scripts' digits: each a number nobody typed.
    Refused, naming the value field (a value is kept to 6 decimal places, rounded)."""
    with pytest.raises(ValidationError) as refused:
        figure_check(actor=SYSTEM, page_path="topics/a.md", key="seats", value=value)
    assert "value" in refused.value.message_dict


@pytest.mark.parametrize(("value", "stored"), [("12", "12"), ("-3.50", "-3.5"), (".5", "0.5"), ("1e3", "1E+3"),
                                               ("0.0000015", "0.000002"), (7, "7")])  # fmt: skip
def test_a_plain_number_is_kept(value: object, stored: str) -> None:
    assert str(figure_check(actor=SYSTEM, page_path="topics/a.md", key="seats", value=value)) == stored
