from __future__ import annotations

from django.urls import path

from integrations import slack

app_name = "integrations"
urlpatterns = [
    path("integrations/slack/commands", slack.commands, name="slack-commands"),
    path("integrations/slack/link/<str:code>", slack.link, name="slack-link"),
]
