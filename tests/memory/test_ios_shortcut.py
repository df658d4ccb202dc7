"""The example iOS shortcut (clients/ios) sends a request the capture endpoint accepts."""

from __future__ import annotations

import json
import plistlib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.test import TestCase
from django.urls import resolve

from grants.principals import SYSTEM
from grants.services import member_create
from memory.models import Memory
from memory.tokens import api_token_issue

SHORTCUT = Path(__file__).resolve().parents[2] / "clients" / "ios" / "Save to Brain.shortcut.plist"


def _request_action(workflow: dict[str, Any]) -> dict[str, Any]:
    [action] = [
        item["WFWorkflowActionParameters"]
        for item in workflow["WFWorkflowActions"]
        if item["WFWorkflowActionIdentifier"] == "is.workflow.actions.downloadurl"
    ]
    return dict(action)


class IosShortcutTests(TestCase):
    def test_the_shortcut_file_describes_a_request_the_brain_accepts(self) -> None:
        workflow = plistlib.loads(SHORTCUT.read_bytes())
        assert workflow["WFWorkflowName"] == "Save to Brain"
        assert "ActionExtension" in workflow["WFWorkflowTypes"]  # offered in the share sheet
        request = _request_action(workflow)
        url = urlsplit(request["WFURL"])
        assert resolve(url.path).view_name == "memory:api-capture"
        assert request["WFHTTPMethod"] == "POST"
        assert request["WFHTTPBodyType"] == "JSON"
        alice = member_create(actor=SYSTEM, username="alice")
        token = api_token_issue(actor=alice, name="iPhone", scopes=["memory"])[1]
        headers = {name: value.replace("bmt_REPLACE_ME", token) for name, value in request["WFHTTPHeaders"].items()}
        body = {**request["WFJSONValues"], "content": "Met Dana about the Q3 roadmap\n\nFollow up on hiring."}
        answer = self.client.post(url.path, data=json.dumps(body), content_type="application/json",
                                  headers=headers)  # fmt: skip
        assert answer.status_code == 201, answer.content
        assert answer.json()["outcome"] == "stored"
        memory = Memory.objects.get(author=alice)
        assert (memory.source, memory.tags) == ("ios-shortcut", ["ios"])
        # The notification step reads the "outcome" key of that answer.
        keys = [item["WFWorkflowActionParameters"].get("WFDictionaryKey") for item in workflow["WFWorkflowActions"]]
        assert "outcome" in keys
