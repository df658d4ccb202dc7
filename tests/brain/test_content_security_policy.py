"""Every page carries a CSP that allows no inline script, and no page needs one."""

from __future__ import annotations

import re

from brain.middleware import CONTENT_SECURITY_POLICY
from memory.services import memory_remember
from tests.base import DISCOUNT_POLICY, BrainTestCase, publish

INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>\s*\S", re.IGNORECASE)
INLINE_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.IGNORECASE)


class ContentSecurityPolicyTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        publish(DISCOUNT_POLICY, title="Discount policy", category="pricing",
                body="# Discount policy\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n")  # fmt: skip
        cls.memory = memory_remember(actor=cls.alice, content="The office plant needs water on Mondays.").memory

    def assert_no_inline_script(self, url: str) -> None:
        response = self.client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        assert response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
        html = response.content.decode()
        assert not INLINE_SCRIPT.search(html), (url, INLINE_SCRIPT.search(html))
        assert not INLINE_HANDLER.search(html), (url, INLINE_HANDLER.search(html))

    def test_the_policy_forbids_inline_script_and_framing(self) -> None:
        assert "script-src 'self'" in CONTENT_SECURITY_POLICY
        assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY.split("script-src", 1)[1].split(";", 1)[0]
        assert "frame-ancestors 'none'" in CONTENT_SECURITY_POLICY

    def test_people_pages_need_no_inline_script(self) -> None:
        self.assert_no_inline_script("/login/")
        self.client.force_login(self.alice.user)
        for url in ("/", "/search?q=discount", f"/pages/{DISCOUNT_POLICY}", "/memory/",
                    f"/memory/{self.memory.pk}/", "/account/apps/", "/sources/upload"):  # fmt: skip
            self.assert_no_inline_script(url)

    def test_admin_pages_need_no_inline_script(self) -> None:
        self.client.force_login(self.charlie.user)
        for url in ("/admin/", "/admin/grants/grant/", "/admin/grants/grant/add/"):
            self.assert_no_inline_script(url)
