"""The admin's side of OAuth: revoke a client for everyone through the service.

The toolkit's own admin stays for tokens (its "Revoke selected access tokens" action is
the token-level revocation); the client admin gains an action that revokes every token of
the selected clients and removes them, which a plain delete cannot do because the
toolkit forbids deleting token rows directly.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from oauth2_provider.admin import ApplicationAdmin
from oauth2_provider.models import get_application_model, get_grant_model

from grants.admin import admin_actor
from oauth.services import application_remove

Application = get_application_model()


class BrainApplicationAdmin(ApplicationAdmin):  # type: ignore[misc]
    actions = ["revoke_and_remove"]

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
