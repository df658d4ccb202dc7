"""The admin's side of OAuth: revoke a client for everyone through the service.

The toolkit's own admin stays for tokens, read-only, its "Revoke selected … tokens" actions
the token-level revocation (audited), re-registered to scale with many dynamically
registered clients (no "By application" filter, a client or token typed by id, not chosen
from a list of all of them); the client admin gains an action that revokes every token of
the selected clients and removes them, which a plain delete cannot do because the
toolkit forbids deleting token rows directly.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from oauth2_provider.admin import AccessTokenAdmin, ApplicationAdmin, IDTokenAdmin, RefreshTokenAdmin
from oauth2_provider.forms import ApplicationForm
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_id_token_model,
    get_refresh_token_model,
)

from grants.admin import OfferedToAdministrators, admin_actor
from grants.audit import audit_record
from oauth.services import application_remove, tokens_revoke_selected
from oauth.views import refused_metadata

Application = get_application_model()


class BrainApplicationForm(ApplicationForm):  # type: ignore[misc]
    """The toolkit's client form under registration's rules (RFC 8252 redirects, at most 20)."""

    def clean_redirect_uris(self) -> str:
        uris = str(self.cleaned_data.get("redirect_uris") or "").split()
        reason = refused_metadata({"redirect_uris": uris})
        if reason is not None:
            raise ValidationError(reason)
        return " ".join(uris)


class BrainApplicationAdmin(OfferedToAdministrators, ApplicationAdmin):  # type: ignore[misc]
    """Clients in the admin: consent is asked every time (no "skip authorization"), redirect
    URIs follow registration's rules, and each save is audited."""

    form = BrainApplicationForm
    view_on_site = False  # a client has no page of its own here (the toolkit's pages are not served)
    actions = ["revoke_and_remove"]
    readonly_fields = (*ApplicationAdmin.readonly_fields, "skip_authorization")

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        obj.skip_authorization = False
        super().save_model(request, obj, form, change)
        audit_record(actor=admin_actor(request), action="oauth.client_change" if change else "oauth.client_add",
                     target_type="oauth_app", target=str(obj.client_id),
                     metadata={"name": str(obj.name)[:200], "fields": sorted(form.changed_data)})  # fmt: skip

    @admin.action(description="Revoke every token of the selected clients and remove them")
    def revoke_and_remove(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        actor = admin_actor(request)
        chosen = list(queryset)
        revoked = sum(application_remove(actor=actor, application_id=app.pk) for app in chosen)
        self.message_user(request, f"Removed {len(chosen)} client(s); {revoked} token(s) revoked.", messages.SUCCESS)


admin.site.unregister(Application)
admin.site.register(Application, BrainApplicationAdmin)
# OAuth authorization codes live for seconds and are not something to administer; listed as
# "Grants" they were mistaken for Brain's access grants.
admin.site.unregister(get_grant_model())


# The toolkit's token admins, read-only: a token is issued by the OAuth flows and ended by
# revocation, never edited — its change form re-pointed a live token to another person (who
# never consented) or extended it, unaudited. Revoking goes through ``tokens_revoke_selected``
# (audited), and the pages are offered to administrators only. What lists every client is
# gone: with thousands of dynamically registered clients, the "By application" filter listed
# each one on every changelist, and a token's page rendered a <select> of every client.


class ReadOnlyTokens(OfferedToAdministrators):
    list_filter = ()
    list_select_related = ("application", "user")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Revoked, never deleted: deleting an ID token took its access token with it (a
        # cascade), unaudited, and left the refresh token bound to nothing.
        return False

    def _revoke(self, request: HttpRequest, queryset: QuerySet[Any], *, kind: str) -> None:
        """The chosen tokens of ``kind`` ("access" or "refresh") revoked through the service."""
        ids = list(queryset.values_list("pk", flat=True))
        chosen = {
            "access_token_ids": ids if kind == "access" else [],
            "refresh_token_ids": ids if kind == "refresh" else [],
        }
        revoked = tokens_revoke_selected(actor=admin_actor(request), **chosen)
        self.message_user(request, f"Revoked {revoked} {kind} token(s).", messages.SUCCESS)  # type: ignore[attr-defined]


class BrainAccessTokenAdmin(ReadOnlyTokens, AccessTokenAdmin):  # type: ignore[misc]
    raw_id_fields = ("user", "application", "source_refresh_token", "id_token")

    @admin.action(description="Revoke selected access tokens")
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        self._revoke(request, queryset, kind="access")


class BrainRefreshTokenAdmin(ReadOnlyTokens, RefreshTokenAdmin):  # type: ignore[misc]
    raw_id_fields = ("user", "application", "access_token")

    @admin.action(description="Revoke selected refresh tokens")
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        self._revoke(request, queryset, kind="refresh")


class BrainIDTokenAdmin(ReadOnlyTokens, IDTokenAdmin):  # type: ignore[misc]
    raw_id_fields = ("user", "application")


admin.site.unregister(get_access_token_model())
admin.site.register(get_access_token_model(), BrainAccessTokenAdmin)
admin.site.unregister(get_refresh_token_model())
admin.site.register(get_refresh_token_model(), BrainRefreshTokenAdmin)
admin.site.unregister(get_id_token_model())
admin.site.register(get_id_token_model(), BrainIDTokenAdmin)
