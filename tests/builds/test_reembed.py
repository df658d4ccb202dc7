"""A model change is followed by a re-embedding build: vectors replaced, text untouched."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.db import DatabaseError, transaction

from brain import embeddings
from builds.driver import job_step, reembed_job_create
from builds.models import Build, BuildJob, Promotion
from corpus.models import Chunk
from tests.base import BrainTestCase, publish


class ReembedTests(BrainTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        publish("topics/a.md", body="# A\n\n## One\n\nFirst.\n\n## Two\n\nSecond.\n")
        publish("topics/b.md", body="# B\n\nThird.\n")

    def test_stale_vectors_are_replaced_and_recorded(self) -> None:
        stale = list(Chunk.objects.values_list("id", flat=True)[:2])
        Chunk.objects.filter(id__in=stale).update(embedding_model="old-model")
        build = reembed_job_create(requester=self.charlie)
        job = BuildJob.objects.get(build=build)
        while job_step(job.pk) == "progress":
            pass
        build.refresh_from_db()
        assert build.status == Build.Status.PROMOTED
        assert not Chunk.objects.exclude(embedding_model=embeddings.model_id()).exists()
        assert "re-embedded 2 chunk vectors" in Promotion.objects.get(build=build).note

    def test_only_administrators_and_text_stays_immutable(self) -> None:
        with pytest.raises(PermissionDenied):
            reembed_job_create(requester=self.alice)
        with pytest.raises(DatabaseError), transaction.atomic():
            Chunk.objects.update(body="edited")
