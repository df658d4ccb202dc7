"""Reads of a member's OAuth connections (the "Connected apps" page)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_refresh_token_model

from grants.models import Member

AccessToken = get_access_token_model()
RefreshToken = get_refresh_token_model()


@dataclass
class Connection:
    """One app a member has connected: what it may do, since when, until when."""

    application_id: int
    name: str
    connected_at: dt.datetime
    scopes: set[str] = field(default_factory=set)
    access_expires: dt.datetime | None = None

    @property
    def sorted_scopes(self) -> list[str]:
        return sorted(self.scopes)

    def note(self, scope: str, created: dt.datetime, expires: dt.datetime | None) -> None:
        self.scopes.update(scope.split())
        self.connected_at = min(self.connected_at, created)
        if expires is not None and (self.access_expires is None or expires > self.access_expires):
            self.access_expires = expires


def connections_for(member: Member) -> list[Connection]:
    """The apps holding a live access or refresh token of ``member``, newest first."""
    now = timezone.now()
    found: dict[int, Connection] = {}

    def connection(application_id: int, name: str, created: dt.datetime) -> Connection:
        if application_id not in found:
            found[application_id] = Connection(application_id, name or "Unnamed app", created)
        return found[application_id]

    access = AccessToken.objects.filter(user=member.user, expires__gt=now, application__isnull=False)
    for token in access.select_related("application"):
        connection(token.application.pk, token.application.name, token.created).note(
            token.scope, token.created, token.expires
        )
    refresh = RefreshToken.objects.filter(user=member.user, revoked__isnull=True, application__isnull=False)
    for refresh_token in refresh.select_related("application", "access_token"):
        scope = refresh_token.access_token.scope if refresh_token.access_token else ""
        connection(refresh_token.application.pk, refresh_token.application.name, refresh_token.created).note(
            scope, refresh_token.created, None
        )
    return sorted(found.values(), key=lambda c: c.connected_at, reverse=True)
