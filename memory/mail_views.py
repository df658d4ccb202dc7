"""The Mail capture page: a member turns their inbound address on or off, or rotates it.

Only the member sees their address (it is the capability). Every change goes through
``memory.inbound_mail``; a refusal (no email address on the account) comes back as a message.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponseBase
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from grants.decorators import limited_view
from grants.models import Member
from memory.inbound_mail import (
    MAX_ATTACHMENTS,
    inbound_address_disable,
    inbound_address_enable,
    inbound_address_of,
    inbound_address_rotate,
)
from memory.services import MAX_CONTENT
from memory.views import member_view


@require_http_methods(["GET", "POST"])
@limited_view("write")
@member_view
def mail(request: HttpRequest, member: Member) -> HttpResponseBase:
    if request.method == "POST":
        action = request.POST.get("action", "")
        if action == "on":
            inbound_address_enable(actor=member)
            messages.success(request, "Mail capture is on.")
        elif action == "rotate":
            inbound_address_rotate(actor=member)
            messages.success(request, "You have a new address: mail to the old one is refused from now on.")
        elif action == "off":
            inbound_address_disable(actor=member)
            messages.success(request, "Mail capture is off: your address is retired.")
        else:
            raise Http404
        return redirect("memory:mail")
    context = {
        "address": inbound_address_of(member),
        "email": member.user.email,
        "max_megabytes": settings.BRAIN_INBOUND_MAX_BYTES // (1024 * 1024),
        "max_content": MAX_CONTENT,
        "max_attachments": MAX_ATTACHMENTS,
    }
    return render(request, "memory/mail.html", context)
