"""The memory layer's services and recall: layers, the capture pipeline, share, recall."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any
from unittest import mock

import pytest
from django.core.exceptions import PermissionDenied
from django.test import TestCase, TransactionTestCase
from django.utils import timezone

from brain import embeddings
from corpus import search as search_module
from grants.principals import SYSTEM
from grants.services import member_create
from memory.classify import MemoryInvalid, normalise_tags
from memory.models import LinkType, Memory, MemoryEvent, MemoryLink, Status
from memory.recall import memory_connections, memory_get, memory_list_recent, memory_recall, time_window
from memory.services import (
    apply_contradiction,
    memory_append,
    memory_backfill_embeddings,
    memory_forget,
    memory_link,
    memory_remember,
    memory_set_status,
    memory_share,
    memory_unlink,
    memory_update,
)


def embedder_down(texts):
    raise embeddings.EmbeddingError("embedding endpoint failed (ConnectionError)")


class MemoryTestCase(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.alice = member_create(actor=SYSTEM, username="alice")
        cls.bob = member_create(actor=SYSTEM, username="bob")
        cls.charlie = member_create(actor=SYSTEM, username="charlie", role="admin")

    def setUp(self) -> None:
        search_module.query_vector_cache.clear()

    def remember(self, content: str, who=None, **kwargs):
        return memory_remember(actor=who or self.alice, content=content, **kwargs).memory


class LayerTests(MemoryTestCase):
    def test_a_personal_memory_is_invisible_to_everyone_else_admins_included(self) -> None:
        secret = self.remember("My sister's birthday is on 3 March.")
        for other in (self.bob, self.charlie):
            with pytest.raises(Memory.DoesNotExist):
                memory_get(actor=other, memory_id=secret.pk)
            with pytest.raises(Memory.DoesNotExist):
                memory_get(actor=other, memory_id="00000000-0000-0000-0000-000000000000")
            assert memory_recall(actor=other, query="birthday in March").results == []
            assert memory_list_recent(actor=other) == []
            for change in (
                lambda who: memory_append(actor=who, memory_id=secret.pk, text="x"),
                lambda who: memory_update(actor=who, memory_id=secret.pk, content="x"),
                lambda who: memory_set_status(actor=who, memory_id=secret.pk, status="deprecated"),
                lambda who: memory_forget(actor=who, memory_id=secret.pk),
                lambda who: memory_share(actor=who, memory_id=secret.pk, workspace="company"),
            ):
                with pytest.raises(Memory.DoesNotExist):
                    change(other)
            own = self.remember("Something of mine", who=other)
            with pytest.raises(Memory.DoesNotExist):
                memory_link(actor=other, from_id=own.pk, to_id=secret.pk)
        assert memory_get(actor=self.alice, memory_id=secret.pk).content.startswith("My sister")

    def test_shared_memories_are_read_by_all_and_changed_only_by_the_author_or_an_admin(self) -> None:
        shared = self.remember("We ship on Thursdays.", workspace="company")
        assert memory_get(actor=self.bob, memory_id=shared.pk).author_id == self.alice.pk
        with pytest.raises(PermissionDenied, match="only the author or an admin"):
            memory_append(actor=self.bob, memory_id=shared.pk, text="and Fridays")
        with pytest.raises(PermissionDenied):
            memory_forget(actor=self.bob, memory_id=shared.pk)
        updated = memory_append(actor=self.charlie, memory_id=shared.pk, text="Not in December.")
        assert "[Update " in updated.content
        assert updated.content.endswith("]: Not in December.")

    def test_an_unknown_layer_is_refused_by_name(self) -> None:
        with pytest.raises(MemoryInvalid, match='workspace must be "personal" or "company"'):
            self.remember("x", workspace="team")

    def test_inactive_members_see_nothing(self) -> None:
        self.remember("Shared fact", workspace="company")
        self.bob.is_active = False
        self.bob.save()
        assert memory_list_recent(actor=self.bob) == []


class CaptureTests(MemoryTestCase):
    def test_tags_are_trimmed_lowercased_and_hashtags_become_tags(self) -> None:
        memory = self.remember(
            "Deploy freeze for #Release-42 starts Friday", tags=["  Ops ", "ops", "status:canonical"]
        )
        assert memory.tags == ["ops", "release-42"]
        assert memory.status == Status.CANONICAL
        assert memory.wire_tags[-1] == "status:canonical"
        with pytest.raises(MemoryInvalid, match="at most 64 tags"):
            normalise_tags([f"t{i}" for i in range(65)])
        with pytest.raises(MemoryInvalid, match="at most 128"):
            normalise_tags(["x" * 129])
        # "#urgent" is "urgent" (a vault's re-import read it so: the round trip added a tag);
        # a comma would split the tag the next time the web form saved it.
        assert normalise_tags(["#Urgent", "urgent", "# ops"]).tags == ["urgent", "ops"]
        with pytest.raises(MemoryInvalid, match="cannot contain a comma"):
            normalise_tags(["north,south"])
        # A filter finds a tag however it was spelled when stored: "#Release-42" (the "#" kept,
        # it found nothing), full-width letters (NFKC) — on recall, recent and the REST list.
        from memory.tokens import api_token_issue

        for spelling in ("#Release-42", "ｒｅｌｅａｓｅ-42", " release-42 "):
            found = memory_recall(actor=self.alice, query="deploy freeze", tag=spelling)
            assert [item.memory.pk for item in found.results] == [memory.pk], spelling
            assert [m.pk for m in memory_list_recent(actor=self.alice, tag=spelling)] == [memory.pk], spelling
        token = api_token_issue(actor=self.alice, name="t", scopes=["memory"])[1]
        listed = self.client.get("/api/v1/memories", {"tag": "#Release-42"}, HTTP_AUTHORIZATION=f"Bearer {token}")
        assert [item["id"] for item in listed.json()["results"]] == [str(memory.pk)]

    def test_a_long_tag_list_is_refused_before_each_tag_is_scanned(self) -> None:
        """Every entry went through the secret detector before duplicates were dropped: 200,000
        of "x" (1 MB through MCP) took 5.5 s of a web thread and was stored as one tag."""
        from unittest import mock

        from memory import classify

        with mock.patch.object(classify, "refuse", wraps=classify.refuse) as scanned:
            with pytest.raises(MemoryInvalid, match="at most 64 tags \\(200,000 were sent\\)"):
                normalise_tags(["x"] * 200_000)
            assert scanned.call_count == 0
            assert normalise_tags(["x"] * 200).tags == ["x"]  # spellings repeat within the bound
            assert scanned.call_count == 1
            many = " ".join(f"#t{i}" for i in range(10_000))
            with pytest.raises(MemoryInvalid, match="at most 64 tags"):
                normalise_tags([], many)
            assert scanned.call_count < 1 + 80  # stopped one tag past the limit, not 10,000 scans
        with pytest.raises(MemoryInvalid, match="a list of strings"):
            normalise_tags([["x"], {"y": 1}])  # type: ignore[list-item]

    def test_importance_is_a_whole_number_from_1_to_5_not_a_yes(self) -> None:
        for importance in (True, False, 0, 6, 2.5, "3"):
            with pytest.raises(MemoryInvalid, match="importance must be an integer from 1 to 5"):
                memory_remember(actor=self.alice, content=f"Rated {importance!r}", importance=importance)  # type: ignore[arg-type]
        assert memory_remember(actor=self.alice, content="Rated four", importance=4).memory.importance == 4

    def test_a_recall_query_is_a_question_not_a_document(self) -> None:
        # 100 KB of words once nested the full-text parser past PostgreSQL's stack, reported
        # as a database outage; the query is bounded as search's is.
        with pytest.raises(MemoryInvalid, match="at most 1000 characters"):
            memory_recall(actor=self.alice, query="ship " * 20_000)
        assert memory_recall(actor=self.alice, query="ship " * 200).results is not None

    def test_secrets_and_nul_are_refused_and_nothing_is_stored(self) -> None:
        with pytest.raises(ValueError, match="refused"):
            self.remember("the key is AKIAIOSFODNN7EXAMPLE ok")
        with pytest.raises(ValueError, match="NUL"):
            self.remember("bad\x00byte")
        assert Memory.objects.count() == 0

    def test_duplicate_thresholds_block_flag_and_link(self) -> None:
        first = self.remember("The API rate limit is 600 requests per minute.")
        again = memory_remember(actor=self.alice, content="The API rate limit is 600 requests a minute.")
        assert again.outcome == "duplicate"
        assert again.memory.pk == first.pk
        assert again.similarity is not None
        assert again.similarity >= 0.95
        assert Memory.objects.count() == 1

        office = self.remember("Our office in Tokyo opens at 9.")
        near = memory_remember(actor=self.alice, content="The Tokyo office opens at nine.")
        assert near.outcome == "flagged"
        assert near.similarity is not None
        assert 0.85 <= near.similarity < 0.95
        assert "duplicate-candidate" in near.memory.tags
        assert near.duplicate_of.pk == office.pk

        ship = self.remember("We ship releases on Thursdays.")
        related = memory_remember(actor=self.alice, content="Releases go out on Thursdays.")
        assert related.outcome == "stored"
        assert [(link.to_memory_id, link.type, link.provenance) for link in related.links] == [
            (ship.pk, LinkType.RELATES_TO, "inferred")
        ]

    def test_the_duplicate_check_stays_within_one_layer_and_what_the_author_can_see(self) -> None:
        self.remember("The API rate limit is 600 requests per minute.", who=self.bob)
        mine = memory_remember(actor=self.alice, content="The API rate limit is 600 requests a minute.")
        assert mine.outcome == "stored"  # bob's personal memory is not alice's duplicate

    def test_classification_fills_gaps_and_never_makes_a_memory_canonical(self) -> None:
        decision = self.remember("We decided the security review must happen before every release.")
        assert decision.importance == 4
        assert decision.status == Status.DRAFT
        meeting = self.remember("Met the Northwind team today about the renewal.")
        assert meeting.kind == "episodic"
        assert meeting.volatility == "volatile"
        assert self.remember("Currently working on the billing migration.").volatility == "state"

    def test_follows_links_the_one_recent_episodic_memory(self) -> None:
        first = self.remember("Met Dana yesterday about the roadmap.")
        second = self.remember("Called the bank this morning about invoices.")
        assert MemoryLink.objects.filter(from_memory=second, to_memory=first, type=LinkType.FOLLOWS).exists()

    def test_contradiction_deprecates_the_old_unless_it_is_canonical(self) -> None:
        old = self.remember("The on-call rotation is weekly.")
        new = self.remember("The on-call rotation is every two weeks.")
        settled = apply_contradiction(actor=self.alice, new=new, old=old)
        old.refresh_from_db()
        assert old.status == Status.DEPRECATED
        assert "contradiction-resolved" in settled.tags
        assert MemoryLink.objects.filter(from_memory=new, to_memory=old, type=LinkType.SUPERSEDES).exists()

        protected = self.remember("Discounts above 12% need the commercial lead.", tags=["status:canonical"])
        challenger = self.remember("Discounts above 20% need the commercial lead.", tags=["status:canonical"])
        settled = apply_contradiction(actor=self.alice, new=challenger, old=protected)
        protected.refresh_from_db()
        assert settled.status == Status.DRAFT
        assert protected.status == Status.CANONICAL
        assert protected.content.startswith("Discounts above 12%")

    def test_duplicate_verdicts_never_overwrite_a_protected_memory(self) -> None:
        from memory.services import apply_duplicate_verdict

        cases: list[tuple[dict[str, Any], str, str]] = [
            ({"tags": ["status:canonical"]}, "Our office in Tokyo opens at 9.", "The Tokyo office opens at nine."),
            (
                {"importance": 4},
                "Alice prefers short status updates in Slack.",
                "Alice likes brief status updates on Slack.",
            ),
        ]
        for protection, original, paraphrase in cases:
            old = self.remember(original, **protection)
            near = memory_remember(actor=self.alice, content=paraphrase)
            assert near.outcome == "flagged"
            for verdict in ("merge", "replace"):
                kept = apply_duplicate_verdict(actor=self.alice, new=near.memory, old=old, verdict=verdict)
                old.refresh_from_db()
                assert old.content == original
                assert kept.pk == near.memory.pk  # both stay
                assert "duplicate-candidate" not in kept.tags

        plain = self.remember("Standups are at 9:30.")
        merged_in = memory_remember(actor=self.alice, content="The standup is at half past nine.").memory
        survivor = apply_duplicate_verdict(actor=self.alice, new=merged_in, old=plain, verdict="merge")
        assert survivor.pk == plain.pk
        assert "[Update " in survivor.content
        assert survivor.content.endswith("The standup is at half past nine.")
        assert not Memory.objects.filter(pk=merged_in.pk).exists()
        with pytest.raises(MemoryInvalid, match="verdict"):
            apply_duplicate_verdict(actor=self.alice, new=survivor, old=plain, verdict="maybe")

    def test_a_merge_keeps_one_link_to_a_neighbour_both_memories_linked(self) -> None:
        """Both rows linking the same memory made the move break memory_link_unique: the
        verdict job failed and was retried, asking the model each time."""
        from memory.models import MemoryLink
        from memory.services import apply_duplicate_verdict, memory_link

        plain = self.remember("Standups are at 9:30.")
        neighbour = self.remember("The platform team runs the standup.")
        merged_in = memory_remember(actor=self.alice, content="The standup is at half past nine.").memory
        memory_link(actor=self.alice, from_id=plain.pk, to_id=neighbour.pk)
        memory_link(actor=self.alice, from_id=merged_in.pk, to_id=neighbour.pk)
        memory_link(actor=self.alice, from_id=neighbour.pk, to_id=plain.pk)
        memory_link(actor=self.alice, from_id=neighbour.pk, to_id=merged_in.pk)
        survivor = apply_duplicate_verdict(actor=self.alice, new=merged_in, old=plain, verdict="merge")
        assert survivor.pk == plain.pk
        assert MemoryLink.objects.filter(from_memory=plain, to_memory=neighbour).count() == 1
        assert MemoryLink.objects.filter(from_memory=neighbour, to_memory=plain).count() == 1

    def test_a_secret_never_forms_by_joining_texts(self) -> None:
        """Appending "Xk9#mP2$vL7q" to "Office wifi password:" stored what a capture of the
        whole refuses; a model's merge joins two texts the same way."""
        from brain.text.secrets import SecretRefused
        from memory.services import apply_duplicate_verdict, memory_append

        head = self.remember("Office wifi password:")
        with pytest.raises(SecretRefused):
            memory_append(actor=self.alice, memory_id=head.pk, text="Xk9#mP2$vL7q")
        head.refresh_from_db()
        assert head.content == "Office wifi password:"
        other = memory_remember(actor=self.alice, content="Xk9#mP2$vL7q is what the office wifi wants").memory
        kept = apply_duplicate_verdict(actor=self.alice, new=other, old=head, verdict="merge")
        head.refresh_from_db()
        assert head.content == "Office wifi password:"
        assert kept.pk == other.pk  # kept apart, neither lost

    def test_vectors_of_a_former_model_are_ignored_until_re_embedded(self) -> None:
        memory = self.remember("Backups are restored monthly as a drill.")
        Memory.objects.filter(pk=memory.pk).update(embedding_model="a-former-model")
        question = "how often do we practise recovering data"
        dense = memory_recall(actor=self.alice, query=question)
        assert all(item.similarity is None for item in dense.results)  # compared with nothing stale
        assert memory_backfill_embeddings() == 1
        recalled = memory_recall(actor=self.alice, query=question).results
        assert recalled[0].memory.pk == memory.pk
        assert recalled[0].similarity is not None

    def test_captures_work_with_the_embedder_down_and_vectors_are_back_filled(self) -> None:
        with mock.patch.object(embeddings, "embed", side_effect=embedder_down):
            memory = self.remember("Backups are restored monthly as a drill.")
        assert memory.embedding is None
        assert memory_backfill_embeddings() == 1
        memory.refresh_from_db()
        assert memory.embedding is not None

    def test_every_write_leaves_an_event_without_content(self) -> None:
        memory = self.remember("A fact worth keeping.")
        memory_append(actor=self.alice, memory_id=memory.pk, text="More.")
        memory_set_status(actor=self.alice, memory_id=memory.pk, status="canonical")
        memory_share(actor=self.alice, memory_id=memory.pk, workspace="company")
        memory_forget(actor=self.alice, memory_id=memory.pk)
        events = list(MemoryEvent.objects.filter(memory_id=memory.pk).values_list("action", flat=True))
        assert events == ["created", "appended", "status_changed", "shared", "deleted"]
        assert "A fact" not in str(list(MemoryEvent.objects.values_list("metadata", flat=True)))


class ShareAndLinkTests(MemoryTestCase):
    def test_share_moves_the_one_memory_with_its_links(self) -> None:
        a = self.remember("Project Falcon kickoff notes.", workspace="company")
        b = self.remember("Project Falcon budget is 40k.")
        c = self.remember("Project Falcon owner is Dana.")
        memory_link(actor=self.alice, from_id=b.pk, to_id=c.pk, type="part_of_project")
        with pytest.raises(MemoryInvalid, match="within one layer"):
            memory_link(actor=self.alice, from_id=b.pk, to_id=a.pk)
        moved, removed = memory_share(actor=self.alice, memory_id=b.pk, workspace="company")
        assert moved.workspace == "company"
        assert removed >= 1  # the link to c stays behind: links never cross layers
        assert Memory.objects.filter(pk=b.pk).count() == 1  # moved, not copied
        assert memory_get(actor=self.bob, memory_id=b.pk).author_id == self.alice.pk
        memory_link(actor=self.alice, from_id=b.pk, to_id=a.pk, type="part_of_project")
        assert [(d, t, m.pk) for d, t, m in memory_connections(actor=self.bob, memory_id=b.pk)] == [
            ("out", "part_of_project", a.pk)
        ]
        # Un-sharing: the author or an admin only; the links to shared memories stay behind.
        with pytest.raises(PermissionDenied):
            memory_share(actor=self.bob, memory_id=b.pk, workspace="personal")
        # Asked to share what is shared already: nothing moves, nothing is audited as changed.
        from grants.models import AuditEvent

        assert memory_share(actor=self.charlie, memory_id=b.pk, workspace="company") == (b, 0)
        assert not AuditEvent.objects.filter(action="memory.admin_share").exists()
        with pytest.raises(PermissionDenied):
            memory_share(actor=self.bob, memory_id=b.pk, workspace="company")
        memory_share(actor=self.charlie, memory_id=b.pk, workspace="personal")
        assert AuditEvent.objects.filter(action="memory.admin_share").count() == 1
        with pytest.raises(Memory.DoesNotExist):
            memory_get(actor=self.bob, memory_id=b.pk)
        assert memory_connections(actor=self.alice, memory_id=b.pk) == []

    def test_a_tags_only_edit_keeps_the_status_a_status_tag_in_the_text_once_set(self) -> None:
        memory = self.remember("The deploy freeze starts on the 20th. #status:canonical")
        assert memory.status == "canonical"
        memory_set_status(actor=self.alice, memory_id=memory.pk, status="deprecated")
        edited = memory_update(actor=self.alice, memory_id=memory.pk, tags=["release"])
        assert edited.status == "deprecated"  # was canonical again: back in recall and capsules
        assert memory_update(actor=self.alice, memory_id=memory.pk, tags=["status:draft"]).status == "draft"
        text = "Freeze from the 21st. #status:canonical"
        rewritten = memory_update(actor=self.alice, memory_id=memory.pk, content=text, tags=["release"])
        assert rewritten.status == "canonical"  # written now, in the edited text

    def test_links_refuse_self_and_unknown_types_and_unlink_removes(self) -> None:
        a = self.remember("Alpha fact.")
        b = self.remember("Beta fact.")
        with pytest.raises(MemoryInvalid, match="itself"):
            memory_link(actor=self.alice, from_id=a.pk, to_id=a.pk)
        with pytest.raises(MemoryInvalid, match="type must be one of"):
            memory_link(actor=self.alice, from_id=a.pk, to_id=b.pk, type="likes")
        memory_link(actor=self.alice, from_id=a.pk, to_id=b.pk, type="caused_by")
        assert memory_unlink(actor=self.alice, from_id=a.pk, to_id=b.pk) == 1


class RecallTests(MemoryTestCase):
    def test_recall_finds_by_meaning_and_excludes_deprecated(self) -> None:
        kept = self.remember("The staging database is rebuilt every night at 2am.")
        gone = self.remember("Staging data is wiped each evening.")
        memory_set_status(actor=self.alice, memory_id=gone.pk, status="deprecated")
        results = memory_recall(actor=self.alice, query="when does staging get reset?").results
        assert results[0].memory.pk == kept.pk
        assert gone.pk not in {item.memory.pk for item in results}
        kept.refresh_from_db()
        assert kept.recall_count == 1

    def test_phrases_and_exclusions_hold_for_what_meaning_finds_too(self) -> None:
        nightly = self.remember("The staging database is rebuilt every night at 2am.")
        evening = self.remember("Staging data is wiped each evening.")
        assert {item.memory.pk for item in memory_recall(actor=self.alice, query="when is staging reset?").results} == {
            nightly.pk, evening.pk,
        }  # fmt: skip
        excluded = memory_recall(actor=self.alice, query="when is staging reset? -evening").results
        assert [item.memory.pk for item in excluded] == [nightly.pk]
        phrased = memory_recall(actor=self.alice, query='"wiped each evening"').results
        assert [item.memory.pk for item in phrased] == [evening.pk]

    def test_a_query_of_only_a_time_phrase_or_exclusions_lists_newest_first(self) -> None:
        """ "today" was ranked by the meaning of "" (2 of 8 memories of the day), "-ship" by the
        meaning of "-ship" (unrelated memories shown as "-1% match")."""
        old = self.remember("We decided pricing moves to annual plans.")
        Memory.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=3))
        written = [self.remember(text) for text in (
            "The staging database is rebuilt every night.", "We ship on Thursdays.", "Dana runs the fire drill.",
        )]  # fmt: skip
        today = memory_recall(actor=self.alice, query="today").results
        assert [item.memory.pk for item in today] == [memory.pk for memory in reversed(written)]
        assert all(item.similarity is None for item in today)
        unshipped = memory_recall(actor=self.alice, query="-ship").results
        assert [item.memory.pk for item in unshipped] == [written[2].pk, written[0].pk, old.pk]
        assert memory_recall(actor=self.alice, query='"').results  # a lone quote asks for nothing: the newest

    def test_cjk_and_full_width_keywords_with_the_embedder_off(self) -> None:
        tokyo = self.remember("東京オフィスは午前9時に開きます。")
        pg = self.remember("ＰｏｓｔｇｒｅＳＱＬ backups run nightly.")
        with mock.patch.object(embeddings, "embed", side_effect=embedder_down):
            jp = memory_recall(actor=self.alice, query="東京オフィス")
            latin = memory_recall(actor=self.alice, query="postgresql")
            wide = memory_recall(actor=self.alice, query="ＰＯＳＴＧＲＥＳＱＬ")
        assert jp.degraded is True
        assert [item.memory.pk for item in jp.results] == [tokyo.pk]
        assert [item.memory.pk for item in latin.results] == [pg.pk]
        assert [item.memory.pk for item in wide.results] == [pg.pk]

    def test_time_phrases_become_date_filters(self) -> None:
        now = timezone.now()
        text, after, before = time_window("what did we decide last week about pricing", now)
        assert text == "what did we decide about pricing"
        assert before is not None
        assert after is not None
        assert before - after == dt.timedelta(days=7)
        old = self.remember("We decided pricing moves to annual plans.")
        Memory.objects.filter(pk=old.pk).update(created_at=now - dt.timedelta(days=60))
        fresh = self.remember("We decided pricing keeps monthly plans too.")
        results = memory_recall(actor=self.alice, query="pricing decision this month").results
        assert [item.memory.pk for item in results] == [fresh.pk]

    def test_graph_expansion_follows_links(self) -> None:
        root = self.remember("Project Heron launches in May.")
        linked = self.remember("Zebra crossing paint supplier contact is Fred.")
        memory_link(actor=self.alice, from_id=root.pk, to_id=linked.pk, type="part_of_project")
        direct = {
            item.memory.pk for item in memory_recall(actor=self.alice, query="Heron launch date", top_k=1).results
        }
        assert direct == {root.pk}
        expanded = memory_recall(actor=self.alice, query="Heron launch date", top_k=1, hops=1).results
        assert [(item.memory.pk, item.hop) for item in expanded] == [(root.pk, 0), (linked.pk, 1)]

    def test_a_hub_adds_at_most_top_k_neighbours_and_only_direct_results_count_as_recalled(self) -> None:
        """A memory linked to 3,000 answered 3 MB and bumped the recall count of each."""
        hub = self.remember("Project Osprey hub: everything about the osprey migration.")
        spokes = Memory.objects.bulk_create(
            Memory(author=self.alice, workspace=hub.workspace, content=f"Osprey note {n}", kind=hub.kind)
            for n in range(30)
        )
        MemoryLink.objects.bulk_create(
            MemoryLink(from_memory=hub, to_memory=spoke, type=LinkType.RELATES_TO) for spoke in spokes
        )
        results = memory_recall(actor=self.alice, query="osprey migration hub", top_k=2, hops=2).results
        assert len([item for item in results if item.hop]) <= 2
        assert len(results) <= 4
        counted = Memory.objects.filter(pk__in=[spoke.pk for spoke in spokes], recall_count__gt=0).count()
        assert counted == 0

    def test_bad_arguments_are_named(self) -> None:
        with pytest.raises(MemoryInvalid, match="topK"):
            memory_recall(actor=self.alice, query="x", top_k=50)
        with pytest.raises(MemoryInvalid, match="hops"):
            memory_recall(actor=self.alice, query="x", hops=4)
        with pytest.raises(MemoryInvalid, match="non-empty"):
            memory_recall(actor=self.alice, query="  ")


class ParaphraseTests(MemoryTestCase):
    def test_memories_are_recalled_by_questions_in_other_words(self) -> None:
        from memory.evaluation.paraphrases import PAIRS

        ids = [memory_remember(actor=self.alice, content=memory).memory.pk for memory, _ in PAIRS]
        assert len(set(ids)) == len(PAIRS)  # none was taken for a duplicate of another
        hits = 0
        misses = []
        for memory_id, (_, question) in zip(ids, PAIRS, strict=True):
            found = memory_recall(actor=self.alice, query=question, top_k=3, count_recall=False).results
            top = [item.memory.pk for item in found]
            if memory_id in top:
                hits += 1
            else:
                misses.append(question)
        recall_at_3 = hits / len(PAIRS)
        print(f"\nparaphrase recall@3 = {recall_at_3:.3f} ({hits}/{len(PAIRS)}); missed: {misses}")
        assert len(PAIRS) >= 30
        assert recall_at_3 >= 0.85, misses


class ConnectionsBoundTests(MemoryTestCase):
    def test_a_memory_with_thousands_of_links_answers_the_newest_hundred_each_way_in_few_queries(self) -> None:
        """3,000 incoming links answered all of them, with two more queries per link (6,004)."""
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from memory.models import MemoryLink
        from memory.recall import MAX_CONNECTIONS, memory_connections

        hub = memory_remember(actor=self.alice, content="The release train leaves every Tuesday.").memory
        Memory.objects.filter(pk=hub.pk).update(workspace="company")
        many = Memory.objects.bulk_create(
            [Memory(author=self.bob, workspace="company", content=f"note {n}") for n in range(150)]
        )
        MemoryLink.objects.bulk_create(
            [MemoryLink(from_memory=note, to_memory=hub, type="relates_to") for note in many]
        )
        with CaptureQueriesContext(connection) as queries:
            found = memory_connections(actor=self.alice, memory_id=hub.pk)
        assert len(found) == MAX_CONNECTIONS
        assert len(queries.captured_queries) <= 4
        assert {direction for direction, _, _ in found} == {"in"}
        assert all(other.author.username == "bob" for _, _, other in found)


class LinkRaceTests(TransactionTestCase):
    """Two transactions at once: a link drawn while its target changes layer."""

    def test_a_link_drawn_while_its_target_is_unshared_waits_and_refuses(self) -> None:
        from django.db import connection, transaction

        alice = member_create(actor=SYSTEM, username="alice")
        source = memory_remember(actor=alice, content="The launch review is on Friday.", workspace="company").memory
        target = memory_remember(actor=alice, content="The launch checklist lives in the wiki.", workspace="company")
        target_id = target.memory.pk
        unshared, release = threading.Event(), threading.Event()

        def unshare() -> None:
            try:
                with transaction.atomic():
                    memory_share(actor=alice, memory_id=target_id, workspace="personal")
                    unshared.set()
                    release.wait(10)  # held open until the link is underway
            finally:
                connection.close()

        worker = threading.Thread(target=unshare)
        worker.start()
        assert unshared.wait(10)
        threading.Timer(0.5, release.set).start()  # the link below must be waiting by then
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '5s'")  # a wait that never ends fails here
        # Read before the un-share committed, the target was still shared: the link crossed layers.
        with pytest.raises(MemoryInvalid, match="within one layer"):
            memory_link(actor=alice, from_id=source.pk, to_id=target_id)
        worker.join()
        assert not MemoryLink.objects.exists()


class CaptureRaceTests(TransactionTestCase):
    """A capture and a forget or un-share of the neighbour it links to, at once."""

    TEXT = "The quarterly planning offsite is in Lisbon at the riverside hotel."
    CLOSE = ("Our quarterly planning offsite happens in Lisbon this May; we booked the riverside hotel for the "
             "whole team and the dinner.")  # fmt: skip

    def capture_while(self, change: Any) -> Any:
        """Bob captures next to Alice's shared memory; ``change`` (on another connection)
        starts once his capture has found its neighbours, and is let finish after it."""
        from unittest import mock

        from django.db import connection

        from memory import services

        started: list[threading.Thread] = []
        failures: list[BaseException] = []
        real = services._auto_link

        def work() -> None:
            try:
                change()
            except BaseException as failure:  # reported by the test, on this thread
                failures.append(failure)
            finally:
                connection.close()

        def racing(actor: Any, memory: Memory, neighbours: Any) -> Any:
            thread = threading.Thread(target=work)
            thread.start()
            thread.join(1.0)  # it waits on the capture's hold of the neighbour
            started.append(thread)
            return real(actor, memory, neighbours)

        with mock.patch.object(services, "_auto_link", racing):
            capture = memory_remember(actor=self.bob, content=self.CLOSE, workspace="company")
        for thread in started:
            thread.join(10)
        assert not failures, failures
        assert started, "the capture found no neighbour to race with"
        return capture

    def setUp(self) -> None:
        self.alice = member_create(actor=SYSTEM, username="alice")
        self.bob = member_create(actor=SYSTEM, username="bob")
        self.neighbour = memory_remember(actor=self.alice, content=self.TEXT, workspace="company").memory

    def test_a_neighbour_forgotten_meanwhile_is_forgotten_after_the_capture_commits(self) -> None:
        """The forget committed between the capture's search and its commit: the link's
        foreign key failed at commit, a 500, and the capture was lost."""
        capture = self.capture_while(lambda: memory_forget(actor=self.alice, memory_id=self.neighbour.pk))
        assert Memory.objects.filter(pk=capture.memory.pk).exists()
        assert not Memory.objects.filter(pk=self.neighbour.pk).exists()
        assert not MemoryLink.objects.exists()

    def test_a_neighbour_unshared_meanwhile_keeps_no_link_from_the_shared_layer(self) -> None:
        self.capture_while(lambda: memory_share(actor=self.alice, memory_id=self.neighbour.pk, workspace="personal"))
        assert Memory.objects.get(pk=self.neighbour.pk).workspace == "personal"
        assert not MemoryLink.objects.filter(to_memory_id=self.neighbour.pk).exists()
