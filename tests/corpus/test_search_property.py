"""Property: search never returns what the caller may not see, and never comes back short.

Random corpora (pages over a shared pool of real, embedded chunks) and random grants:
every result of every arm and fusion (with and without a path filter) is a page the
plain-Python resolver says is visible, and when the visible corpus holds enough chunks
(after the per-page cap) exactly k come back.
"""

from __future__ import annotations

import os

from django.conf import settings as django_settings
from django.test import override_settings
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.django import TestCase

from corpus.chunking import ChunkText
from corpus.models import Page, Revision, RevisionChunk
from corpus.search import search
from corpus.services import store_chunks
from grants.models import Grant
from grants.principals import SYSTEM
from grants.services import member_create
from tests.grants.test_predicate_property import CATEGORIES, GrantSpec, PageSpec

EXAMPLES = int(os.environ.get("BRAIN_SEARCH_EXAMPLES", "150"))
TOPICS = [
    "discount approval for enterprise contracts",
    "incident response and on-call escalation",
    "quarterly revenue forecast and budget",
    "onboarding checklist for new customers",
    "database backup and restore procedure",
    "hiring process and interview loops",
    "security access reviews and audits",
    "release notes and deployment rollback",
]
POOL = [ChunkText(heading_path=f"Section {i}", body=f"{TOPICS[i % len(TOPICS)]} note {i}.") for i in range(48)]
QUERIES = ["discount approval", "incident escalation", "backup restore", "hiring interview", "zebra"]


def visible(page: PageSpec, grants: list[GrantSpec]) -> bool:
    if page.sensitivity == 2:
        return False
    for grant in grants:
        if grant.category is not None and grant.category == page.category:
            return True
        if grant.path is not None:
            if grant.path == "" or grant.path.endswith("/"):
                if page.sensitivity == 0 and page.path.startswith(grant.path):
                    return True
            elif grant.path == page.path:
                return True
    return False


@st.composite
def corpora(draw: st.DrawFn):
    count = draw(st.integers(min_value=1, max_value=14))
    pages = []
    for index in range(count):
        area = draw(st.sampled_from(["a", "b", "c"]))
        pages.append(
            PageSpec(
                f"{area}/p{index}.md",
                draw(st.sampled_from(CATEGORIES)),
                draw(st.sampled_from([0, 0, 0, 1, 2])),
            )
        )
    chunks = [draw(st.lists(st.integers(0, len(POOL) - 1), min_size=1, max_size=6, unique=True)) for _ in pages]
    scopes = st.one_of(
        st.tuples(st.sampled_from(["", "a/", "b/", "c/", *[p.path for p in pages]]), st.none()),
        st.tuples(st.none(), st.sampled_from(["pricing", "sales", "hr"])),
    )
    grants = draw(st.lists(st.builds(lambda sc: GrantSpec("me", sc[0], sc[1], 1), scopes), min_size=0, max_size=4))
    return {
        "pages": pages,
        "chunks": chunks,
        "grants": grants,
        "query": draw(st.sampled_from(QUERIES)),
        "k": draw(st.integers(1, 12)),
        "per_page": draw(st.integers(1, 3)),
        "fusion": draw(st.sampled_from(["rrf", "weighted_rrf", "score"])),
        # 0 forces the HNSW plan with iterative scans; (2000, 1.0) the exact scan of visible chunks.
        "exact_pages": draw(st.sampled_from([0, 2000])),
        # None reads the predicate's own revision set; a prefix goes through the page filter.
        "prefix": draw(st.sampled_from([None, None, "a/", "b/"])),
    }


class SearchPropertyTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.me = member_create(actor=SYSTEM, username="me")
        cls.owner = member_create(actor=SYSTEM, username="owner")
        store_chunks(POOL)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        derandomize=True,
    )
    @given(world=corpora())
    def test_no_leak_and_k_fill(self, world: dict) -> None:
        Grant.objects.bulk_create(
            [Grant(member=self.me, path=g.path, category=g.category, permission=1) for g in world["grants"]],
            ignore_conflicts=True,  # a world may hold one grant twice; the table keeps it once
        )
        revisions = Revision.objects.bulk_create(
            [Revision(path=p.path, frontmatter={}, body="x", sha256="0" * 64) for p in world["pages"]]
        )
        Page.objects.bulk_create(
            [
                Page(
                    path=p.path,
                    current_revision=revision,
                    title=p.path,
                    type="topic",
                    owner=self.owner,
                    status="approved",
                    category=p.category,
                    sensitivity=p.sensitivity,
                    as_of=timezone.now().date(),
                )
                for p, revision in zip(world["pages"], revisions, strict=True)
            ]
        )
        RevisionChunk.objects.bulk_create(
            [
                RevisionChunk(revision=revision, chunk_id=POOL[index].id, ordinal=ordinal)
                for revision, indexes in zip(revisions, world["chunks"], strict=True)
                for ordinal, index in enumerate(indexes)
            ]
        )
        allowed = {
            p.path for p in world["pages"] if visible(p, world["grants"]) and p.path.startswith(world["prefix"] or "")
        }
        plan = {"EXACT_PAGES": world["exact_pages"], "EXACT_FRACTION": 1.0}
        with override_settings(BRAIN_SEARCH={**django_settings.BRAIN_SEARCH, **plan}):
            response = search(
                principal=self.me,
                query=world["query"],
                k=world["k"],
                per_page=world["per_page"],
                fusion=world["fusion"],
                prefix=world["prefix"],
            )
        returned = [r.path for r in response.results]
        assert set(returned) <= allowed, (returned, allowed)
        capacity = sum(
            min(world["per_page"], len(indexes))
            for page, indexes in zip(world["pages"], world["chunks"], strict=True)
            if page.path in allowed
        )
        assert len(returned) == min(world["k"], capacity), (len(returned), capacity, world)
        for path in set(returned):
            assert returned.count(path) <= world["per_page"]
