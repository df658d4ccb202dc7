"""The memory dashboard and the Memory tokens page, as a signed-in member sees them."""

from __future__ import annotations

from django.test import TestCase

from grants.principals import SYSTEM
from grants.services import member_create
from memory.models import Memory, MemoryApiToken
from memory.services import memory_remember


class DashboardTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.alice = member_create(actor=SYSTEM, username="alice")
        cls.bob = member_create(actor=SYSTEM, username="bob")
        cls.charlie = member_create(actor=SYSTEM, username="charlie", role="admin")

    def test_a_refused_secret_empties_only_its_own_field(self) -> None:
        """The refusal redirected, and the tags and layer typed beside the secret were gone too."""
        self.client.force_login(self.alice.user)
        key = "AKIA" + "QWERTYUIOPASDFGH"
        answer = self.client.post(
            "/memory/", {"content": f"deploy key {key}", "tags": "ops, deploys", "workspace": "company"}
        )
        assert answer.status_code == 400
        page = answer.content.decode()
        assert "refused" in page
        assert key not in page
        assert 'value="ops, deploys"' in page
        assert '<option value="company" selected>' in page
        assert not Memory.objects.exists()

    def test_remember_read_append_share_and_forget_through_the_pages(self) -> None:
        self.client.force_login(self.alice.user)
        created = self.client.post("/memory/", {"content": "Standups are at 9:30 on weekdays.", "tags": "ops, Team"})
        memory = Memory.objects.get(author=self.alice)
        assert created["Location"] == f"/memory/{memory.pk}/"
        assert memory.tags == ["ops", "team"]
        page = self.client.get(f"/memory/{memory.pk}/").content.decode()
        assert "Standups are at 9:30" in page
        assert "Forget permanently" in page
        self.client.post(f"/memory/{memory.pk}/append", {"text": "Fridays at 10."})
        self.client.post(f"/memory/{memory.pk}/share", {"workspace": "company"})
        memory.refresh_from_db()
        assert memory.workspace == "company"
        assert memory.content.endswith("Fridays at 10.")
        assert "Standups" in self.client.get("/memory/?q=when+is+the+daily+meeting").content.decode()
        exported = self.client.get("/memory/export")
        assert exported["Content-Disposition"] == 'attachment; filename="brain-memories.jsonl"'
        assert "Standups" in exported.content.decode()
        self.client.post(f"/memory/{memory.pk}/forget")
        assert not Memory.objects.filter(pk=memory.pk).exists()

    def test_a_refused_edit_or_update_is_shown_again_with_what_was_typed(self) -> None:
        memory = memory_remember(actor=self.alice, content="Standups are at 9:30.", workspace="personal").memory
        self.client.force_login(self.alice.user)
        long = "A very long rewrite. " * 1000  # over the 20,000 characters a memory may hold
        refused = self.client.post(f"/memory/{memory.pk}/edit", {"content": long, "tags": "ops, later"})
        assert refused.status_code == 400
        html = refused.content.decode()
        assert "at most 20000 characters" in html
        assert long.strip() in html  # the textarea holds the rewrite, not the stored text
        assert 'value="ops, later"' in html
        assert "<details open>" in html
        refused = self.client.post(f"/memory/{memory.pk}/append", {"text": "x" * 20_001})
        assert refused.status_code == 400
        assert 'value="' + "x" * 20_001 + '"' in refused.content.decode()
        memory.refresh_from_db()
        assert (memory.content, memory.tags) == ("Standups are at 9:30.", [])

    def test_a_personal_memory_is_a_404_for_everyone_else_and_admins_cannot_read_it(self) -> None:
        secret = memory_remember(actor=self.alice, content="My passport expires in May.").memory
        for other in (self.bob, self.charlie):
            self.client.force_login(other.user)
            assert self.client.get(f"/memory/{secret.pk}/").status_code == 404
            assert self.client.post(f"/memory/{secret.pk}/append", {"text": "x"}).status_code == 404
            assert self.client.post(f"/memory/{secret.pk}/forget").status_code == 404
            assert "passport" not in self.client.get("/memory/").content.decode()
            assert "expires in May" not in self.client.get("/memory/?q=passport+expiry").content.decode()
            assert "passport" not in self.client.get("/memory/export").content.decode()
        assert Memory.objects.get(pk=secret.pk).content == "My passport expires in May."

    def test_a_teammate_reads_a_shared_memory_with_its_author_but_cannot_change_it(self) -> None:
        shared = memory_remember(actor=self.alice, content="We ship on Thursdays.", workspace="company").memory
        self.client.force_login(self.bob.user)
        page = self.client.get(f"/memory/{shared.pk}/").content.decode()
        assert "alice" in page
        assert "Only its author or an admin can change a shared memory." in page
        refused = self.client.post(f"/memory/{shared.pk}/append", {"text": "x"}, follow=True)
        assert "only the author or an admin may change a shared memory" in refused.content.decode()
        assert Memory.objects.get(pk=shared.pk).content == "We ship on Thursdays."

    def test_tokens_are_shown_once_and_revoked_from_the_page(self) -> None:
        self.client.force_login(self.alice.user)
        issued = self.client.post(
            "/account/memory-tokens/", {"name": "laptop", "scopes": ["memory", "corpus:read"]}, follow=True
        ).context["issued"]
        assert issued.startswith("bmt_")
        assert MemoryApiToken.objects.get(member=self.alice).scopes == ["corpus:read", "memory"]
        # Post, redirect, get: reloading neither issues another token nor shows this one again.
        again = self.client.get("/account/memory-tokens/")
        assert again.context["issued"] is None
        assert MemoryApiToken.objects.filter(member=self.alice).count() == 1
        assert self.client.get("/api/memory/count", HTTP_AUTHORIZATION=f"Bearer {issued}").status_code == 200
        page = self.client.get("/account/memory-tokens/").content.decode()
        assert issued not in page
        row = MemoryApiToken.objects.get(member=self.alice)
        self.client.force_login(self.bob.user)
        assert self.client.post("/account/memory-tokens/", {"revoke": row.pk}).status_code == 404
        self.client.force_login(self.alice.user)
        self.client.post("/account/memory-tokens/", {"revoke": row.pk})
        assert self.client.get("/api/memory/count", HTTP_AUTHORIZATION=f"Bearer {issued}").status_code == 401

    def test_a_token_needs_at_least_one_scope_and_only_known_ones(self) -> None:
        self.client.force_login(self.alice.user)
        for scopes in ([], ["admin"]):
            page = self.client.post("/account/memory-tokens/", {"name": "x", "scopes": scopes}, follow=True)
            assert "scopes must be some of" in page.content.decode()
        assert not MemoryApiToken.objects.filter(member=self.alice).exists()

    def test_a_refused_form_comes_back_with_what_was_typed(self) -> None:
        """A refusal was a message and a redirect: the token's purpose and scopes, the calendar's
        address and name, the settings' tags were all to type again."""
        self.client.force_login(self.alice.user)
        cases = [
            ("/account/memory-tokens/", {"name": "laptop CLI typed", "scopes": ["memory", "admin"]},
             ["laptop CLI typed", 'value="memory" checked']),
            ("/memory/calendars/", {"action": "subscribe", "url": "https://10.0.0.5/typed-url.ics",
                                    "name": "My typed calendar", "workspace": "company"},
             ["https://10.0.0.5/typed-url.ics", "My typed calendar", '<option value="company" selected>']),
            ("/memory/settings/", {"default_workspace": "personal", "default_tags": "keepme, status:draft",
                                   "insights_delivery": "dashboard"}, ["keepme, status:draft"]),
        ]  # fmt: skip
        for url, form, shown in cases:
            with self.subTest(url=url):
                answer = self.client.post(url, form)
                assert answer.status_code == 400, answer.status_code
                html = answer.content.decode()
                assert 'class="banner"' in html  # why not, beside the form
                for text in shown:
                    assert text in html, text
        assert not MemoryApiToken.objects.filter(member=self.alice).exists()

    def test_a_search_that_cannot_run_keeps_what_was_typed(self) -> None:
        self.client.force_login(self.alice.user)
        for params, reason in (({"q": "ship " * 300}, "at most 1000 characters"),
                               ({"q": "deploys", "workspace": "everyone"}, "workspace must be")):  # fmt: skip
            answer = self.client.get("/memory/", params)
            assert answer.status_code == 400
            html = answer.content.decode()
            assert reason in html.replace("&quot;", '"')
            assert params["q"].strip()[:40] in html
