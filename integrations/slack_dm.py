"""Direct messages from the Brain's Slack app to a linked member (weekly insights).

Needs the bot token (scope ``chat:write``) stored as the integration secret
``slack_bot_token`` (``manage.py integration_secret set slack_bot_token``, from stdin, or the admin) and
the member's Slack account linked (``/brain link``). Posting to a user id opens the app's
DM with them. ``BRAIN_SLACK_API_URL`` points elsewhere only in tests.
"""

from __future__ import annotations

from django.conf import settings
from slack_sdk import WebClient

from grants.models import Member
from integrations.secrets import secret_get

BOT_TOKEN = "slack_bot_token"  # noqa: S105 (the secret's name, not a value)


class SlackNotConfigured(Exception):
    """No bot token stored, or the member has no linked Slack account."""


def send_direct_message(member: Member, text: str) -> None:
    """Post ``text`` (plain: shown literally, Slack markup escaped) to ``member`` in Slack;
    raises ``SlackNotConfigured`` or ``SlackApiError``."""
    from integrations.slack import slack_text

    if not member.slack_user_id:
        raise SlackNotConfigured("the member has not linked a Slack account")
    token = secret_get(BOT_TOKEN)
    if not token:
        raise SlackNotConfigured(f"no Slack bot token stored (integration secret {BOT_TOKEN})")
    client = WebClient(token=token, base_url=settings.BRAIN_SLACK_API_URL, timeout=10)
    client.chat_postMessage(channel=member.slack_user_id, text=slack_text(text[:39_000]), unfurl_links=False)
