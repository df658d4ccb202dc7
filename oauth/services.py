"""The one write path for a member's OAuth connections."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.db import transaction
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_refresh_token_model,
    revoke_access_token,
)

from grants.audit import audit_record
from grants.models import Member
from grants.principals import Principal
from grants.services import require_administrator

AccessToken = get_access_token_model()
Application = get_application_model()
Grant = get_grant_model()
RefreshToken = get_refresh_token_model()


def connection_revoke(*, actor: Member, application_id: int) -> int:
    """Disconnect one app from ``actor``: revoke every token and drop every code they granted it.

    Returns how many tokens were revoked. The app's very next request with any of them
    fails. Revocation goes through the toolkit's own path, which keeps a revoked refresh
    token as a tombstone so a replay of it is recognised. An app ``actor`` never connected
    is ``ObjectDoesNotExist`` — the same answer as an app that does not exist.
    """
    with transaction.atomic():
        application = Application.objects.filter(pk=application_id).first()
        user = actor.user
        if application is None or not (
            AccessToken.objects.filter(user=user, application=application).exists()
            or RefreshToken.objects.filter(user=user, application=application, revoked__isnull=True).exists()
        ):
            raise ObjectDoesNotExist("no such connected app")
        revoked = 0
        for access_token in AccessToken.objects.filter(user=user, application=application):
            revoke_access_token(access_token)
            revoked += 1
        for refresh_token in RefreshToken.objects.filter(user=user, application=application, revoked__isnull=True):
            refresh_token.revoke()
            revoked += 1
        Grant.objects.filter(user=user, application=application).delete()
        audit_record(
            actor=actor,
            action="oauth.revoke",
            target_type="oauth_app",
            target=application.name or application.client_id,
            metadata={"tokens": revoked},
        )
        return revoked


def application_remove(*, actor: Principal, application_id: int) -> int:
    """Remove an OAuth client for everyone: revoke all its tokens, then delete it.

    Administrators only. Returns how many tokens were revoked. The client's next request
    with any token fails, and it cannot start a new flow until it registers again.
    """
    require_administrator(actor)
    return _remove(actor=actor, application_id=application_id, how="admin")


def application_self_remove(*, application_id: int) -> int:
    """An OAuth client removing itself with its registration access token (RFC 7592 DELETE).

    The same removal as an administrator's, audited with no actor (the client is not a
    principal) and ``how: registration_token``. Returns how many tokens were revoked.
    """
    return _remove(actor=None, application_id=application_id, how="registration_token")


def _remove(*, actor: Principal | None, application_id: int, how: str) -> int:
    with transaction.atomic():
        application = Application.objects.select_for_update().get(pk=application_id)
        revoked = 0
        for access_token in AccessToken.objects.filter(application=application):
            revoke_access_token(access_token)
            revoked += 1
        for refresh_token in RefreshToken.objects.filter(application=application, revoked__isnull=True):
            refresh_token.revoke()
            revoked += 1
        label = application.name or application.client_id
        application.delete()  # cascades the codes and the revoked-token tombstones
        audit_record(actor=actor, action="oauth.client_remove", target_type="oauth_app", target=label,
                     metadata={"tokens": revoked, "how": how})  # fmt: skip
        return revoked


def tokens_revoke_all(*, member: Member) -> int:
    """Revoke every OAuth token ``member`` granted to any app, and drop their pending codes.

    Suspension's part of OAuth: each app's next request with any of the member's tokens
    fails, and refresh tokens stay as revoked tombstones so a replay is recognised. Runs
    inside the caller's transaction; returns how many tokens were revoked.
    """
    user = member.user
    revoked = 0
    for access_token in AccessToken.objects.filter(user=user):
        revoke_access_token(access_token)
        revoked += 1
    for refresh_token in RefreshToken.objects.filter(user=user, revoked__isnull=True):
        refresh_token.revoke()
        revoked += 1
    Grant.objects.filter(user=user).delete()
    return revoked


def tokens_revoke_selected(*, actor: Principal, access_token_ids: list[int], refresh_token_ids: list[int]) -> int:
    """An administrator revokes chosen tokens (the admin's revoke actions); returns how many.

    Administrators only, in one transaction, through the toolkit's revocation (a refresh
    token stays as a tombstone); one ``oauth.admin_revoke`` event per person whose tokens
    were revoked, naming the clients. Already-revoked refresh tokens are left as they are.
    """
    require_administrator(actor)
    revoked: dict[str, dict[str, int]] = {}

    def count(token: Any) -> None:  # an access or a refresh token
        person = token.user.get_username() if token.user is not None else "(no user)"
        app = token.application
        client = (app.name or app.client_id)[:100] if app is not None else "(no client)"
        revoked.setdefault(person, {}).setdefault(client, 0)
        revoked[person][client] += 1

    with transaction.atomic():
        chosen = AccessToken.objects.select_related("user", "application").filter(pk__in=access_token_ids)
        for access_token in chosen.select_for_update(of=("self",)):
            count(access_token)
            revoke_access_token(access_token)
        refresh = RefreshToken.objects.select_related("user", "application")
        for refresh_token in refresh.filter(pk__in=refresh_token_ids, revoked__isnull=True).select_for_update(
            of=("self",)
        ):
            count(refresh_token)
            refresh_token.revoke()
        for person, clients in sorted(revoked.items()):
            metadata = {"tokens": sum(clients.values()), "clients": dict(sorted(clients.items()))}
            audit_record(actor=actor, action="oauth.admin_revoke", target_type="user", target=person, metadata=metadata)
    return sum(sum(clients.values()) for clients in revoked.values())
