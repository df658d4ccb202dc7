"""One page document: what validation says a page is, promotion stores (title, links)."""

from __future__ import annotations

from corpus.frontmatter import parse_page
from corpus.models import Page, PageLink
from corpus.services import document_from_revision, revision_create, revision_promote
from grants.principals import SYSTEM
from tests.base import BrainTestCase

NO_TITLE = """---
type: topic
owner: alice
status: approved
change_policy: gate
as_of: 2026-09-02
---

Account managers may approve up to 12% without escalation.
"""


class DocumentDriftTests(BrainTestCase):
    def test_a_page_without_a_title_is_promoted_under_the_title_it_validated_with(self) -> None:
        path = "topics/pricing/discount-policy.md"
        validated = parse_page(path, NO_TITLE)
        assert validated.title == "Discount policy"
        revision, _ = revision_create(actor=SYSTEM, path=path, markdown=NO_TITLE)
        assert document_from_revision(revision).title == validated.title
        page = revision_promote(actor=SYSTEM, revision=revision)
        assert Page.objects.get(pk=page.pk).title == "Discount policy"

    def test_links_are_the_ones_the_renderer_renders(self) -> None:
        body = (
            "# Links\n\nSee the [price list](price-list.md) and [onboarding](../onboarding.md).\n\n"
            "```\n[not a link](inside-code.md)\n```\n\n"
            "Inline `[also code](inline-code.md)` and an [external](https://example.org/x.md) one.\n"
        )
        markdown = NO_TITLE.replace("Account managers may approve up to 12% without escalation.\n", body)
        revision, _ = revision_create(actor=SYSTEM, path="topics/pricing/links.md", markdown=markdown)
        page = revision_promote(actor=SYSTEM, revision=revision)
        targets = set(PageLink.objects.filter(from_page=page, kind="link").values_list("to_path", flat=True))
        assert targets == {"topics/pricing/price-list.md", "topics/onboarding.md"}
