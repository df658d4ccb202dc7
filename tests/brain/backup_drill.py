"""The data side of the backup drill (``tests/brain/test_backup.py``), run as a child process
against a private ``BRAIN_VAR_DIR`` with the real settings (``brain.settings``).

``python -m tests.brain.backup_drill seed`` migrates, then writes through the services: two
members with grants, a promoted page, a capture with an uploaded original, a personal and a
shared memory, a capsule entry and an encrypted integration secret. It prints the fingerprint
as JSON. ``python -m tests.brain.backup_drill fingerprint`` prints it again (after a restore).

The fingerprint is what a person would check after a restore: pages and their revisions,
memories, grants, captures, the originals' bytes (as sha256), the capsule's ETag and the
capsule check's findings, recall over the restored vectors, and what needs the restored keys
— the integration secret decrypts, a signature made with the secret key is the same, a password
still checks.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

PAGE_PATH = "topics/backup-drill.md"
PAGE_MARKDOWN = """---
type: topic
owner: alice
status: approved
change_policy: gate
as_of: 2026-09-02
title: Backup drill
---

# Backup drill

## Why

Restores are rehearsed: back up, destroy var/, restore, compare.
"""
ORIGINAL_NAME = "drill-notes.md"
ORIGINAL = b"# Drill notes\n\nThe archive holds the database dump, the media and the keys.\n"
SECRET_NAME = "backup_drill"
SECRET_VALUE = "backup-drill-value-42"
PASSWORD = "drill-password-1234"


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "brain.settings")
    import django

    django.setup()


def seed() -> None:
    from django.core.management import call_command

    from builds.services import build_import
    from grants.principals import SYSTEM
    from grants.services import grant_issue, member_create
    from ingest.services import document_ingest, extraction_run
    from integrations.secrets import secret_set
    from memory.services import memory_remember, memory_share

    call_command("migrate", "--noinput", verbosity=0)
    alice = member_create(actor=SYSTEM, username="alice", email="alice@example.com", password=PASSWORD)
    bob = member_create(actor=SYSTEM, username="bob", email="bob@example.com")
    grant_issue(actor=SYSTEM, member=alice, path="topics/", permission="approve")
    grant_issue(actor=SYSTEM, member=alice, path="captures/", permission="suggest")
    grant_issue(actor=SYSTEM, member=bob, path="topics/", permission="read")
    build_import(requester=SYSTEM, approver=SYSTEM, files=[(PAGE_PATH, PAGE_MARKDOWN)], title="Backup drill")
    extraction = document_ingest(actor=alice, filename=ORIGINAL_NAME, data=ORIGINAL, enqueue=False)
    extraction_run(extraction.pk)
    memory_remember(actor=alice, content="Personal: I review backups every Monday.", workspace="personal")
    shared = memory_remember(
        actor=alice, content="The team restores the latest backup once a quarter.", workspace="personal"
    )
    memory_share(actor=alice, memory_id=shared.memory.pk, workspace="company")
    memory_remember(
        actor=alice,
        content="I am Alice, who runs the backup drill.",
        tags=["capsule:core", "capsule-slot:identity", "status:canonical"],
    )
    secret_set(actor=SYSTEM, name=SECRET_NAME, value=SECRET_VALUE)


def fingerprint() -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.core.files.storage import default_storage
    from django.core.signing import Signer

    from corpus.models import Page, Source
    from grants.models import Grant, Member
    from ingest.models import Document
    from integrations.secrets import secret_get
    from memory.capsule_sql import problems
    from memory.capsules import get_capsule
    from memory.models import Memory
    from memory.recall import memory_recall

    alice = Member.objects.get(user__username="alice")
    originals = {}
    for document in Document.objects.order_by("storage_name"):
        with default_storage.open(document.storage_name, "rb") as handle:
            originals[document.storage_name] = hashlib.sha256(handle.read()).hexdigest()
    recall = memory_recall(actor=alice, query="how often do we restore backups", top_k=1, count_recall=False)
    return {
        "members": sorted(Member.objects.values_list("user__username", flat=True)),
        "pages": sorted(
            [page.path, page.current_revision.sha256 if page.current_revision else None]
            for page in Page.objects.select_related("current_revision")
        ),
        "grants": sorted(
            f"{grant.subject_label} | {grant.scope_label} | {grant.permission}" for grant in Grant.objects.all()
        ),
        "sources": sorted(
            [source.key, hashlib.sha256(source.text.encode()).hexdigest()] for source in Source.objects.all()
        ),
        "memories": sorted(
            [memory.author.user.username, memory.workspace, memory.content, sorted(memory.tags), memory.is_capsule]
            for memory in Memory.objects.select_related("author__user")
        ),
        "originals": originals,
        "capsule_etag": get_capsule(member=alice, kind="core").etag,
        "capsule_problems": problems(),
        "recall": [item.memory.content for item in recall.results],
        "recall_degraded": recall.degraded,
        "secret_decrypts": secret_get(SECRET_NAME) == SECRET_VALUE,
        "signature": Signer(salt="backup-drill").sign("drill"),
        "password_checks": get_user_model().objects.get(username="alice").check_password(PASSWORD),
    }


def main(argv: list[str]) -> int:
    _setup()
    if argv[1:] == ["seed"]:
        seed()
    elif argv[1:] != ["fingerprint"]:
        print("usage: python -m tests.brain.backup_drill seed|fingerprint", file=sys.stderr)
        return 2
    print(json.dumps(fingerprint(), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
