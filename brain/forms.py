"""What every Django form of ours does with a secret typed into it."""

from __future__ import annotations

from collections.abc import Iterable

from django import forms
from django.http import QueryDict

from brain.text.secrets import refused

REFUSED_VALUE_MESSAGE = "This looks like a secret (a credential or a card); it is never stored."


def forget_typed(form: forms.BaseForm, field: str) -> None:
    """Drop ``field``'s typed value from what ``form`` shows again (a refused secret is never
    echoed into the page)."""
    key = form.add_prefix(field)
    data = form.data.copy() if isinstance(form.data, QueryDict) else dict(form.data)
    data[key] = ""
    form.data = data


def refuse_typed_secrets(form: forms.BaseForm, fields: Iterable[str]) -> None:
    """An error beside each of ``fields`` whose typed value holds a secret, the value forgotten."""
    for field in fields:
        if refused(str(form.data.get(form.add_prefix(field)) or "")):
            form.add_error(field, REFUSED_VALUE_MESSAGE)
            forget_typed(form, field)
