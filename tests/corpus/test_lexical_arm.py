"""The lexical arm: any rare query word matches, rarer and more words rank higher, operators hold."""

from __future__ import annotations

from corpus.lexemes import lexeme_statistics_refresh
from corpus.models import LexemeStatistic
from corpus.search import search
from tests.base import DISCOUNT_POLICY, BrainTestCase, publish


class LexicalArmTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        publish("topics/backup.md", title="Backups", body="# Backups\n\nNightly pg_dump archives go to cold storage.\n")
        publish("topics/restore.md", title="Restore", body="# Restore\n\nA restore reads the archives back.\n")
        for number in range(6):  # "team" is in every one of these: common, so it weighs little
            publish(f"topics/team-{number}.md", title=f"Team {number}", body=f"# Team {number}\n\nThe team meets.\n")
        publish(DISCOUNT_POLICY, title="Discount policy", sensitivity="restricted",
                body="# Discount policy\n\nZanzibar discounts need the commercial lead.\n")  # fmt: skip
        lexeme_statistics_refresh(force=True)

    def lexical(self, query: str, **kwargs: object) -> list[str]:
        response = search(principal=self.alice, query=query, arms=("lexical",), per_page=1, **kwargs)  # type: ignore[arg-type]
        return [result.path for result in response.results]

    def test_a_long_question_finds_a_page_holding_only_some_of_its_words(self) -> None:
        question = "how does the team get nightly archives back after losing a server"
        assert self.lexical(question, lexical_mode="and") == []  # every word: nothing holds them all
        found = self.lexical(question)
        assert set(found[:2]) == {"topics/backup.md", "topics/restore.md"}  # rare words outrank "team"

    def test_quotes_and_exclusions_keep_their_meaning(self) -> None:
        assert self.lexical('"cold storage"') == ["topics/backup.md"]
        assert "topics/restore.md" not in self.lexical("archives -restore")

    def test_restricted_pages_do_not_shape_the_statistics(self) -> None:
        counted = set(LexemeStatistic.objects.values_list("lexeme", flat=True))
        assert "night" in counted  # "nightly", stemmed
        assert "zanzibar" not in counted  # a restricted page's words are never counted
        assert LexemeStatistic.objects.get(lexeme="").chunks > 0
        assert lexeme_statistics_refresh() is None  # nothing changed: nothing recounted
        publish("topics/new.md", title="New", body="# New\n\nFresh words.\n")
        assert lexeme_statistics_refresh() is not None
        # An edit that keeps the number of chunks: recounted too (the total alone missed it).
        publish("topics/new.md", title="New", body="# New\n\nQuokka words.\n")
        assert lexeme_statistics_refresh() is not None
        counted = set(LexemeStatistic.objects.values_list("lexeme", flat=True))
        assert "quokka" in counted
        assert "fresh" not in counted
