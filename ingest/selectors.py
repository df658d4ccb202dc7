"""Reads of uploads, always under the caller's grants."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import OuterRef, Subquery

from corpus.models import Source
from grants.models import Member
from ingest.models import Document, Extraction


@dataclass(frozen=True)
class UploadRow:
    key: str
    title: str
    filename: str
    size: int
    uploaded_at: datetime
    status: str
    error: str


UPLOADS_LISTED = 100  # the newest uploads the page lists


def uploads_count(*, member: Member) -> int:
    """How many uploads ``uploads_of`` would list without its limit."""
    return Document.objects.filter(uploaded_by=member, source__in=Source.objects.visible_to(member, "read")).count()


def uploads_of(*, member: Member, limit: int = UPLOADS_LISTED) -> list[UploadRow]:
    """``member``'s own uploads whose capture they can still read, newest first, with the
    latest extraction's status joined in (one query)."""
    latest = Extraction.objects.filter(document=OuterRef("pk")).order_by("-created_at", "-id")
    documents = (
        Document.objects.filter(uploaded_by=member, source__in=Source.objects.visible_to(member, "read"))
        .select_related("source")
        .annotate(status=Subquery(latest.values("status")[:1]), error=Subquery(latest.values("error")[:1]))
        .order_by("-created_at", "-id")[:limit]
    )
    return [
        UploadRow(
            key=document.source.key,
            title=document.source.title,
            filename=document.filename,
            size=document.size,
            uploaded_at=document.created_at,
            status=document.status or "",  # type: ignore[attr-defined]
            error=document.error or "",  # type: ignore[attr-defined]
        )
        for document in documents
    ]
