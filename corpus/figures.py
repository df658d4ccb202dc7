"""Figures: a tracked value on a live page (key, value, unit, as of, cited capture), with its history."""

from __future__ import annotations

import datetime as dt
import re
from decimal import ROUND_HALF_EVEN, Context, Decimal, InvalidOperation

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from corpus.models import Figure, Page, Source
from corpus.services import _refuse_secrets
from grants.audit import audit_record
from grants.models import Member
from grants.principals import Principal


def figure_source(*, actor: Principal, source_key: str | None, branch_sources: frozenset[str]) -> Source | None:
    """The capture a figure cites: one ``actor`` can read, or a draft on the same branch;
    ``Source.DoesNotExist`` otherwise (a capture they cannot read looks like none)."""
    if source_key is None:
        return None
    if source_key in branch_sources:
        return Source.objects.get(key=source_key)
    return Source.objects.visible_to(actor, "read").get(key=source_key)


# Figure.value is numeric(24, 6): 18 digits before the point, 6 after.
FIGURE_PLACES = Decimal("0.000001")
FIGURE_LIMIT = Decimal(10) ** 18
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?", re.ASCII)


def _storable(number: Decimal) -> tuple[Decimal, str]:
    """(the number rounded to the 6 places a figure keeps, what is wrong or "").

    Checked here, not left to PostgreSQL: a value beyond the column was an unhandled error at
    record time, or — held on a build for a page not yet live — at the approver's promotion;
    and ``1E-999999`` written out in full is a million characters.
    """
    if number.adjusted() >= 18:
        return Decimal(0), "value must be less than 10^18 in magnitude"
    context = Context(prec=40, rounding=ROUND_HALF_EVEN)
    rounded = number.quantize(FIGURE_PLACES, context=context)
    if abs(rounded) >= FIGURE_LIMIT:
        return Decimal(0), "value must be less than 10^18 in magnitude"
    return rounded.normalize(context=context), ""  # "14", not "14.000000", where it is shown as typed


def figure_check(*, actor: Principal, page_path: str, key: str, value: object, unit: str = "") -> Decimal:
    """The value as a number, once key, value and unit are well formed and hold no secret
    (``ValidationError`` naming each bad field; ``SecretRefused``). No permission check."""
    errors: dict[str, str] = {}
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,127}", key or ""):
        errors["key"] = "figure key is 1-128 of a-z, 0-9, '.', '-', '_'"
    try:
        # As written, never repaired: Decimal also reads "1_000", " 12 " and other scripts'
        # digits ("١٢"), each stored as a number nobody typed.
        if isinstance(value, str) and not _NUMBER.fullmatch(value):
            raise InvalidOperation
        number = Decimal(str(value))
        if not number.is_finite():
            raise InvalidOperation
    except (InvalidOperation, ValueError):
        errors["value"] = "value must be a finite number"
        number = Decimal(0)
    else:
        number, problem = _storable(number)
        if problem:
            errors["value"] = problem
    if len(unit) > 32:
        errors["unit"] = "unit is at most 32 characters"
    if errors:
        raise ValidationError(errors)
    _refuse_secrets(
        actor=actor,
        fields=[("figure key", key), ("figure unit", unit), ("figure value", str(value)), ("page", page_path)],
        target=key,
    )
    return number


def figure_record(
    *,
    actor: Principal,
    page_path: str,
    key: str,
    value: str | int | float | Decimal,
    unit: str = "",
    as_of: dt.date,
    source_key: str | None = None,
    draft: bool = False,
    branch_sources: frozenset[str] = frozenset(),
) -> Figure:
    """Record a new value of figure ``key`` on a live page (history is kept).

    ``draft=True`` records it on a build branch: invisible until the build is promoted.
    ``branch_sources``: keys of draft captures on that branch, which the figure may cite.

    Needs ``suggest`` on the page; a page the actor cannot see is ``Page.DoesNotExist``.
    """
    number = figure_check(actor=actor, page_path=page_path, key=key, value=value, unit=unit)
    with transaction.atomic():
        page = Page.objects.visible_to(actor, "read").get(path=page_path)
        if not Page.objects.visible_to(actor, "suggest").filter(pk=page.pk).exists():
            raise PermissionDenied(f"you hold no suggest permission on {page_path}")
        source = figure_source(actor=actor, source_key=source_key, branch_sources=branch_sources)
        figure = Figure.objects.create(
            key=key,
            value=number,
            unit=unit,
            as_of=as_of,
            page=page,
            source=source,
            recorded_by=actor if isinstance(actor, Member) else None,
            is_live=not draft,
            recorded_under_id=None if draft else page.current_revision_id,  # a draft's: at promotion
        )
        audit_record(
            actor=actor, action="figure.record", target_type="figure", target=key, metadata={"page": page_path}
        )
    return figure
