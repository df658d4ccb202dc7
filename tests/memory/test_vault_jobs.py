"""Large vault imports run by a worker: queued by the API and the page, followed, all or nothing.

Transactional tests: the worker writes its progress on a second connection, which sees only
what has committed — as a real worker's does. The worker's part is ``vault_import_run``,
called here as the Celery task calls it.
"""

from __future__ import annotations

import datetime as dt
import io
import uuid
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections
from django.test import Client, override_settings
from django.utils import timezone

from brain.side_connection import side_connection
from grants.models import Member
from grants.principals import SYSTEM
from grants.services import member_create
from memory.models import Memory, VaultImport
from memory.tokens import api_token_issue
from memory.vault_jobs import (
    KEEP_FINISHED,
    KILLED,
    MAX_ATTEMPTS,
    SLOT_LOCK_CLASS,
    TIMED_OUT,
    vault_import_run,
    vault_imports_sweep,
)
from memory.vaults import common

pytestmark = pytest.mark.django_db(transaction=True)

BACKGROUND = override_settings(BRAIN_IMPORT_BACKGROUND_NOTES=3)


@pytest.fixture(autouse=True)
def _background_past_three_notes() -> Iterator[None]:
    with BACKGROUND:
        yield


@pytest.fixture
def alice() -> Member:
    return member_create(actor=SYSTEM, username="alice")


@pytest.fixture
def bob() -> Member:
    return member_create(actor=SYSTEM, username="bob")


FACTS = [
    "The ferns in the meeting room want water every Tuesday.",
    "Invoices above five thousand euros need the finance lead's signature.",
    "The staging database is rebuilt from production every Sunday night.",
    "New starters get their laptop from the front desk on day one.",
    "The office closes at noon on the last Friday of each quarter.",
    "Customer escalations go to the support rota channel, not to email.",
    "Our bicycle shed key hangs behind the reception counter.",
]


def vault(name: str, notes: int, **extra: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for i in range(notes):
            archive.writestr(f"{name}/note-{i}.md", FACTS[i])
        for path, text in extra.items():
            archive.writestr(f"{name}/{path}", text)
    return buffer.getvalue()


def api(member: Member, method: str, path: str, body: bytes | None = None) -> Any:
    token = api_token_issue(actor=member, name="cli")[1]
    kwargs: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if body is not None:
        kwargs.update(data=body, content_type="application/zip")
    return getattr(Client(), method)(f"/api/memory/{path}", **kwargs)


def stored(member: Member, vault_name: str) -> int:
    return Memory.objects.filter(author=member, origin__startswith=f"obsidian:{vault_name}/").count()


def test_a_large_vault_is_queued_then_imported_by_the_worker_with_its_report(alice: Member) -> None:
    queued = api(alice, "post", "import/obsidian", vault("Garden", 5))
    assert queued.status_code == 202
    body = queued.json()
    assert body["state"] == "queued"
    assert body["notes_total"] == 5
    assert body["report"] is None
    assert queued["Location"] == body["url"] == f"/api/memory/imports/{body['id']}"
    assert stored(alice, "Garden") == 0  # nothing until a worker runs it

    assert api(alice, "get", f"imports/{body['id']}").json()["state"] == "queued"
    assert vault_import_run(body["id"]) == "done"

    done = api(alice, "get", f"imports/{body['id']}").json()
    assert done["state"] == "done"
    assert done["notes_done"] == done["notes_total"] == 5
    assert done["report"]["outcomes"] == {"stored": 5}
    assert {note["path"] for note in done["report"]["notes"]} == {f"note-{i}.md" for i in range(5)}
    assert stored(alice, "Garden") == 5
    job = VaultImport.objects.get(pk=body["id"])
    assert bytes(job.archive) == b""
    assert job.finished_at is not None
    # A second run of the same message (redelivered) does nothing.
    assert vault_import_run(body["id"]) == "busy"
    assert stored(alice, "Garden") == 5


def test_progress_is_seen_while_the_import_runs_and_no_memory_before_it_commits(
    alice: Member, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = api(alice, "post", "import/obsidian", vault("Garden", 6)).json()["id"]
    monkeypatch.setattr("memory.vault_jobs.PROGRESS_SECONDS", 0)
    seen: list[tuple[int, int, str, int]] = []
    store_one = common._store_one

    def watched(*args: Any, **kwargs: Any) -> Any:
        outcome = store_one(*args, **kwargs)
        # What anyone else sees meanwhile: the row's progress, and no memory of this import.
        with side_connection() as other, other.cursor() as cursor:
            cursor.execute("SELECT notes_done, notes_total, state FROM memory_vaultimport WHERE id = %s", [job_id])
            done, total, state = cursor.fetchone()
            cursor.execute("SELECT count(*) FROM memory_memory WHERE origin LIKE %s", ["obsidian:Garden/%"])
            seen.append((done, total, state, cursor.fetchone()[0]))
        return outcome

    monkeypatch.setattr(common, "_store_one", watched)
    assert vault_import_run(job_id) == "done"
    assert [row[0] for row in seen] == [0, 1, 2, 3, 4, 5]  # each read comes before that note's own write
    assert all(total == 6 and state == "running" and visible == 0 for _, total, state, visible in seen)
    assert stored(alice, "Garden") == 6


def test_a_refused_import_names_every_problem_and_stores_nothing(alice: Member) -> None:
    secret = "Our deploy key is AKIAIOSFODNN7EXAMPLE with secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY."
    job_id = api(alice, "post", "import/obsidian", vault("Garden", 5, **{"keys.md": secret})).json()["id"]
    assert vault_import_run(job_id) == "refused"
    answer = api(alice, "get", f"imports/{job_id}").json()
    assert answer["state"] == "refused"
    assert answer["report"] is None
    assert any(problem.startswith("keys.md:") for problem in answer["problems"])
    assert stored(alice, "Garden") == 0
    assert bytes(VaultImport.objects.get(pk=job_id).archive) == b""


def test_someone_elses_import_is_not_found_like_a_missing_one(alice: Member, bob: Member) -> None:
    job_id = api(alice, "post", "import/obsidian", vault("Garden", 5)).json()["id"]
    answers = [api(bob, "get", f"imports/{key}") for key in (job_id, uuid.uuid4(), "not-a-uuid")]
    assert {answer.status_code for answer in answers} == {404}
    assert len({answer.json()["error"]["code"] for answer in answers}) == 1
    client = Client()
    client.force_login(bob.user)
    for key in (job_id, uuid.uuid4(), "not-a-uuid"):
        assert client.get(f"/memory/import/{key}/").status_code == 404
    # An administrator reads nobody's import either.
    admin = member_create(actor=SYSTEM, username="root", role="admin")
    assert api(admin, "get", f"imports/{job_id}").status_code == 404


def test_one_import_at_a_time_per_member(alice: Member, bob: Member) -> None:
    assert api(alice, "post", "import/obsidian", vault("One", 5)).status_code == 202
    second = api(alice, "post", "import/obsidian", vault("Two", 5))
    assert second.status_code == 409
    assert "still running" in second.json()["error"]["message"]
    assert api(bob, "post", "import/obsidian", vault("Bobs", 5)).status_code == 202  # others are not held up
    # A small import still answers at once, beside the open one.
    assert api(alice, "post", "import/obsidian", vault("Small", 2)).status_code == 200
    assert VaultImport.objects.filter(member=alice).count() == 1


def test_a_worker_that_lost_its_lease_stores_nothing(alice: Member, monkeypatch: pytest.MonkeyPatch) -> None:
    job_id = api(alice, "post", "import/obsidian", vault("Garden", 5)).json()["id"]
    monkeypatch.setattr("memory.vault_jobs.PROGRESS_SECONDS", 0)
    store_one = common._store_one
    calls = 0

    def taken_over(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:  # another worker claims the row meanwhile (this one looked dead)
            with side_connection() as other, other.cursor() as cursor:
                cursor.execute("UPDATE memory_vaultimport SET lease_token = %s WHERE id = %s", [uuid.uuid4(), job_id])
        return store_one(*args, **kwargs)

    monkeypatch.setattr(common, "_store_one", taken_over)
    assert vault_import_run(job_id) == "lease-lost"
    assert stored(alice, "Garden") == 0
    assert VaultImport.objects.get(pk=job_id).state == "running"  # the new holder's to finish


def test_an_import_over_its_time_fails_at_once_and_one_killed_too_often_fails(
    alice: Member, bob: Member, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Expired(Exception):
        pass

    job_id = api(alice, "post", "import/obsidian", vault("Slow", 5)).json()["id"]

    def too_slow(*args: Any, **kwargs: Any) -> Any:
        raise Expired

    with monkeypatch.context() as patched:
        patched.setattr(common, "_store_one", too_slow)
        assert vault_import_run(job_id, timed_out=(Expired,)) == "failed"
    failed = api(alice, "get", f"imports/{job_id}").json()
    assert failed["state"] == "failed"
    assert failed["error"] == TIMED_OUT
    assert stored(alice, "Slow") == 0

    # Killed mid-run every time: its lease expires, the sweep sends it again, and after
    # MAX_ATTEMPTS claims it fails instead of running for ever.
    killed = api(bob, "post", "import/obsidian", vault("Killed", 5)).json()["id"]
    expired = timezone.now() - dt.timedelta(seconds=1)
    VaultImport.objects.filter(pk=killed).update(
        state="running", attempts=MAX_ATTEMPTS, lease_token=uuid.uuid4(), lease_expires_at=expired
    )
    assert vault_imports_sweep() >= 1
    assert vault_import_run(killed) == "failed"
    assert VaultImport.objects.get(pk=killed).error == KILLED
    assert stored(bob, "Killed") == 0


def test_the_sweep_forgets_finished_imports_after_a_while(alice: Member) -> None:
    job_id = api(alice, "post", "import/obsidian", vault("Old", 5)).json()["id"]
    assert vault_import_run(job_id) == "done"
    VaultImport.objects.filter(pk=job_id).update(finished_at=timezone.now() - KEEP_FINISHED - dt.timedelta(hours=1))
    vault_imports_sweep()
    assert not VaultImport.objects.filter(pk=job_id).exists()
    assert stored(alice, "Old") == 5  # the memories stay


def test_the_page_hands_a_large_zip_to_a_worker_and_follows_it(alice: Member) -> None:
    client = Client()
    client.force_login(alice.user)
    upload = io.BytesIO(vault("Garden", 5))
    upload.name = "Garden.zip"
    answer = client.post("/memory/import/", {"kind": "obsidian", "archive": upload, "workspace": "personal"})
    assert answer.status_code == 302
    job = VaultImport.objects.get(member=alice)
    assert answer["Location"] == f"/memory/import/{job.pk}/"
    waiting = client.get(answer["Location"]).content.decode()
    assert "Waiting for a worker" in waiting
    assert "hx-get" in waiting
    assert "Your large imports" in client.get("/memory/import/").content.decode()

    assert vault_import_run(job.pk) == "done"
    fragment = client.get(answer["Location"], HTTP_HX_REQUEST="true").content.decode()
    assert "hx-get" not in fragment  # finished: the page stops asking
    assert "5 stored" in fragment
    assert "note-4.md" in fragment

    # A second large upload while one is open is refused with the reason; nothing queued.
    VaultImport.objects.filter(pk=job.pk).update(state="queued")
    upload = io.BytesIO(vault("Again", 5))
    upload.name = "Again.zip"
    busy = client.post("/memory/import/", {"kind": "obsidian", "archive": upload})
    assert busy.status_code == 409
    assert "still running" in busy.content.decode()
    assert VaultImport.objects.filter(member=alice).count() == 1


def test_connections_opened_for_progress_are_closed() -> None:
    before = len(connections.all())
    with side_connection() as side, side.cursor() as cursor:
        cursor.execute("SELECT 1")
    assert side.connection is None
    assert len(connections.all()) == before


def test_a_notion_export_is_counted_by_its_table_rows_and_imported_in_the_background(alice: Member) -> None:
    from tests.memory.test_vaults import NOTION, zip_of

    # Three pages and one table of three rows: six notes, past the threshold of three.
    queued = api(alice, "post", "import/notion", zip_of(NOTION))
    assert queued.status_code == 202, queued.content
    assert vault_import_run(queued.json()["id"]) == "done"
    synchronous = api(alice, "get", f"imports/{queued.json()['id']}").json()["report"]
    with override_settings(BRAIN_IMPORT_BACKGROUND_NOTES=200):  # the same export again, in the request
        again = api(alice, "post", "import/notion", zip_of(NOTION)).json()
    assert synchronous["outcomes"] == {"stored": 5}  # 3 pages and 2 rows without a page of their own
    assert set(again["outcomes"]) == {"unchanged"}
    assert synchronous["other_files"] == again["other_files"] == 1  # the attachment, counted not read


def test_only_the_notes_are_kept_for_the_worker_and_bad_zips_are_refused_at_once(alice: Member) -> None:
    picture = bytes(range(256)) * 4096  # 1 MB that does not compress: an attachment
    queued = api(alice, "post", "import/obsidian", vault("Garden", 5, **{"diagram.png": picture}))  # type: ignore[arg-type]
    assert queued.status_code == 202
    job = VaultImport.objects.get(pk=queued.json()["id"])
    assert job.archive_bytes < 10_000  # the notes, and the picture's name only
    assert vault_import_run(job.pk) == "done"
    assert (VaultImport.objects.get(pk=job.pk).report or {})["other_files"] == 1
    # An unsafe entry name is named in the answer, not queued.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for i in range(5):
            archive.writestr(f"V/n{i}.md", FACTS[i])
        archive.writestr("../escape.md", "x")
    refused = api(alice, "post", "import/obsidian", buffer.getvalue())
    assert refused.status_code == 400
    assert any("../escape.md" in problem for problem in refused.json()["error"]["problems"])
    # A zip whose folder cannot name a vault (it names it in every origin) was queued (202),
    # then refused by the worker; it is refused at once, as a quick import is.
    unnamed = api(alice, "post", "import/obsidian", vault("Notes (old)", 5))
    assert unnamed.status_code == 400
    assert "vault must be 1 to 64 letters" in unnamed.json()["error"]["message"]
    assert VaultImport.objects.filter(member=alice).count() == 1


@pytest.mark.parametrize("leaving", ["offboard", "suspend"])
def test_an_import_does_not_outlive_its_persons_offboarding(
    alice: Member, monkeypatch: pytest.MonkeyPatch, leaving: str
) -> None:
    """The offboarding deletes the personal layer; an import still storing must not add to it
    after. A suspension keeps the import's row, which says why nothing was imported."""
    import threading

    from accounts.services import member_offboard, member_suspend
    from grants.services import member_create as create

    admin = create(actor=SYSTEM, username="root", role="admin")
    job_id = api(alice, "post", "import/obsidian", vault("Garden", 5)).json()["id"]
    store_one = common._store_one
    calls = 0

    def offboarded_meanwhile(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            leave = (lambda: member_offboard(actor=admin, member=alice, send_export=False)) if leaving == "offboard" \
                else (lambda: member_suspend(actor=admin, member=alice))  # fmt: skip
            done = threading.Thread(target=leave)
            done.start()
            done.join(30)
        return store_one(*args, **kwargs)

    monkeypatch.setattr(common, "_store_one", offboarded_meanwhile)
    outcome = vault_import_run(job_id)
    assert not Memory.objects.filter(author=alice).exists()
    if leaving == "offboard":
        assert outcome in ("refused", "lease-lost")
        assert not VaultImport.objects.filter(pk=job_id).exists()  # deleted with the personal layer
    else:
        assert outcome == "refused"
        assert VaultImport.objects.get(pk=job_id).problems == [common.GONE]


def test_the_link_phase_keeps_the_lease_alive(alice: Member) -> None:
    """Drawing links takes minutes for a large vault: the worker must not look dead meanwhile."""
    calls: list[tuple[int, int]] = []
    notes = [
        common.PlannedNote(
            key=f"n{i}",
            label=f"n{i}.md",
            origin=f"obsidian:V/n{i}.md",
            content=FACTS[i],
            links=[(f"n{(i + 1) % 4}", "relates_to")],
        )
        for i in range(4)
    ]
    common.store_plan(actor=alice, notes=notes, source="obsidian", workspace=None,
                      report=common.ImportReport(source="obsidian"), progress=lambda *at: calls.append(at))  # fmt: skip
    assert calls[:5] == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
    assert calls[5:] == [(4, 4)] * 4  # once per note's links


def test_imports_take_turns_for_the_workers_slots(alice: Member, bob: Member) -> None:
    first = api(alice, "post", "import/obsidian", vault("Garden", 5)).json()["id"]
    with side_connection() as holder, holder.cursor() as cursor:  # another worker's running import
        cursor.execute("SELECT pg_advisory_lock(%s, 0)", [SLOT_LOCK_CLASS])
        before = VaultImport.objects.get(pk=first).updated_at
        assert vault_import_run(first) == "waiting"
        waiting = VaultImport.objects.get(pk=first)
        assert waiting.state == "queued"
        assert waiting.updated_at > before  # touched: the sweep does not send it again meanwhile
        assert waiting.attempts == 0
    assert vault_import_run(first) == "done"  # the slot is free once that connection closed


def test_a_secret_in_a_file_name_is_not_kept_in_the_problems(alice: Member) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    job_id = api(alice, "post", "import/obsidian", vault("Garden", 5, **{f"{token}.md": "A note."})).json()["id"]
    assert vault_import_run(job_id) == "refused"
    problems = VaultImport.objects.get(pk=job_id).problems
    assert problems
    assert not any(token in problem for problem in problems)


def test_a_polled_import_that_is_gone_stops_the_polling(alice: Member) -> None:
    client = Client()
    client.force_login(alice.user)
    gone = client.get(f"/memory/import/{uuid.uuid4()}/", HTTP_HX_REQUEST="true")
    assert gone.status_code == 286  # htmx: stop polling
    assert client.get(f"/memory/import/{uuid.uuid4()}/").status_code == 404


def test_offboarding_deletes_the_persons_imports_queued_and_finished(alice: Member) -> None:
    """A queued import holds the person's notes and a finished one their notes' names: both
    are the personal layer, deleted with it, not kept for the 30 days finished rows live."""
    from accounts.services import member_offboard
    from grants.services import member_create as create

    finished = api(alice, "post", "import/obsidian", vault("Garden", 5)).json()["id"]
    assert vault_import_run(finished) == "done"
    queued = api(alice, "post", "import/obsidian", vault("Orchard", 5)).json()["id"]
    member_offboard(actor=create(actor=SYSTEM, username="root", role="admin"), member=alice, send_export=False)
    assert not VaultImport.objects.filter(pk__in=[finished, queued]).exists()
    assert vault_import_run(queued) != "done"  # its message still in the queue finds nothing to run
    assert not Memory.objects.filter(author=alice, workspace="personal").exists()
