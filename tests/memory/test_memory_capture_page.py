"""The browser capture page (/memory/capture) and its bookmarklet, without a browser.

The browser journeys (tests/browser/test_capture_clients.py) run the bookmarklet and the
extension in Chromium; these pin the page's rules: validation, outcomes, the layer default,
no echo of a refused secret, and that the memory API takes an extension's request.
"""

from __future__ import annotations

import json
from urllib.parse import unquote, urlencode

from django.test import TestCase
from django.utils.http import MAX_URL_LENGTH

from grants.principals import SYSTEM
from grants.services import member_create
from memory.capture_views import BOOKMARKLET_URL_BUDGET, LINE_SEPARATOR, bookmarklet
from memory.models import Memory, MemoryPreference
from memory.tokens import api_token_issue

ARTICLE = "https://news.example.com/2026/release-train"


class CapturePageTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.alice = member_create(actor=SYSTEM, username="alice")
        cls.bob = member_create(actor=SYSTEM, username="bob")

    def setUp(self) -> None:
        self.client.force_login(self.alice.user)

    def post(self, **fields: str) -> tuple[int, str, str]:
        data = {"url": ARTICLE, "title": "Release train", "selection": "", "tags": "", "workspace": "personal"}
        response = self.client.post("/memory/capture", {**data, **fields})
        return response.status_code, response.get("Location", ""), response.content.decode()

    def test_the_form_is_prefilled_from_the_query_and_line_breaks_come_back(self) -> None:
        # A raw line break in a query string is refused before any view (brain.inputs): hence U+2028.
        refused = urlencode({"url": ARTICLE, "selection": "First.\nSecond."})
        assert self.client.get(f"/memory/capture?{refused}").status_code == 400
        query = urlencode({"url": ARTICLE, "title": " Release  train ", "selection": f"First.{LINE_SEPARATOR}Second."})
        page = self.client.get(f"/memory/capture?{query}")
        assert page.status_code == 200
        assert page.context["typed"].text == "First.\nSecond."
        assert page.context["typed"].title == "Release train"
        html = page.content.decode()
        assert f'value="{ARTICLE}"' in html
        assert 'href="javascript:' in html  # the bookmarklet to drag, on the page itself
        assert '<option value="personal" selected>' in html

    def test_saving_stores_the_selection_then_title_and_url_and_shows_saved(self) -> None:
        status, location, _ = self.post(selection="  Trains leave on Thursdays.\n", tags="reading, Releases")
        assert status == 302
        memory = Memory.objects.get(author=self.alice)
        assert memory.content == f"Trains leave on Thursdays.\n\nRelease train\n{ARTICLE}"
        assert (memory.source, memory.workspace) == ("browser", "personal")
        assert {"reading", "releases"} <= set(memory.tags)
        assert location == f"/memory/capture?saved={memory.pk}&outcome=stored"
        saved = self.client.get(location).content.decode()
        assert "<h1>Saved</h1>" in saved
        assert f'href="/memory/{memory.pk}/"' in saved

    def test_the_same_capture_twice_is_already_remembered(self) -> None:
        self.post(selection="Deploys freeze on the last Friday of the month.")
        _, location, _ = self.post(selection="Deploys freeze on the last Friday of the month.")
        assert location.endswith("&outcome=duplicate")
        assert Memory.objects.filter(author=self.alice).count() == 1
        assert "<h1>Already remembered</h1>" in self.client.get(location).content.decode()

    def test_the_layer_defaults_to_the_members_preference_and_shared_is_a_choice(self) -> None:
        MemoryPreference.objects.create(member=self.alice, default_workspace="company")
        assert self.client.get("/memory/capture").context["typed"].workspace == "company"
        self.post(selection="Standup moved to 9:45.", workspace="company")
        assert Memory.objects.get(author=self.alice).workspace == "company"

    def test_bad_input_re_shows_the_form_with_the_message_and_what_was_typed(self) -> None:
        cases = {
            "javascript:alert(1)": "url must be an http:// or https:// address",
            "ftp://files.example.com/a": "url must be an http:// or https:// address",
            "https://" + "a" * 2000: "url may be at most 2000 characters",
            "http://[fe80::1": "url must be an http:// or https:// address",
            "https://[notanip]/x": "url must be an http:// or https:// address",
        }
        for url, message in cases.items():
            status, _, html = self.post(url=url, selection="A note worth keeping.")
            assert status == 400
            assert message in html
            assert "A note worth keeping." in html
        status, _, html = self.post(title="t" * 301, selection="x")
        assert (status, "title may be at most 300 characters" in html) == (400, True)
        status, _, html = self.post(selection="x" * 16_001)
        assert (status, "at most 16000 characters" in html) == (400, True)
        status, _, html = self.post(url="", title="", selection="   ")
        assert (status, "select some text on the page or write a note" in html) == (400, True)
        status, _, html = self.post(selection="x", workspace="everyone")
        assert (status, "workspace must be &quot;personal&quot; or &quot;company&quot;" in html) == (400, True)
        assert not Memory.objects.exists()

    def test_a_refused_secret_is_named_but_never_echoed(self) -> None:
        key = "AKIA" + "Q" * 16
        status, _, html = self.post(selection=f"the deploy key is {key}", tags="ops, deploys")
        assert status == 400
        assert "refused" in html
        assert key not in html
        assert not Memory.objects.exists()
        # Only the field holding it is emptied: the URL, title and tags come back as typed.
        assert f'value="{ARTICLE}"' in html
        assert 'value="Release train"' in html
        assert 'value="ops, deploys"' in html

    def test_signing_in_is_required_and_another_members_memory_is_a_404(self) -> None:
        self.client.logout()
        query = urlencode({"url": ARTICLE, "selection": "x"})
        response = self.client.get(f"/memory/capture?{query}")
        assert response.status_code == 302
        assert response["Location"].startswith("/login/?next=/memory/capture")
        self.client.force_login(self.bob.user)
        self.post(selection="Bob's private reading list.")
        hidden = Memory.objects.get(author=self.bob)
        self.client.force_login(self.alice.user)
        assert self.client.get(f"/memory/capture?saved={hidden.pk}").status_code == 404
        assert self.client.get("/memory/capture?saved=not-a-uuid").status_code == 404

    def test_signed_out_the_capture_survives_signing_in_cut_to_what_a_next_may_hold(self) -> None:
        self.client.logout()
        long = "Ein langer Absatz über Züge.\n" * 400  # 11,600 characters, far more once encoded
        query = urlencode({"url": ARTICLE, "title": "Release train", "selection": long.replace("\n", LINE_SEPARATOR)})
        response = self.client.get(f"/memory/capture?{query}")
        assert response.status_code == 302
        login, _, next_url = response["Location"].partition("?next=")
        resume = unquote(next_url)
        assert login == "/login/"
        assert len(resume) <= MAX_URL_LENGTH
        self.client.force_login(self.alice.user)
        typed = self.client.get(resume).context["typed"]
        assert (typed.url, typed.title) == (ARTICLE, "Release train")
        assert typed.text.endswith("…")
        assert long.startswith(typed.text[:-1])
        # A form posted after the session ended comes back the same way, not lost.
        self.client.logout()
        posted = self.client.post(
            "/memory/capture", {"url": ARTICLE, "selection": "Short note.", "workspace": "company"}
        )
        self.client.force_login(self.alice.user)
        typed = self.client.get(unquote(posted["Location"].partition("?next=")[2])).context["typed"]
        assert (typed.text, typed.workspace) == ("Short note.", "company")
        assert not Memory.objects.exists()

    def test_the_dashboard_offers_the_page_and_the_bookmarklet_for_this_brain(self) -> None:
        html = self.client.get("/memory/").content.decode()
        assert 'href="/memory/capture"' in html
        script = unquote(html.split('class="bookmarklet" href="javascript:', 1)[1].split('"', 1)[0])
        assert "http://testserver/memory/capture" in script.replace("&quot;", '"')
        assert "token" not in script.lower()

    def test_the_bookmarklet_is_one_javascript_url_with_its_budget(self) -> None:
        link = bookmarklet("https://brain.example.org/memory/capture")
        assert link.startswith("javascript:(function")
        code = unquote(link.removeprefix("javascript:"))
        assert '"https://brain.example.org/memory/capture"' in code
        assert f"budget = {BOOKMARKLET_URL_BUDGET}" in code
        assert "%" not in code  # decoded once, as a browser does: no escape left over
        assert "\n" not in code  # one line, as a bookmark holds it

    def test_the_memory_api_takes_a_personal_token_from_an_extension_origin(self) -> None:
        _, raw = api_token_issue(actor=self.alice, name="browser", scopes=["memory"])
        self.client.logout()  # a bearer call: no session, no CSRF token
        response = self.client.post(
            "/api/memory/capture",
            data=json.dumps({"content": f"Read later.\n\nRelease train\n{ARTICLE}", "source": "browser"}),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {raw}",
            HTTP_ORIGIN="chrome-extension://abcdefghijklmnopabcdefghijklmnop",
        )
        assert response.status_code == 201, response.content
        assert response.json()["memory"]["source"] == "browser"
        count = self.client.get(
            "/api/memory/count",
            HTTP_AUTHORIZATION=f"Bearer {raw}",
            HTTP_ORIGIN="chrome-extension://abcdefghijklmnopabcdefghijklmnop",
        )
        assert count.json() == {"count": 1}
