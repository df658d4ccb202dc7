"""What a reader is shown holds no secret: every live page and every capture page, rendered.

The corpus is built from the labelled secrets corpus (``bench/data/secrets/planted.jsonl``):
each disguised value is offered as a page and as an uploaded document. Pages holding one
are refused; documents are stored with the value masked. Then every live page and every
capture is rendered through the reader's own views and the HTML, and the text a browser
would show of it, are scanned.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from brain.text.secrets import SecretRefused, find
from corpus.models import Page, Source
from corpus.services import revision_create, revision_promote
from grants.principals import SYSTEM
from grants.services import grant_issue
from ingest.services import document_ingest, extraction_run
from tests.base import BrainTestCase, page_markdown

PLANTED = Path(__file__).resolve().parents[2] / "bench" / "data" / "secrets" / "planted.jsonl"


def planted_samples(every: int = 7) -> list[dict[str, object]]:
    """A spread of the labelled corpus: each kind in several disguises."""
    with PLANTED.open(encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    return records[::every]


def visible_text(page_html: str) -> str:
    text = re.sub(r"<(script|style)\b.*?</\1>", "", page_html, flags=re.S)
    text = re.sub(r"</(p|li|div|h[1-6]|td|th|tr|pre|blockquote)>|<br\s*/?>", "\n", text)
    return html.unescape(re.sub(r"<[^>]+>", "", text))


class RenderedPagesHoldNoSecretTests(BrainTestCase):
    def test_every_live_page_and_capture_renders_without_a_finding(self) -> None:
        grant_issue(actor=SYSTEM, member=self.alice, path="", permission="read")
        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        samples = planted_samples()
        assert len({sample["kind"] for sample in samples}) >= 25
        refused = 0
        for index, sample in enumerate(samples):
            body = f"# Note {index}\n\n## Context\n\n{sample['text']}\n\nMore ordinary prose follows here.\n"
            try:
                revision, _ = revision_create(
                    actor=SYSTEM,
                    path=f"topics/notes/n-{index}.md",
                    markdown=page_markdown(title=f"Note {index}", body=body),
                )
                revision_promote(actor=SYSTEM, revision=revision)
            except SecretRefused:
                refused += 1
            extraction = document_ingest(
                actor=self.alice, filename=f"note-{index}.txt", data=str(sample["text"]).encode(), enqueue=False
            )
            extraction_run(extraction.pk)
        assert refused == len(samples)
        for index in range(5):
            body = f"# Clean {index}\n\n## Part\n\nOrder 4002-{index}.\n"
            revision, _ = revision_create(
                actor=SYSTEM,
                path=f"topics/clean/c-{index}.md",
                markdown=page_markdown(title=f"Clean {index}", body=body),
            )
            revision_promote(actor=SYSTEM, revision=revision)

        self.client.force_login(self.alice.user)
        live = list(Page.objects.filter(current_revision__isnull=False).values_list("path", flat=True))
        captures = list(Source.objects.values_list("key", flat=True))
        assert len(live) >= 5
        assert len(captures) == len(samples)
        for url in [f"/pages/{path}" for path in live] + [f"/sources/{key}" for key in captures]:
            response = self.client.get(url)
            assert response.status_code == 200, url
            page_html = response.content.decode()
            assert find(page_html) == [], url
            assert find(visible_text(page_html)) == [], url

    def test_text_that_only_rendering_joins_is_refused(self) -> None:
        # A link's text runs into the word after it: the raw Markdown keeps the halves apart.
        key = "AKIA" + "QYLPMN5HHHFPZAM2"
        body = f"# Note\n\n## Context\n\nThe key [{key[:8]}](https://example.org/docs){key[8:]} is old.\n"
        with pytest.raises(SecretRefused) as refusal:
            revision_create(
                actor=SYSTEM, path="topics/notes/joined.md", markdown=page_markdown(title="Joined", body=body)
            )
        assert refusal.value.field == "body (as rendered)"

    def test_a_value_written_as_a_yaml_escape_is_read_as_yaml_decodes_it(self) -> None:
        token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
        for written in ('"\\x67' + token[1:] + '"', '"\\u0067' + token[1:] + '"'):
            markdown = page_markdown(title="placeholder").replace("title: placeholder", f"title: {written}")
            with self.subTest(written=written), pytest.raises(SecretRefused) as refusal:
                revision_create(actor=SYSTEM, path="topics/notes/escaped.md", markdown=markdown)
            assert refusal.value.field == "frontmatter title"

    def test_a_refusal_names_the_frontmatter_key_and_line(self) -> None:
        markdown = page_markdown(title="Card " + "4111 1111 " + "1111 1111")
        with pytest.raises(SecretRefused) as refusal:
            revision_create(actor=SYSTEM, path="topics/notes/titled.md", markdown=markdown)
        assert refusal.value.field == "frontmatter title"
        assert "line 7" in str(refusal.value)
