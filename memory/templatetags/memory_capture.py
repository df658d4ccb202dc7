"""``{% capture_bookmarklet %}``: the browser-capture bookmarklet as a link to drag to the bookmarks bar."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from memory.capture_views import bookmarklet_for

register = template.Library()


@register.simple_tag(takes_context=True)
def capture_bookmarklet(context: dict[str, Any], label: str = "Capture to Brain") -> SafeString:
    """An ``<a href="javascript:…">`` built for the brain the page was served from (needs ``request``)."""
    return format_html(
        '<a class="bookmarklet" href="{}" title="Drag to your bookmarks bar">{}</a>',
        bookmarklet_for(context["request"]),
        label,
    )
