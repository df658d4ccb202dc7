"""Which login a typed name means: names are one however they are capitalised or case-folded.

Used where a name is typed: signing in (``grants.backends``), counting failed sign-ins
(``brain.sign_in_forms``) and refusing a name already taken (``grants.services``). Here,
below the apps, so each of those reads one rule.
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth import get_user_model

MAX_USERNAME = 150  # the column's width: a longer name is no one's (and is not looked up)

# Characters whose folded form PostgreSQL's case-insensitive match does not reach (the NUL
# stands for the "ss" a "ß" folds to).
_FOLDED_SPELLINGS = {"\x00": "(?:ss|ß|ẞ)", "σ": "[σς]"}


def login_named(username: str) -> Any:
    """The login (user row) whose name reads as ``username``: the exact name first, else the
    one equal to it case-insensitively (PostgreSQL's ``upper``: ``alıce`` is alice too) or by
    Unicode's case folding (``STRASSE`` is straße), else None. Names are unique so
    (``grants.services.username_taken``), so at most one login answers."""
    User = get_user_model()
    exact = User.objects.filter(username=username).first()
    if exact is not None:
        return exact
    same_case = User.objects.filter(username__iexact=username).order_by("pk").first()
    if same_case is not None:
        return same_case
    folded = username.casefold()
    if "ss" not in folded and "σ" not in folded:
        return None
    # The few spellings that fold to the same text, found by PostgreSQL, then compared here.
    pattern = "".join(_FOLDED_SPELLINGS.get(char, re.escape(char)) for char in folded.replace("ss", "\x00"))
    candidates = User.objects.filter(username__iregex=f"^{pattern}$").order_by("pk")
    return next((user for user in candidates if str(user.username).casefold() == folded), None)
