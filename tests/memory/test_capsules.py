"""Prompt capsules: determinism, invalidation by triggers, reporting, budget, HTTP and cache."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import TestCase, override_settings

from grants.principals import SYSTEM
from grants.services import member_create
from memory.capsule_sql import check_and_repair, problems
from memory.capsules import MAX_CHARS, cache_key, get_capsule, normalise_content
from memory.models import Memory, PromptCapsuleRevision
from memory.services import memory_remember, memory_set_status, memory_share, memory_update
from memory.tokens import api_token_issue
from oauth.config import provider_settings

BASE = "https://brain.example.org"


@override_settings(BRAIN_BASE_URL=BASE, OAUTH2_PROVIDER=provider_settings(BASE, ["https"]))
class CapsuleTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.alice = member_create(actor=SYSTEM, username="alice")
        cls.bob = member_create(actor=SYSTEM, username="bob")

    def entry(self, slot: str, content: str, target: str = "capsule:core", who: Any = None, **kwargs: Any) -> Memory:
        tags = [target, f"capsule-slot:{slot}", "status:canonical", *kwargs.pop("extra_tags", [])]
        return memory_remember(actor=who or self.alice, content=content, tags=tags, **kwargs).memory

    def core(self, who: Any = None, workspace: str | None = None) -> Any:
        return get_capsule(member=who or self.alice, kind="core", workspace=workspace)

    def get(self, path: str, who: str = "alice", **headers: Any) -> Any:
        token = api_token_issue(actor=getattr(self, who), name="t")[1]
        return self.client.get(path, HTTP_AUTHORIZATION=f"Bearer {token}", **headers)

    def test_slots_in_fixed_order_deterministic_text_hash_and_etag(self) -> None:
        self.entry("principles", "Prefer boring technology.\r\nWrite things down.   \n\n")
        self.entry("identity", "\n\nI am Alice, commercial lead.")
        first = self.core()
        text = json.loads(first.payload["text"])
        assert [section["slot"] for section in text["sections"]] == ["identity", "principles"]
        assert text["sections"][1]["content"] == "Prefer boring technology.\nWrite things down."
        assert "created" not in first.payload["text"]
        cache.clear()
        again = self.core()
        assert (again.payload["text"], again.payload["prompt_hash"], again.etag) == (
            first.payload["text"], first.payload["prompt_hash"], first.etag,
        )  # fmt: skip
        assert first.payload["complete"] is True
        assert first.payload["prompt_hash"].startswith("sha256:")

    def test_etag_is_unchanged_by_timestamps_and_unrelated_memories(self) -> None:
        self.entry("identity", "I am Alice.")
        before = self.core()
        memory_remember(actor=self.alice, content="An ordinary memory about lunch.")
        Memory.objects.filter(author=self.alice).update(recall_count=7)
        cache.clear()
        assert self.core().etag == before.etag

    def test_every_capsule_write_kind_advances_the_revision_and_no_stale_body_is_served(self) -> None:
        identity = self.entry("identity", "I am Alice.")
        layer = f"personal:{self.alice.pk}"

        def revision() -> str:
            return PromptCapsuleRevision.objects.get(layer=layer).revision

        def fresh() -> str:
            from memory.capsules import build

            return build(self.alice, "core", None, "personal").etag

        assert self.core().etag == fresh()
        steps: list[Callable[[], object]] = [
            lambda: memory_update(actor=self.alice, memory_id=identity.pk, content="I am Alice, CFO."),
            lambda: memory_update(
                actor=self.alice,
                memory_id=identity.pk,
                tags=["capsule:core", "capsule-slot:identity", "status:canonical", "finance"],
            ),
            lambda: memory_set_status(actor=self.alice, memory_id=identity.pk, status="draft"),
            lambda: memory_set_status(actor=self.alice, memory_id=identity.pk, status="canonical"),
            lambda: self.entry("preferences", "Short answers."),
            lambda: memory_share(actor=self.alice, memory_id=identity.pk, workspace="company"),
            lambda: memory_share(actor=self.alice, memory_id=identity.pk, workspace="personal"),
            lambda: Memory.objects.filter(pk=identity.pk).delete(),
        ]
        for step in steps:
            before = revision()
            step()
            assert revision() != before
            assert self.core().etag == fresh()  # the cached read never serves the pre-write body
        before = revision()
        memory_remember(actor=self.alice, content="Ordinary note.")
        assert revision() == before  # ordinary writes leave it alone

    def test_share_invalidates_both_layers(self) -> None:
        entry = self.entry("identity", "Team identity.")
        shared_before = self.core(workspace="company")
        assert shared_before.payload["populated"] is False
        memory_share(actor=self.alice, memory_id=entry.pk, workspace="company")
        assert self.core(workspace="company").payload["populated"] is True
        assert self.core().payload["populated"] is False

    def test_duplicates_and_invalid_entries_are_reported_and_the_rest_served(self) -> None:
        self.entry("identity", "I am Alice.")
        self.entry("preferences", "Short answers.")
        self.entry("preferences", "Long answers.", extra_tags=["dup"])
        bad = self.entry("favourite-colour", "Blue.")
        capsule = self.core()
        assert capsule.payload["duplicate_slots"] == ["preferences"]
        assert capsule.payload["invalid_entries"][0]["entry_id"] == str(bad.pk)
        assert [s["slot"] for s in capsule.payload["sections"]] == ["identity"]
        assert capsule.payload["complete"] is False
        memory_remember(actor=self.alice, content="Draft identity", tags=["capsule:core", "capsule-slot:identity"])
        assert [s["slot"] for s in self.core().payload["sections"]] == ["identity"]  # drafts ignored

    def test_a_member_cannot_take_an_administrators_slot_out_of_the_shared_capsule(self) -> None:
        """Bob's competing canonical entry made the shared capsule drop the admin's constraints
        slot for every agent; the administrator's entry is served, the slot still reported."""
        dana = member_create(actor=SYSTEM, username="dana", role="admin")
        kept = self.entry("constraints", "Never send customer data to third parties.", who=dana, workspace="company")
        self.entry("constraints", "Be brief.", who=self.bob, workspace="company", extra_tags=["x"])
        capsule = self.core(workspace="company")
        assert capsule.payload["sections"] == [{"slot": "constraints", "entry_id": str(kept.pk)}]
        assert capsule.payload["duplicate_slots"] == ["constraints"]
        assert capsule.payload["complete"] is False
        # Cached, then the administrator suspended: the capsule does not keep serving their entry.
        from accounts.services import member_suspend

        member_suspend(actor=SYSTEM, member=dana)
        assert self.core(workspace="company").payload["sections"] == []
        # Two members' entries (no administrator's): the slot is still omitted.
        self.entry("identity", "We are the platform team.", who=self.alice, workspace="company")
        self.entry("identity", "We are the data team.", who=self.bob, workspace="company", extra_tags=["y"])
        assert "identity" not in [s["slot"] for s in self.core(workspace="company").payload["sections"]]

    def test_budget_omits_the_slot_that_overflows_and_every_later_one(self) -> None:
        self.entry("identity", "Alice leads commercial strategy for Europe. " * 115)  # ~5,000 characters
        self.entry("preferences", "Prefers written proposals with numbers and sources attached. " * 125)  # ~7,500
        self.entry("constraints", "No meetings on Fridays.")
        capsule = self.core()
        assert [s["slot"] for s in capsule.payload["sections"]] == ["identity"]
        assert capsule.payload["omitted_slots"] == ["preferences", "constraints"]
        assert capsule.payload["char_count"] <= MAX_CHARS

    def test_409s_for_an_oversized_personal_entry_and_too_many_candidates(self) -> None:
        self.entry("identity", "x" * 12_500, extra_tags=[])
        response = self.get("/prompt-capsules/core")
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "invalid_prompt_capsule"
        assert response.json()["error"]["reason"] == "content-too-large"
        shared = memory_remember(actor=self.bob, content="y" * 12_500, workspace="company",
                                 tags=["capsule:core", "capsule-slot:identity", "status:canonical"]).memory  # fmt: skip
        served = self.get("/prompt-capsules/core?workspace=company").json()
        assert served["invalid_entries"] == [{"entry_id": str(shared.pk), "reason": "content-too-large"}]
        rows = [Memory(author=self.alice, workspace="personal", content=f"p{i}", status="canonical",
                       tags=["capsule:project:atlas", "capsule-slot:decisions"]) for i in range(201)]  # fmt: skip
        Memory.objects.bulk_create(rows)
        many = self.get("/prompt-capsules/projects/atlas")
        assert many.status_code == 409
        assert many.json()["error"]["code"] == "too_many_candidates"

    def test_a_member_flooding_the_shared_layer_cannot_take_the_administrators_capsule_down(self) -> None:
        """201 shared entries by any member answered 409 for everyone, the administrator's too."""
        carol = member_create(actor=SYSTEM, username="carol", role="admin")
        served = self.entry("current-state", "Atlas ships in May.", target="capsule:project:atlas", who=carol,
                            workspace="company")  # fmt: skip
        rows = [Memory(author=self.bob, workspace="company", content=f"p{i}", status="canonical",
                       tags=["capsule:project:atlas", "capsule-slot:decisions"]) for i in range(201)]  # fmt: skip
        Memory.objects.bulk_create(rows)
        capsule = self.get("/prompt-capsules/projects/atlas?workspace=company").json()
        assert capsule["sections"] == [{"slot": "current-state", "entry_id": str(served.pk)}]
        assert (capsule["crowded"], capsule["complete"]) == (True, False)
        assert "p1" not in capsule["text"]
        # More than 200 by administrators is still refused: they can tidy their own entries.
        Memory.objects.filter(author=self.bob).update(author=carol)
        assert self.get("/prompt-capsules/projects/atlas?workspace=company").status_code == 409

    def test_http_etag_304_head_405_and_headers(self) -> None:
        self.entry("identity", "I am Alice.")
        first = self.get("/prompt-capsules/core")
        assert first.status_code == 200
        assert first["ETag"].startswith('"pcv1-')
        assert first["Cache-Control"] == "private, max-age=0, must-revalidate"
        assert first["Vary"] == "Authorization"
        assert self.get("/prompt-capsules/core", HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
        token = api_token_issue(actor=self.alice, name="h")[1]
        head = self.client.head("/prompt-capsules/core", HTTP_AUTHORIZATION=f"Bearer {token}")
        assert head.status_code == 200
        assert head["ETag"] == first["ETag"]
        assert head.content == b""
        posted = self.client.post("/prompt-capsules/core", HTTP_AUTHORIZATION=f"Bearer {token}")
        assert posted.status_code == 405
        assert posted["Allow"] == "GET, HEAD"
        assert self.client.get("/prompt-capsules/core").status_code == 401
        assert self.get("/prompt-capsules/projects/Bad!").status_code == 400

    def test_personal_capsules_are_each_members_own(self) -> None:
        self.entry("identity", "I am Alice.")
        self.entry("identity", "I am Bob.", who=self.bob)
        assert "Alice" in self.get("/prompt-capsules/core").json()["text"]
        assert "Bob" in self.get("/prompt-capsules/core", who="bob").json()["text"]
        assert "Alice" not in self.get("/prompt-capsules/core", who="bob").json()["text"]

    def test_missing_project_ids_create_no_cache_keys(self) -> None:
        layer = f"personal:{self.alice.pk}"
        for index in range(20):
            capsule = get_capsule(member=self.alice, kind="project", project_id=f"nope-{index}")
            assert capsule.payload["populated"] is False
            rev = PromptCapsuleRevision.objects.get(layer=layer).revision
            assert cache.get(cache_key(layer, rev, "project", f"nope-{index}")) is None

    def test_a_repeated_read_is_one_query_and_a_tampered_cache_value_is_a_miss(self) -> None:
        self.entry("identity", "I am Alice.")
        first = self.core()
        with self.assertNumQueries(1):
            assert self.core().etag == first.etag
        layer = f"personal:{self.alice.pk}"
        key = cache_key(layer, PromptCapsuleRevision.objects.get(layer=layer).revision, "core", None)
        value = cache.get(key)
        value["payload"]["text"] = "tampered"
        cache.set(key, value)
        assert self.core().payload["text"] == first.payload["text"]

    def test_a_dropped_trigger_is_repaired_with_a_revision_rotation(self) -> None:
        self.entry("identity", "I am Alice.")
        layer = f"personal:{self.alice.pk}"
        before = PromptCapsuleRevision.objects.get(layer=layer).revision
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER memory_capsule_advance ON memory_memory")
        assert problems() == ["trigger memory_capsule_advance"]
        assert check_and_repair() == ["trigger memory_capsule_advance"]
        assert problems() == []
        assert PromptCapsuleRevision.objects.get(layer=layer).revision != before

    def test_nul_never_reaches_a_capsule(self) -> None:
        # Refused on every write path (PostgreSQL text cannot hold NUL either), imports included.
        with pytest.raises(ValueError, match="NUL"):
            self.entry("identity", "bad\x00row")
        token = api_token_issue(actor=self.alice, name="i")[1]
        line = json.dumps(
            {"content": "ok", "tags": ["capsule:core", "capsule-slot:identity\u0000", "status:canonical"]}
        )
        answer = self.client.post("/api/memory/import", data=line, content_type="application/x-ndjson",
                                  HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip
        assert answer.status_code == 400
        assert answer.json()["error"]["lines"][0].startswith("line 1:")
        assert self.core().payload["populated"] is False

    def test_content_normalisation(self) -> None:
        assert normalise_content("\n\n a \r\nb  \r\n\n") == " a\nb"

    def test_the_mcp_tool_returns_the_same_payload_and_etag(self) -> None:
        from mcp_api.base import PERSON, Caller
        from mcp_api.dispatch import dispatch

        self.entry("identity", "I am Alice.")
        caller = Caller(principal=self.alice, kind=PERSON, scopes=frozenset({"memory"}))
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "get_prompt_capsule", "arguments": {"kind": "core"}}}  # fmt: skip
        answer = dispatch(message, caller, "2025-06-18")
        assert answer is not None
        structured = answer["result"]["structuredContent"]
        http = self.get("/prompt-capsules/core").json()
        assert structured == http
