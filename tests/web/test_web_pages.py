"""Web-app defects found by a browser audit, each held by a test that failed before its fix:
error pages and sign-in round trips, heading anchors, forms refused and shown again, build
withdrawal, accessibility ids, and the icon."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from django.contrib.staticfiles import finders
from django.core import mail
from django.test import Client, TestCase

from accounts.services import member_invite
from answers.services import Anchors
from builds.driver import import_job_create, job_step
from builds.models import Build, BuildCredential, BuildJob
from builds.services import build_credential_issue, build_open
from corpus.chunking import chunk_markdown
from grants.models import AuditEvent
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from memory.models import Memory
from memory.services import memory_remember
from tests.base import BrainTestCase, page_markdown, publish

AWS_KEY = "AKIA" + "QYLPMN5HHHFPZAM2"  # split so this file holds no key the detector would flag


def dangling_describedby(html: str) -> list[str]:
    """Every id an ``aria-describedby`` names that no element of ``html`` carries."""
    ids = set(re.findall(r'\sid="([^"]+)"', html))
    named = [name for value in re.findall(r'aria-describedby="([^"]*)"', html) for name in value.split()]
    return [name for name in named if name not in ids]


def heading_count(html: str, level: int = 1) -> int:
    return len(re.findall(rf"<h{level}[\s>]", html))


class ErrorPageTests(BrainTestCase):
    def test_a_get_to_a_forms_action_is_the_error_page_with_the_navigation_not_an_empty_405(self) -> None:
        build = build_open(actor=self.alice, title="Price update")
        self.client.force_login(self.alice.user)
        answer = self.client.get(f"/builds/{build.public_id}/approve")
        assert answer.status_code == 405
        assert answer["Allow"] == "POST"
        html = answer.content.decode()
        assert "<h1>Method not allowed" in html
        assert "(405)" in html
        assert "has no page of its own" in html
        assert 'href="/builds/"' in html  # the navigation: a way on
        assert answer["x-request-id"] in html
        program = self.client.get(f"/builds/{build.public_id}/approve", HTTP_ACCEPT="application/json")
        assert program.status_code == 405
        assert program.json()["error"]["code"] == "method_not_allowed"
        assert self.client.put("/memory/settings/").status_code == 405

    def test_signing_in_again_comes_back_to_the_page_the_form_was_on_never_to_its_action(self) -> None:
        build = build_open(actor=self.alice, title="Price update")
        page = f"/builds/{build.public_id}/"
        action = f"/builds/{build.public_id}/approve"

        def next_of(answer: object) -> str:
            location = answer["Location"]  # type: ignore[index]
            assert location.startswith("/login/?next="), location
            return unquote(location.partition("?next=")[2])

        assert next_of(self.client.post(action, HTTP_REFERER=f"http://testserver{page}?tab=1")) == f"{page}?tab=1"
        assert next_of(self.client.post(action)) == "/"  # no Referer: home
        assert next_of(self.client.post(action, HTTP_REFERER=f"https://evil.example{page}")) == "/"
        assert next_of(self.client.post(action, HTTP_REFERER="http://testserver/login/")) == "/"
        assert next_of(self.client.post("/memory/", HTTP_REFERER="http://testserver/memory/")) == "/memory/"
        assert next_of(self.client.get("/memory/?tag=ops")) == "/memory/?tag=ops"  # a GET comes back to itself
        # An address too long to carry (a redirect past 16 KB was a 400 and an error log): its path only.
        assert next_of(self.client.get("/account/memory-tokens/?q=" + "x" * 20_000)) == "/account/memory-tokens/"
        htmx = self.client.post(action, HTTP_HX_REQUEST="true", HTTP_REFERER=f"http://testserver{page}")
        assert htmx.status_code == 204
        assert unquote(htmx["HX-Redirect"].partition("?next=")[2]) == page

    def test_error_pages_say_what_went_wrong_in_words_beside_the_status(self) -> None:
        self.client.force_login(self.alice.user)
        missing = self.client.get("/no-such-page", HTTP_ACCEPT="text/html").content.decode()
        assert re.search(r"<h1>Not found <span[^>]*>\(404\)</span></h1>", missing)
        refused = self.client.post("/builds/not-a-build/approve").content.decode()
        assert "<h1>Not found" in refused

    def test_every_page_names_its_icon_so_browsers_do_not_ask_for_favicon_ico(self) -> None:
        html = self.client.get("/login/").content.decode()
        found = re.search(r'<link rel="icon" href="/static/([^"]+)" type="image/svg\+xml">', html)
        assert found, "no icon link"
        path = finders.find(found.group(1))
        assert path is not None
        with open(str(path), encoding="utf-8") as icon:
            assert icon.read().startswith("<svg")


class HeadingAnchorTests(BrainTestCase):
    BODY = (
        "# Approvals\n\nWho approves what.\n\n## Approval *rules*\n\nA discount above 12% needs finance.\n\n"
        "## Notes\n\nFirst notes.\n\n### Notes\n\nNested notes.\n\n## Notes 1\n\nNumbered.\n\n"
        "## Content\n\nNot the page's main.\n\n## \"><img src=x onerror=alert(1)> Escapes\n\nSafe.\n\n"
        "## Gebühren\n\nFees.\n"
    )

    def test_every_citation_anchor_is_a_heading_id_on_the_page_and_ids_are_distinct_and_safe(self) -> None:
        path = "topics/pricing/approvals.md"
        publish(path, title="Approvals", body=self.BODY)
        self.client.force_login(self.alice.user)
        html = self.client.get(f"/pages/{path}").content.decode()
        ids = re.findall(r'\sid="([^"]*)"', html)
        assert len(ids) == len(set(ids)), sorted(ids)  # no id twice on the page
        citer = Anchors()
        cited = {chunk.heading_path: citer.cite(path, chunk.heading_path) for chunk in chunk_markdown(self.BODY)}
        assert cited == {
            "Approvals": f"{path}#approvals",
            "Approvals > Approval *rules*": f"{path}#approval-rules",
            "Approvals > Notes": f"{path}#notes",
            "Approvals > Notes > Notes": f"{path}#notes-2",  # the second "Notes", not the first
            "Approvals > Notes 1": f"{path}#notes-1",
            "Approvals > Content": f"{path}#content-1",  # the heading, not main#content
            'Approvals > "><img src=x onerror=alert(1)> Escapes': f"{path}#img-srcx-onerroralert1-escapes",
            "Approvals > Gebühren": f"{path}#gebuhren",
        }
        for citation in cited.values():
            assert citation.split("#", 1)[1] in ids, (citation, ids)
        # Each citation lands on its own section: the heading carrying the id has its text.
        assert re.search(r'<h2 id="approval-rules">Approval <em>rules</em></h2>', html)
        assert re.search(r'<h2 id="notes-1">Notes 1</h2>', html)  # the real "Notes 1", not a renamed duplicate
        assert re.search(r'<h3 id="notes-2">Notes</h3>', html)  # the second "Notes" steps aside
        assert re.search(r'<h2 id="content-1">Content</h2>', html)  # main#content stays the skip link's
        assert "<img" not in html.split('class="page-body"', 1)[1].split("</article>", 1)[0]
        assert heading_count(html) == 1  # the page's title heading is the header's h1


class RefusedFormsTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.alice = member_create(actor=SYSTEM, username="alice", email="alice@example.com")

    def test_refused_memory_settings_come_back_with_every_field_as_typed_but_never_a_secret(self) -> None:
        self.client.force_login(self.alice.user)
        typed = {"form": "mine", "default_workspace": "company", "default_tags": "inbox, x",
                 "weekly_insights": "on", "insights_delivery": "slack"}  # fmt: skip
        answer = self.client.post("/memory/settings/", typed)
        assert answer.status_code == 400  # delivery by Slack needs a linked Slack account
        html = answer.content.decode()
        assert "Slack account linked" in html
        assert '<option value="company" selected>' in html
        assert re.search(r'<input type="checkbox" name="weekly_insights" checked>', html)
        assert '<option value="slack" selected>' in html
        assert 'value="inbox, x"' in html
        secret = self.client.post("/memory/settings/", {**typed, "default_tags": f"inbox, {AWS_KEY}"})
        assert secret.status_code == 400
        html = secret.content.decode()
        assert AWS_KEY not in html
        assert 'id="my-tags" type="text" name="default_tags" value=""' in html
        assert '<option value="company" selected>' in html  # the rest is still as typed

    def test_a_refused_remember_keeps_the_list_and_the_layer_typed(self) -> None:
        memory_remember(actor=self.alice, content="Standups are at 9:30 on weekdays.", workspace="personal")
        self.client.force_login(self.alice.user)
        tags = ", ".join(f"tag{number}" for number in range(70))
        answer = self.client.post("/memory/", {"content": "Deploys freeze on Fridays.", "tags": tags,
                                               "workspace": "company"})  # fmt: skip
        assert answer.status_code == 400
        html = answer.content.decode()
        assert "Standups are at 9:30" in html
        assert "No memories yet." not in html
        assert '<option value="company" selected>shared</option>' in html
        assert "Deploys freeze on Fridays." in html
        assert "<details open>" in html  # the form and why not are in view
        assert Memory.objects.count() == 1

    def test_a_memory_page_has_one_main_heading(self) -> None:
        memory = memory_remember(actor=self.alice, content="Standups are at 9:30.", workspace="personal").memory
        self.client.force_login(self.alice.user)
        html = self.client.get(f"/memory/{memory.pk}/").content.decode()
        assert heading_count(html) == 1
        assert "<h1>Personal memory</h1>" in html


class BuildPagesTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.victor = member_create(actor=SYSTEM, username="victor", password="pw-victor-123")
        grant_issue(actor=SYSTEM, member=cls.victor, path="topics/", permission="approve")

    def submitted(self) -> Build:
        files = [("topics/pricing/renewals.md", page_markdown(title="Renewals", body="# Renewals\n\nYearly.\n"))]
        build = import_job_create(requester=self.alice, files=files, title="Renewal terms")
        while job_step(BuildJob.objects.get(build=build).pk) == "progress":
            pass
        build.refresh_from_db()
        assert build.status == Build.Status.AWAITING_REVIEW
        return build

    def test_a_secret_in_an_agent_builds_title_is_said_beside_the_form_which_keeps_the_rest(self) -> None:
        self.client.force_login(self.alice.user)
        answer = self.client.post("/builds/", {"title": f"Rotate {AWS_KEY}", "purpose": "The old key leaked."})
        assert answer.status_code == 400
        html = answer.content.decode()
        assert AWS_KEY not in html
        assert "Not opened: build title refused" in html
        assert 'aria-describedby="agent-build-problem"' in html
        assert ">The old key leaked.</textarea>" in html
        assert "<details open>" in html
        assert not Build.objects.exists()

    def test_review_forms_name_only_ids_that_exist(self) -> None:
        build = self.submitted()
        self.client.force_login(self.victor.user)
        pages = [
            self.client.get(f"/builds/{build.public_id}/"),
            self.client.post(f"/builds/{build.public_id}/reject", {"reason": "  "}),
            self.client.post(f"/builds/{build.public_id}/approve", {"note": "n" * 4001}),
        ]
        assert [page.status_code for page in pages] == [200, 400, 400]
        for page in pages:
            html = page.content.decode()
            assert "aria-describedby" in html
            assert not dangling_describedby(html), dangling_describedby(html)

    def test_password_forms_name_only_ids_that_exist(self) -> None:
        dana_member = member_create(actor=SYSTEM, username="dana", email="dana@example.com", password="pw-dana-12345")
        dana = Client()
        dana.force_login(dana_member.user)
        pages = [
            dana.get("/account/password/"),
            dana.post(
                "/account/password/",
                {"old_password": "pw-dana-12345", "new_password1": "dana", "new_password2": "other"},
            ),
        ]
        member_invite(actor=SYSTEM, username="erin", email="erin@example.com")
        token = re.search(r"/invite/(inv_\S+)", str(mail.outbox[-1].body))
        assert token
        erin = Client()
        erin.get(f"/invite/{token.group(1)}")
        pages += [erin.get("/invite/accept"), erin.post("/invite/accept", {"new_password1": "erin",
                                                                         "new_password2": "erin"})]  # fmt: skip
        assert [page.status_code for page in pages] == [200, 200, 200, 200]
        for page in pages:
            html = page.content.decode()
            assert "aria-describedby" in html
            assert not dangling_describedby(html), dangling_describedby(html)

    def test_the_requester_withdraws_their_build_and_nobody_else_can(self) -> None:
        build = self.submitted()
        detail, withdraw = f"/builds/{build.public_id}/", f"/builds/{build.public_id}/withdraw"
        self.client.force_login(self.alice.user)
        html = self.client.get(detail).content.decode()
        assert f'action="{withdraw}"' in html
        assert 'data-confirm="Withdraw this build?' in html
        self.client.force_login(self.victor.user)  # an approver sees the build, but did not request it
        assert f'action="{withdraw}"' not in self.client.get(detail).content.decode()
        assert self.client.post(withdraw).status_code == 403
        self.client.force_login(self.bob.user)  # cannot see it: the same as a missing build
        assert self.client.post(withdraw).status_code == 404
        assert self.client.post("/builds/00000000-0000-0000-0000-000000000000/withdraw").status_code == 404
        build.refresh_from_db()
        assert build.status == Build.Status.AWAITING_REVIEW
        self.client.force_login(self.alice.user)
        done = self.client.post(withdraw, follow=True)
        assert done.redirect_chain == [(detail, 302)]
        assert "You withdrew this build" in done.content.decode()
        build.refresh_from_db()
        assert build.status == Build.Status.CANCELLED
        assert AuditEvent.objects.filter(action="build.cancel", target=str(build.public_id)).count() == 1
        assert f'action="{withdraw}"' not in done.content.decode()
        again = self.client.post(withdraw, follow=True)
        assert "already ended" in again.content.decode()

    def test_withdrawing_an_agent_build_stops_its_credential(self) -> None:
        build = build_open(actor=self.alice, title="Agent work")
        credential, _token = build_credential_issue(actor=self.alice, build=build)
        self.client.force_login(self.alice.user)
        assert self.client.post(f"/builds/{build.public_id}/withdraw").status_code == 302
        credential = BuildCredential.objects.get(pk=credential.pk)
        assert credential.revoked_at is not None


class RenderingTests(TestCase):
    def test_a_title_left_out_keeps_its_anchor_for_the_pages_h1_and_previews_can_do_without_ids(self) -> None:
        from corpus.rendering import render_markdown

        body = "# Guide\n\nIntro.\n\n## Guide\n\nMore.\n"
        html = render_markdown(body, page_path="topics/guide.md", title="Guide")
        assert "<h1" not in html
        assert '<h2 id="guide-1">Guide</h2>' in html  # "guide" is the page header's h1
        assert "id=" not in render_markdown(body, page_path="topics/guide.md", heading_ids=False)


class EveryRouteAnswersAWrongMethodWithAPageTests(BrainTestCase):
    """Every route of the URL conf, tried with a method it does not take: a 405 is a page
    (or JSON for programs), never an empty body — a new route is covered the day it is added."""

    SAMPLES = {"int": "1", "str": "x", "slug": "x", "path": "x", "uuid": "00000000-0000-0000-0000-000000000000"}

    def routes(self) -> list[str]:
        from django.urls import URLPattern, URLResolver, get_resolver

        found: list[str] = []

        def walk(patterns: list[Any], prefix: str) -> None:
            for pattern in patterns:
                text = prefix + str(pattern.pattern)
                if isinstance(pattern, URLResolver):
                    if not text.startswith("admin/"):
                        walk(pattern.url_patterns, text)
                elif isinstance(pattern, URLPattern) and not text.startswith("^"):
                    found.append(
                        "/" + re.sub(r"<(?:(\w+):)?\w+>", lambda m: self.SAMPLES.get(m.group(1) or "str", "x"), text)
                    )

        walk(get_resolver().url_patterns, "")
        return sorted(set(found))

    def test_no_route_answers_an_empty_405(self) -> None:
        self.client.force_login(self.alice.user)
        empty: list[str] = []
        routes = self.routes()
        assert len(routes) > 50
        for url in routes:
            for method in ("get", "put"):
                answer = getattr(self.client, method)(url)
                if answer.status_code == 405 and not answer.content:
                    empty.append(f"{method.upper()} {url}")
        assert empty == []


class AskFromSearchTests(BrainTestCase):
    def test_the_ask_link_of_an_empty_search_carries_its_words_into_the_question_box(self) -> None:
        """/ask?q=… opened an empty box: the words typed into search were lost."""
        self.client.force_login(self.bob.user)
        search = self.client.get("/search", {"q": "zebra onboarding rota"}).content.decode()
        assert "/ask?q=zebra%20onboarding%20rota" in search
        page = self.client.get("/ask", {"q": "zebra onboarding rota"}).content.decode()
        assert ">zebra onboarding rota</textarea>" in page
        token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
        assert token not in self.client.get("/ask", {"q": f"why {token}"}).content.decode()
