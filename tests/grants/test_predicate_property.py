"""Property: the SQL access predicate equals a plain-Python reference resolver.

Random members, groups, service accounts, grants, pages, categories and tiers; for every
example and every permission level, the set of pages the database returns must equal the
set the reference computes, and so must each page's effective permission.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.django import TestCase

from corpus.models import Page, Revision
from corpus.selectors import page_get_visible
from grants.models import Grant, Group, GroupMembership, Member, ServiceAccount
from grants.predicates import effective_permission
from grants.principals import SYSTEM
from grants.services import member_create

EXAMPLES = int(os.environ.get("BRAIN_PREDICATE_EXAMPLES", "2000"))
SEGMENTS = ["a", "b", "c-d", "x.y"]
LEAVES = ["p.md", "q.md", "r_s.md"]
CATEGORIES = [None, "pricing", "sales", "hr"]
SUBJECTS = ["me", "other", "g0", "g1", "g2", "svc", "svc2"]


@dataclass(frozen=True)
class PageSpec:
    path: str
    category: str | None
    sensitivity: int


@dataclass(frozen=True)
class GrantSpec:
    subject: str
    path: str | None
    category: str | None
    permission: int


@st.composite
def worlds(draw: st.DrawFn):
    paths = draw(
        st.lists(
            st.builds(
                lambda segs, leaf: "/".join([*segs, leaf]),
                st.lists(st.sampled_from(SEGMENTS), min_size=0, max_size=3),
                st.sampled_from(LEAVES),
            ),
            min_size=1,
            max_size=8,
            unique=True,
        )
    )
    pages = [
        PageSpec(path, draw(st.sampled_from(CATEGORIES)), draw(st.integers(min_value=0, max_value=2))) for path in paths
    ]
    prefixes = {""}
    for path in paths:
        parts = path.split("/")
        prefixes.update("/".join(parts[:i]) + "/" for i in range(1, len(parts)))
    path_scopes = sorted(prefixes | set(paths) | {"zzz/", "a/zzz.md"})
    scope = st.one_of(
        st.tuples(st.sampled_from(path_scopes), st.none()),
        st.tuples(st.none(), st.sampled_from([c for c in CATEGORIES if c])),
    )
    grants = draw(
        st.lists(
            st.builds(
                lambda subject, sc, perm: GrantSpec(subject, sc[0], sc[1], perm),
                st.sampled_from(SUBJECTS),
                scope,
                st.integers(min_value=1, max_value=3),
            ),
            max_size=10,
        )
    )
    return {
        "pages": pages,
        "grants": grants,
        "my_groups": draw(st.sets(st.sampled_from(["g0", "g1", "g2"]))),
        "principal": draw(st.sampled_from(["member", "service"])),
        "active": draw(st.booleans()),
    }


def reference_permission(world: dict, page: PageSpec) -> int | None:
    """The rule in plain Python, written from the design text, not from the SQL."""
    if page.sensitivity == 2 or not world["active"]:
        return None
    mine = {"me"} | set(world["my_groups"]) if world["principal"] == "member" else {"svc"}
    best = None
    for grant in world["grants"]:
        if grant.subject not in mine:
            continue
        if grant.category is not None:
            matches = page.category == grant.category
        elif grant.path == "" or grant.path.endswith("/"):
            matches = page.sensitivity == 0 and page.path.startswith(grant.path)
        else:
            matches = page.path == grant.path
        if matches:
            best = grant.permission if best is None else max(best, grant.permission)
    return best


class WorldTestCase(TestCase):
    """Fixed people (me, other, three groups, two service accounts) and ``load_world``, which
    writes a generated world's grants, memberships and pages. Shared by the predicate and the
    explain-access property tests."""

    @classmethod
    def setUpTestData(cls) -> None:
        cls.me = member_create(actor=SYSTEM, username="me")
        cls.other = member_create(actor=SYSTEM, username="other")
        cls.groups = {name: Group.objects.create(name=name) for name in ("g0", "g1", "g2")}
        GroupMembership.objects.create(group=cls.groups["g0"], member=cls.other)
        cls.svc = ServiceAccount.objects.create(name="svc")
        cls.svc2 = ServiceAccount.objects.create(name="svc2")

    def _subject(self, name: str) -> dict:
        if name == "me":
            return {"member": self.me}
        if name == "other":
            return {"member": self.other}
        if name in self.groups:
            return {"group": self.groups[name]}
        return {"service_account": self.svc if name == "svc" else self.svc2}

    def load_world(self, world: dict) -> Member | ServiceAccount:
        """Write ``world`` and return its principal (re-read, so its active flag is current)."""
        Member.objects.filter(pk=self.me.pk).update(is_active=world["active"])
        ServiceAccount.objects.filter(pk=self.svc.pk).update(is_active=world["active"])
        GroupMembership.objects.bulk_create(
            [GroupMembership(group=self.groups[name], member=self.me) for name in world["my_groups"]]
        )
        Grant.objects.bulk_create(
            [
                Grant(path=g.path, category=g.category, permission=g.permission, **self._subject(g.subject))
                for g in world["grants"]
            ],
            ignore_conflicts=True,  # a world may hold one grant twice; the table keeps it once
        )
        revisions = Revision.objects.bulk_create(
            [Revision(path=p.path, frontmatter={}, body="x", sha256="0" * 64, promoted_at=None) for p in world["pages"]]
        )
        Page.objects.bulk_create(
            [
                Page(
                    path=p.path,
                    current_revision=revision,
                    title=p.path,
                    type="topic",
                    owner=self.other,
                    status="approved",
                    category=p.category,
                    sensitivity=p.sensitivity,
                    as_of=timezone.now().date(),
                )
                for p, revision in zip(world["pages"], revisions, strict=True)
            ]
        )
        if world["principal"] == "member":
            return Member.objects.select_related("user").get(pk=self.me.pk)
        return ServiceAccount.objects.get(pk=self.svc.pk)


class PredicatePropertyTests(WorldTestCase):
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        derandomize=True,
    )
    @given(world=worlds())
    def test_sql_predicate_matches_reference(self, world: dict) -> None:
        principal = self.load_world(world)
        expected = {p.path: reference_permission(world, p) for p in world["pages"]}
        for level, name in ((1, "read"), (2, "suggest"), (3, "approve")):
            got = set(Page.objects.visible_to(principal, name).values_list("path", flat=True))
            want = {path for path, held in expected.items() if held is not None and held >= level}
            assert got == want, (name, world)
        for page in world["pages"]:
            held = effective_permission(principal, path=page.path, category=page.category, sensitivity=page.sensitivity)
            assert held == expected[page.path], (page, world)
            # The per-row form (one page by key) agrees with the set-wise form.
            for level, name in ((1, "read"), (3, "approve")):
                try:
                    page_get_visible(principal=principal, path=page.path, permission=name)
                    reached = True
                except Page.DoesNotExist:
                    reached = False
                want_held = expected[page.path]
                assert reached == (want_held is not None and want_held >= level), (page, name)
