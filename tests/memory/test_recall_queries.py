"""Recall reads each result's author with the results: the queries of a recall do not grow
with the number of memories it answers, on the web page, REST v1 and the legacy API."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.test import Client, TestCase
from django.test.utils import CaptureQueriesContext

from corpus import search as search_module
from grants.principals import SYSTEM
from grants.services import member_create
from memory.recall import memory_recall
from memory.services import memory_link, memory_remember
from memory.tokens import api_token_issue

PLACES = ["north gate", "south pond", "east meadow", "west ridge", "old mill", "river bend", "car park",
          "front lawn", "back garden", "tall oak", "stone bridge", "bus stop", "library steps",
          "market square"]  # fmt: skip


class RecallQueryTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.authors = [member_create(actor=SYSTEM, username=f"writer{number}") for number in range(4)]
        cls.reader = member_create(actor=SYSTEM, username="reader", password="pw-reader-12345")

    def setUp(self) -> None:
        search_module.query_vector_cache.clear()
        self.made = 0
        token = api_token_issue(actor=self.reader, name="cli", scopes=["memory"])[1]
        self.api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
        self.web = Client()
        self.web.force_login(self.reader.user)

    def share(self, n: int) -> None:
        """``n`` shared memories about quokkas, by several authors (each its own author row)."""
        for _ in range(n):
            place = PLACES[self.made]
            author = self.authors[self.made % len(self.authors)]
            self.made += 1
            memory_remember(actor=author, content=f"A quokka was seen at the {place} this morning.",
                            workspace="company", block_duplicates=False)  # fmt: skip

    def measure(self) -> dict[str, tuple[int, int]]:
        """(results, queries) of one recall on each surface."""
        surfaces: dict[str, tuple[Any, str, dict[str, str]]] = {
            "web": (self.web, "/memory/", {"q": "quokka seen"}),
            "rest": (self.api, "/api/v1/memories/recall", {"query": "quokka seen", "topK": "20"}),
            "legacy": (self.api, "/api/memory/recall", {"q": "quokka seen", "topK": "20"}),
        }
        measured = {}
        for name, (client, url, params) in surfaces.items():
            search_module.query_vector_cache.clear()
            with CaptureQueriesContext(connection) as captured:
                response = client.get(url, params)
            assert response.status_code == 200, (name, response.content[:500])
            if name == "web":
                results = response.content.decode().count('class="result"')
            else:
                results = len(response.json()["results"])
            measured[name] = (results, len(captured.captured_queries))
        return measured

    def test_the_queries_of_a_recall_do_not_grow_with_its_results(self) -> None:
        self.share(3)
        self.measure()  # first uses (a token's last-used time) are written once, not per recall
        few = self.measure()
        self.share(9)
        many = self.measure()
        for name in few:
            assert many[name][0] > few[name][0], (name, few[name], many[name])
            assert many[name][1] == few[name][1], (name, few[name], many[name])

    def test_recalled_memories_and_their_linked_neighbours_carry_their_author(self) -> None:
        self.share(4)
        seen = memory_recall(actor=self.reader, query="quokka seen", top_k=1).results[0].memory
        neighbour = memory_remember(actor=self.authors[3], content="The marsupial census closes on Friday.",
                                    workspace="company").memory  # fmt: skip
        memory_link(actor=self.authors[3], from_id=neighbour.pk, to_id=seen.pk)
        found = memory_recall(actor=self.reader, query="quokka seen", top_k=10, hops=1)
        assert any(item.hop == 1 for item in found.results)
        with CaptureQueriesContext(connection) as captured:
            names = {item.memory.author.display_name for item in found.results}
        assert names <= {author.username for author in self.authors}
        assert captured.captured_queries == []
