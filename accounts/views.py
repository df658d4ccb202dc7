"""People's own pages: accept an invitation, and the Security page (sessions, tokens, apps)."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import SetPasswordForm
from django.contrib.auth.views import LoginView, PasswordChangeView
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from accounts.models import SignedInSession
from accounts.services import InvitationUnusable, invitation_accept, invitation_pending
from accounts.sessions import end_all_sessions, end_other_sessions, end_session
from answers.credentials import question_credential_revoke_own
from answers.models import QuestionCredential
from brain.ratelimit import sign_in_limited
from brain.sign_in_forms import SignInForm
from builds.models import Build, BuildCredential
from builds.services import build_credential_revoke
from grants.audit import audit_record
from grants.principals import principal_for_user
from memory.models import MemoryApiToken
from memory.tokens import api_token_revoke
from oauth.selectors import connections_for
from oauth.services import connection_revoke

_INVITATION_KEY = "_brain_invitation"


@require_GET
@never_cache
def invitation(request: HttpRequest, token: str) -> HttpResponse:
    """The emailed link: keep its token in the session and move it out of the address bar.

    Like Django's password reset, so the token does not leak through the Referer header or
    browser history of the page that asks for the password.
    """
    request.session[_INVITATION_KEY] = token
    return redirect("accounts:invitation-accept")


@require_http_methods(["GET", "POST"])
@never_cache
def invitation_set_password(request: HttpRequest) -> HttpResponse:
    """Choose a password once; the invited person is then signed in."""
    raw = str(request.session.get(_INVITATION_KEY, ""))
    pending = invitation_pending(raw)
    if pending is None:
        return render(request, "accounts/invitation_unusable.html", status=410)
    user = pending.member.user
    form = SetPasswordForm(user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            member = invitation_accept(raw=raw, password=form.cleaned_data["new_password1"])
        except InvitationUnusable:
            return render(request, "accounts/invitation_unusable.html", status=410)
        except ValidationError as error:
            for message in error.message_dict.get("password", error.messages):
                form.add_error("new_password1", message)
        else:
            request.session.pop(_INVITATION_KEY, None)
            login(request, member.user, backend="grants.backends.MemberBackend")
            messages.success(request, f"Welcome, {member.username}. Your password is set; you are signed in.")
            return redirect("home")
    return render(request, "accounts/invitation_accept.html", {"form": form, "invited": pending.member})


# The newest sessions listed by the Security page; scripted sign-ins can leave thousands, and
# "Sign out everywhere else" ends those not listed too.
SESSIONS_SHOWN = 50


@login_required
@require_http_methods(["GET", "POST"])
def security(request: HttpRequest) -> HttpResponse:
    """Where you are signed in, your personal tokens and connected apps, and ending any of them."""
    member = principal_for_user(request.user)
    user = request.user
    assert isinstance(user, get_user_model())  # login_required
    current = request.session.session_key
    if request.method == "POST":
        if "end" in request.POST:
            entry = SignedInSession.objects.filter(user=user, public_id=_uuid(request.POST["end"])).first()
            if entry is None:
                raise Http404("no such session")
            with transaction.atomic():
                end_session(entry)
                audit_record(
                    actor=member,
                    action="session.end",
                    target_type="user",
                    target=user.get_username(),
                    metadata={"session": str(entry.public_id), "own": entry.session_id == current},
                )
            if entry.session_id == current:
                return redirect(settings.LOGIN_URL)
            messages.success(request, "Signed out of that session.")
        elif "end_others" in request.POST:
            with transaction.atomic():
                ended = end_all_sessions(user, keep=current)
                audit_record(actor=member, action="session.end_others", target_type="user",
                             target=user.get_username(), metadata={"sessions": ended})  # fmt: skip
            messages.success(request, f"Signed out of {ended} other session(s).")
        elif "revoke_token" in request.POST and member is not None:
            try:
                api_token_revoke(actor=member, token_id=int(request.POST["revoke_token"]))
            except (MemoryApiToken.DoesNotExist, ValueError) as exc:
                raise Http404 from exc
            messages.success(request, "Token revoked: it stops working at once.")
        elif "revoke_question_credential" in request.POST and member is not None:
            try:
                question_credential_revoke_own(
                    actor=member, credential_id=int(request.POST["revoke_question_credential"])
                )
            except (QuestionCredential.DoesNotExist, ValueError) as exc:
                raise Http404 from exc
            messages.success(request, "Question credential revoked: it stops working at once.")
        elif "revoke_build_credential" in request.POST and member is not None:
            try:
                build_credential_revoke(actor=member, credential_id=int(request.POST["revoke_build_credential"]))
            except (BuildCredential.DoesNotExist, ValueError) as exc:
                raise Http404 from exc
            messages.success(request, "Build credential revoked: the agent using it stops at once.")
        elif "disconnect" in request.POST and member is not None:
            try:
                revoked = connection_revoke(actor=member, application_id=int(request.POST["disconnect"]))
            except (ObjectDoesNotExist, ValueError) as exc:
                raise Http404 from exc
            messages.success(request, f"Disconnected: {revoked} token(s) revoked.")
        else:
            raise Http404("unknown action")
        return redirect("accounts:security")
    live = SignedInSession.objects.live().filter(user=user)
    sessions = list(live.order_by("-last_seen_at")[:SESSIONS_SHOWN])
    if current and all(entry.session_id != current for entry in sessions):
        sessions = [*live.filter(session_id=current)[:1], *sessions]  # this browser, always
    sessions_total = live.count() if len(sessions) >= SESSIONS_SHOWN else len(sessions)
    context = {
        "sessions": sessions,
        "sessions_total": sessions_total,
        "sessions_hidden": max(sessions_total - len(sessions), 0),
        "current": current,
        "member": member,
        "tokens": MemoryApiToken.objects.filter(member=member, revoked_at__isnull=True) if member else [],
        "connections": connections_for(member) if member else [],
        "question_credentials": (
            QuestionCredential.objects.filter(member=member, revoked_at__isnull=True) if member else []
        ),
        "build_credentials": (
            BuildCredential.objects.filter(
                build__requester=member,
                build__status=Build.Status.OPEN,
                revoked_at__isnull=True,
                expires_at__gt=timezone.now(),
            ).select_related("build")
            if member
            else []
        ),
    }
    return render(request, "accounts/security.html", context)


def _uuid(value: str) -> uuid.UUID:
    """The UUID in a form field; a malformed one is the nil UUID, which names no session."""
    try:
        return uuid.UUID(value)
    except ValueError:
        return uuid.UUID(int=0)


class SignInView(LoginView):
    """Django's sign-in, offering single sign-on beside the password when it is configured."""

    template_name = "registration/login.html"
    authentication_form = SignInForm  # the username bounded before it is tried (a 500 past 255)

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response: HttpResponse = sign_in_limited(request) or super().post(request, *args, **kwargs)
        return response

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["sso_label"] = settings.BRAIN_OIDC_LABEL if settings.BRAIN_OIDC_ENABLED else ""
        problem = self.request.GET.get("sso", "")
        context["sso_problem"] = problem if problem in ("failed", "cancelled", "provider", "expired") else ""
        return context


class PasswordChange(PasswordChangeView):
    """Change your own password. Django ends every other session (each holds a hash of the old
    password); their register entries go too, so the Security page lists only what is signed in."""

    template_name = "accounts/password_change.html"
    success_url = reverse_lazy("accounts:security")

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        ended = end_other_sessions(self.request)
        audit_record(actor=principal_for_user(self.request.user), action="member.password_change",
                     target_type="user", target=str(self.request.user.get_username()))  # fmt: skip
        elsewhere = f" Your {ended} other session{'s' if ended != 1 else ''} ended." if ended else ""
        messages.success(self.request, f"Password changed.{elsewhere}")
        return response
