"""Shared test fixtures: the personas and small builders that go through the services."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from django.test import TestCase
from django.utils import timezone

from corpus.models import Page, Source
from corpus.services import revision_create, revision_promote
from corpus.sources import source_create
from grants.models import Grant, Member
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create

DISCOUNT_POLICY = "topics/pricing/discount-policy.md"


def page_markdown(
    *,
    owner: str = "alice",
    title: str = "A page",
    body: str | None = None,
    category: str | None = None,
    sensitivity: str = "ordinary",
    change_policy: str = "gate",
    sources: list[str] | None = None,
    related: list[str] | None = None,
    as_of: str = "2026-09-02",
    type: str = "topic",
) -> str:
    lines = [
        "---",
        f"type: {type}",
        f"owner: {owner}",
        "status: approved",
        f"change_policy: {change_policy}",
        f"as_of: {as_of}",
        f"title: {title}",
        f"sensitivity: {sensitivity}",
    ]
    if category:
        lines.append(f"category: {category}")
    if sources:
        lines.append("sources:")
        lines += [f"  - capture:{source}" for source in sources]
    if related:
        lines.append("related:")
        lines += [f"  - {path}" for path in related]
    lines.append("---")
    lines.append("")
    lines.append(body if body is not None else f"# {title}\n\n## Summary\n\nSome text about {title.lower()}.\n")
    return "\n".join(lines)


def publish(path: str, **kwargs: Any) -> Page:
    """Create and promote a page as the system actor (test set-up)."""
    revision, _ = revision_create(actor=SYSTEM, path=path, markdown=page_markdown(**kwargs))
    return revision_promote(actor=SYSTEM, revision=revision)


def capture(key: str, **kwargs: Any) -> Source:
    defaults: dict[str, Any] = {"kind": "document", "title": key, "text": f"text of {key}"}
    defaults.update(kwargs)
    return source_create(actor=SYSTEM, key=key, captured_at=dt.datetime(2026, 1, 15, tzinfo=dt.UTC), **defaults)


class BrainTestCase(TestCase):
    """Personas, created once per class through the services:

    - Alice: read on ``topics/``, approve on ``topics/pricing/`` and approve naming the
      restricted ``topics/pricing/discount-policy.md``;
    - Bob: read on ``topics/``;
    - Charlie: an admin with no grants (admin confers no content access).
    """

    alice: Member
    bob: Member
    charlie: Member
    alice_exact_grant: Grant

    @classmethod
    def setUpTestData(cls) -> None:
        cls.alice = member_create(actor=SYSTEM, username="alice", email="alice@example.com", password="pw-alice-123")
        cls.bob = member_create(actor=SYSTEM, username="bob", email="bob@example.com", password="pw-bob-12345")
        cls.charlie = member_create(
            actor=SYSTEM, username="charlie", email="charlie@example.com", role="admin", password="pw-charlie-1234"
        )
        grant_issue(actor=SYSTEM, member=cls.alice, path="topics/", permission="read")
        grant_issue(actor=SYSTEM, member=cls.alice, path="topics/pricing/", permission="approve")
        cls.alice_exact_grant = grant_issue(actor=SYSTEM, member=cls.alice, path=DISCOUNT_POLICY, permission="approve")
        grant_issue(actor=SYSTEM, member=cls.bob, path="topics/", permission="read")


def start_of_fresh_rate_window(margin: float = 5.0) -> None:
    """Wait until the current one-minute rate window has ``margin`` seconds left at least,
    so a test's few requests all land in the same fixed window (no roll-over mid-test)."""
    import time

    while 60 - time.time() % 60 < margin:
        time.sleep(0.25)


class ErrorRecords(logging.Handler):
    """Collects the ERROR records logged while attached (a surface test asserts none)."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def oauth_access_token(user: Any, *, scope: str, resource_path: str) -> str:
    """A live OAuth access token of a fresh public client, bound to ``resource_path`` (RFC 8707)."""
    import secrets as stdlib_secrets

    from django.conf import settings
    from oauth2_provider.models import AccessToken, Application, set_token_value

    application = Application.objects.create(
        name="Agent", client_type="public", authorization_grant_type="authorization-code",
        redirect_uris="https://agent.example/cb",
    )  # fmt: skip
    raw = stdlib_secrets.token_urlsafe(32)
    token = AccessToken(
        user=user, application=application, scope=scope, resource=[settings.BRAIN_BASE_URL + resource_path],
        expires=timezone.now() + dt.timedelta(hours=1),
    )  # fmt: skip
    set_token_value(token, raw)
    token.save()
    return raw
