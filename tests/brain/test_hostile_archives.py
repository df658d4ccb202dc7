"""Hostile archives at both zip importers (a build's pages, a vault's notes), over REST: names that
are keys, climb out, link elsewhere, or differ only by case or Unicode encoding."""

from __future__ import annotations

import io
import stat
import unicodedata
import zipfile
from typing import Any

import pytest
from django.test import Client

from builds.driver import ArchiveRefused, files_from_zip
from builds.models import Build
from grants.models import Member
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from memory.models import Memory
from memory.tokens import api_token_issue
from tests.base import page_markdown

pytestmark = pytest.mark.django_db

AWS = "AKIAQWERTYUIOPASDFGH"  # AKIA + 16 upper-case letters


def zip_of(files: dict[str, Any], *, symlinks: tuple[str, ...] = ()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if name in symlinks:
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, data)
    return buffer.getvalue()


@pytest.fixture
def alice() -> Member:
    alice = member_create(actor=SYSTEM, username="alice")
    grant_issue(actor=SYSTEM, member=alice, path="topics/", permission="suggest")
    return alice


def build_import(member: Member, data: bytes) -> Any:
    token = api_token_issue(actor=member, name="t", scopes=["corpus:read", "builds:write"])[1]
    upload = io.BytesIO(data)
    upload.name = "pages.zip"
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}").post("/api/v1/builds/import", {"archive": upload})


def vault_import(member: Member, data: bytes) -> Any:
    token = api_token_issue(actor=member, name="v")[1]
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}").post(
        "/api/memory/import/obsidian?vault=V", data=data, content_type="application/zip"
    )


# ----------------------------------------------------------------- obsidian vault import (memories)


def test_vault_refusal_never_echoes_a_secret_in_a_file_name(alice: Member) -> None:
    answer = vault_import(alice, zip_of({f"notes/{AWS}.md": "hello"}))
    assert answer.status_code == 400
    assert AWS not in answer.content.decode(), answer.content  # the background path strips it


def test_vault_unsafe_path_refusal_never_echoes_a_secret(alice: Member) -> None:
    answer = vault_import(alice, zip_of({f"../{AWS}.md": "hello"}))
    assert answer.status_code == 400
    assert AWS not in answer.content.decode(), answer.content


def test_the_same_vault_zipped_on_macos_reimports_unchanged(alice: Member) -> None:
    """macOS zips names decomposed (NFD), Linux/Windows composed (NFC): the same vault, the same notes."""
    notes = {"Café/Réunion.md": "We ship on Thursdays.", "Plan.md": "See [[Réunion]]."}
    first = vault_import(alice, zip_of({unicodedata.normalize("NFC", k): v for k, v in notes.items()}))
    assert first.status_code == 200, first.content
    again = vault_import(alice, zip_of({unicodedata.normalize("NFD", k): v for k, v in notes.items()}))
    assert again.status_code == 200, again.content
    assert again.json()["outcomes"] == {"unchanged": 2}, again.json()["outcomes"]


def test_vault_refuses_names_equal_but_for_case(alice: Member) -> None:
    answer = vault_import(alice, zip_of({"notes/Plan.md": "first", "notes/plan.md": "second"}))
    assert answer.status_code == 400, answer.json()["outcomes"]


def test_vault_refuses_a_symlink_entry(alice: Member) -> None:
    data = zip_of({"notes/a.md": "hello", "notes/l.md": "/etc/passwd"}, symlinks=("notes/l.md",))
    answer = vault_import(alice, data)
    assert answer.status_code == 400, answer.content
    assert not Memory.objects.filter(author=alice).exists()


# ----------------------------------------------------------------- build import (corpus pages)


def test_build_import_refuses_a_symlink_entry(alice: Member) -> None:
    data = zip_of({"topics/link.md": page_markdown(owner="alice", title="link")}, symlinks=("topics/link.md",))
    answer = build_import(alice, data)
    assert 400 <= answer.status_code < 500, answer.content
    assert not Build.objects.exists()


def test_build_import_refuses_unsafe_names_of_entries_it_does_not_import(alice: Member) -> None:
    data = zip_of({"topics/ok.md": page_markdown(owner="alice", title="ok"), "../../etc/cron.d/evil": "x"})
    answer = build_import(alice, data)
    assert 400 <= answer.status_code < 500, answer.content


def test_build_import_does_not_silently_drop_upper_case_md(alice: Member) -> None:
    data = zip_of({"topics/ok.md": page_markdown(owner="alice", title="ok"), "topics/Other.MD": "x"})
    answer = build_import(alice, data)
    assert 400 <= answer.status_code < 500, answer.content


GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_a_key_cut_at_the_shown_length_is_not_half_printed() -> None:
    name = "topics/" + "a" * 180 + "/" + GITHUB_TOKEN + ".MD"  # refused: .MD
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, "x")
    with pytest.raises(ArchiveRefused) as refused:
        files_from_zip(buffer.getvalue())
    assert GITHUB_TOKEN[:10] not in str(refused.value), str(refused.value)


def zip_as_info_zip_writes_it(files: dict[str, str]) -> bytes:
    """A zip whose names are UTF-8 bytes without the UTF-8 flag, as Info-ZIP's ``zip`` writes
    them on Linux (Python's zipfile always sets the flag): each name is written as an ASCII
    stand-in of the same length in bytes, then its bytes are put in place."""
    stand_ins = {name: "n" * len(name.encode()) for name in files}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(stand_ins[name], text)
    data = buffer.getvalue()
    for name, stand_in in stand_ins.items():
        data = data.replace(stand_in.encode(), name.encode())
    return data


def test_names_in_utf8_without_the_flag_are_read_as_written(alice: Member) -> None:
    """zipfile read such names as cp437: "Ärger.md" became "├ärger.md", its title garbled and the
    [[Ärger]] link to it unresolved ("1 to notes not in the import")."""
    data = zip_as_info_zip_writes_it({"Notes/Ärger.md": "Printer jams again.", "Notes/Index.md": "See [[Ärger]]."})
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert "Notes/Ärger.md" not in archive.namelist()  # zipfile's own reading
    answer = vault_import(alice, data)
    assert answer.status_code == 200, answer.content
    report = answer.json()
    assert report["outcomes"] == {"stored": 2}, report
    assert Memory.objects.filter(author=alice, origin="obsidian:V/Ärger.md").exists()  # the vault's folder is its root
    assert report["links"]["created"] == 1, report  # [[Ärger]] found its note
    assert not any("├" in memory.content for memory in Memory.objects.filter(author=alice))
