"""Obsidian and Notion imports and the Obsidian export: real folders, real zips, real services.

A vault folder is built on disk and imported through the management command and through
the REST endpoint (a zip of the same folder, a personal token); the Notion exports are
zips shaped like the ones Notion produces, single and multi-part.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from grants.models import Member
from grants.principals import SYSTEM
from grants.services import member_create
from memory.models import Memory, MemoryLink
from memory.services import memory_link, memory_remember
from memory.tokens import api_token_issue
from memory.vaults import ImportRefused, notion_import, obsidian_files, obsidian_import
from tests.archives import zip_of

pytestmark = pytest.mark.django_db

HOME = "0123456789abcdef0123456789abcdef"
PLAN = "11111111111111111111111111111111"
TASKS = "22222222222222222222222222222222"
PRESS = "33333333333333333333333333333333"
GHOST = "44444444444444444444444444444444"


# --------------------------------------------------------------------------- fixtures and helpers


@pytest.fixture
def alice() -> Member:
    return member_create(actor=SYSTEM, username="alice")


@pytest.fixture
def bob() -> Member:
    return member_create(actor=SYSTEM, username="bob")


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for relative, data in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            target.write_bytes(data)
        else:
            target.write_text(data, encoding="utf-8")


def zip_folder(root: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(root).as_posix())
    return buffer.getvalue()


def api(member: Member, method: str, path: str, body: bytes | None = None) -> Any:
    token = api_token_issue(actor=member, name="cli")[1]
    kwargs: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if body is not None:
        kwargs.update(data=body, content_type="application/zip")
    return getattr(Client(), method)(f"/api/memory/{path}", **kwargs)


def import_folder(folder: Path, member: str = "alice", vault: str = "Vault") -> str:
    out = io.StringIO()
    call_command("brain_memory_vault", "import", str(folder), "--member", member, "--vault", vault, stdout=out)
    return out.getvalue()


def by_origin(member: Member, prefix: str) -> dict[str, Memory]:
    found = Memory.objects.filter(author=member, origin__startswith=prefix)
    return {memory.origin[len(prefix) :]: memory for memory in found}


def explicit_pairs(member: Member) -> set[tuple[str, str]]:
    """(from origin, to origin) of every relates_to link between the member's memories."""
    links = MemoryLink.objects.filter(from_memory__author=member, type="relates_to")
    return {
        (link.from_memory.origin, link.to_memory.origin) for link in links.select_related("from_memory", "to_memory")
    }


def link_count(member: Member) -> int:
    return MemoryLink.objects.filter(from_memory__author=member).count()


VAULT: dict[str, str | bytes] = {
    ".obsidian/app.json": '{"theme": "dark"}',
    ".obsidian/snippets/hidden.md": "# not a note of the vault",
    ".trash/Old idea.md": "# thrown away",
    "attachments/diagram.png": b"\x89PNG\r\n\x1a\nnot really",
    "Home.md": (
        "---\n"
        "tags: [home, index]\n"
        "status: canonical\n"
        "importance: 5\n"
        "cssclass: wide\n"
        "---\n"
        "Welcome to the team notebook #dashboard.\n\n"
        "The current project is [[Projects/Apollo]], also known as [[apollo|the moon project]].\n"
        "Decisions are in [[Meeting 2024-03-01#Decisions]]; the budget lives in [[Missing Note]].\n"
        "![[diagram.png]]\n\n"
        "```\n[[Not A Link]]\n```\n"
    ),
    "Projects/Apollo.md": (
        "---\ntags: 'space, rockets'\naliases: [Moonshot]\n---\n"
        "# Apollo programme\n\nThe Apollo rocket carries three astronauts to lunar orbit. Back to [[Home]].\n"
    ),
    "Archive/Old/Apollo.md": "An older Apollo page about the paper study of 1961, kept for history.\n",
    "Daily/Meeting 2024-03-01.md": (
        "---\ndate: 2024-03-01\nkind: episodic\n---\n"
        "## Decisions\n\nWe met the launch team and agreed the [[Moonshot]] launch window opens in July.\n"
    ),
    "Long.md": "".join(f"Paragraph {n} describes the quarterly supply plan in detail.\n" for n in range(400)),
}


# --------------------------------------------------------------------------- Obsidian


def test_a_vault_folder_imports_notes_tags_and_links_and_reimports_unchanged(tmp_path: Path, alice: Member) -> None:
    folder = tmp_path / "Vault"
    write(folder, VAULT)
    printed = import_folder(folder)
    assert printed.startswith("notes: ")
    notes = by_origin(alice, "obsidian:Vault/")
    assert sorted(notes) == ["Archive/Old/Apollo.md", "Daily/Meeting 2024-03-01.md", "Home.md", "Projects/Apollo.md"]
    home = notes["Home.md"]
    assert home.content.startswith("# Home\n\nWelcome to the team notebook #dashboard.")
    assert {"home", "index", "dashboard"} <= set(home.tags)
    assert (home.source, home.status, home.workspace) == ("obsidian", "canonical", "personal")
    apollo = notes["Projects/Apollo.md"]
    assert apollo.content.startswith("# Apollo programme\n\nThe Apollo rocket")  # its own heading, no second title
    assert {"space", "rockets"} <= set(apollo.tags)
    meeting = notes["Daily/Meeting 2024-03-01.md"]
    assert meeting.kind == "episodic"
    assert meeting.occurred_at is not None
    assert meeting.occurred_at.isoformat() == "2024-03-01T00:00:00+00:00"
    assert notes["Archive/Old/Apollo.md"].content.startswith("# Apollo\n\nAn older Apollo page")
    assert "Long.md" not in notes
    assert "skipped Long.md: over 20,000 characters" in printed
    assert "front matter not imported: cssclass, importance" in printed
    # [[Projects/Apollo]] and [[apollo|…]] are one link (the shortest path wins over Archive/Old/);
    # the heading form resolves; [[Moonshot]] resolves by alias; code and attachments are no links.
    origin = {key: f"obsidian:Vault/{key}" for key in notes}
    expected = {
        (origin["Home.md"], origin["Projects/Apollo.md"]),
        (origin["Home.md"], origin["Daily/Meeting 2024-03-01.md"]),
        (origin["Projects/Apollo.md"], origin["Home.md"]),
        (origin["Daily/Meeting 2024-03-01.md"], origin["Projects/Apollo.md"]),
    }
    assert expected <= explicit_pairs(alice)
    assert (origin["Home.md"], origin["Archive/Old/Apollo.md"]) not in explicit_pairs(alice)
    assert "1 to missing notes" in printed
    links_before = link_count(alice)

    # The same folder, zipped, through the REST endpoint: every note unchanged, no new link.
    again = api(alice, "post", "import/obsidian?vault=Vault", zip_folder(folder))
    assert again.status_code == 200, again.content
    report = again.json()
    assert report["outcomes"] == {"unchanged": 4}
    assert report["links"]["created"] == 0
    assert report["links"]["existing"] == 4
    assert report["links"]["missing"] == 1
    assert report["other_files"] == 1  # the PNG; .obsidian/ and .trash/ are not counted
    assert report["ignored_fields"] == {"cssclass": 1, "importance": 1}
    assert [item["path"] for item in report["skipped"]] == ["Long.md"]
    assert link_count(alice) == links_before
    assert Memory.objects.filter(author=alice).count() == 4

    # One note edited in Obsidian: that memory is updated in place, the others stay.
    write(folder, {"Projects/Apollo.md": str(VAULT["Projects/Apollo.md"]).replace("three", "three brave")})
    edited = import_folder(folder)
    assert "1 updated" in edited
    assert "3 unchanged" in edited
    apollo.refresh_from_db()
    assert "three brave astronauts" in apollo.content
    assert Memory.objects.filter(author=alice).count() == 4


def test_a_note_with_a_secret_or_broken_front_matter_refuses_the_whole_import(tmp_path: Path, alice: Member) -> None:
    folder = tmp_path / "Vault"
    write(folder, {
        "Fine.md": "A perfectly ordinary note about the office plants.",
        "Ops/keys.md": "The deploy user is ci and its key is AKIAIOSFODNN7EXAMPLE.",
        "Broken.md": "---\ntags: [unclosed\n---\nBody.",
    })  # fmt: skip
    with pytest.raises(CommandError, match="2 problem"):
        import_folder(folder)
    assert not Memory.objects.filter(author=alice).exists()  # not even Fine.md
    zipped = api(alice, "post", "import/obsidian?vault=Vault", zip_folder(folder))
    assert zipped.status_code == 400
    problems = zipped.json()["error"]["problems"]
    assert problems[0].startswith("Broken.md: front matter is not valid YAML")
    assert problems[1].startswith("Ops/keys.md: text refused: it contains an AWS access key id")
    assert "AKIAIOSFODNN7EXAMPLE" not in zipped.content.decode()
    assert not Memory.objects.filter(author=alice).exists()
    # A value its YAML type cannot hold was a server error (PyYAML raised ValueError and kin).
    for line in ("date: 2024-02-30", "kind: !!int twelve", "when: !!timestamp soon"):
        odd = api(alice, "post", "import/obsidian?vault=Vault", zip_of({"Vault/Odd.md": f"---\n{line}\n---\nBody."}))
        assert odd.status_code == 400, (line, odd.content)
        assert odd.json()["error"]["problems"] == [
            "Odd.md: front matter is not valid YAML: a value is not what its type says"
            " (a date that does not exist, or a !!tag it does not fit)"
        ]


def test_unsafe_paths_are_refused_not_repaired(alice: Member) -> None:
    unsafe = zip_of({"ok.md": "fine", "../escape.md": "x", "/etc/abs.md": "x", "dir\\win.md": "x", "a/./b.md": "x"})
    answer = api(alice, "post", "import/obsidian?vault=V", unsafe)
    assert answer.status_code == 400
    assert sorted(answer.json()["error"]["problems"]) == [
        "../escape.md: unsafe path (a '..' segment)",
        "/etc/abs.md: unsafe path (absolute)",
        "a/./b.md: unsafe path (an empty or '.' segment)",
        "dir\\win.md: unsafe path (a backslash; paths use /)",
    ]
    # A NUL in a member name (zipfile itself cuts names there, so it is patched into the bytes).
    patched = zip_of({"evilXname.md": "x"}).replace(b"evilXname", b"evil\x00name")
    assert (
        "evil?name.md: unsafe path (a NUL character)"
        in api(alice, "post", "import/obsidian?vault=V", patched).json()["error"]["problems"]
    )
    with pytest.raises(ImportRefused, match="unsafe path"):
        obsidian_import(actor=alice, files={"notes/../../x.md": b"x"}, vault="V")
    assert not Memory.objects.filter(author=alice).exists()


def test_the_export_reimports_into_the_same_account_without_changes(tmp_path: Path, alice: Member) -> None:
    folder = tmp_path / "Vault"
    write(folder, {k: v for k, v in VAULT.items() if k != "Long.md"})
    import_folder(folder)
    typed = memory_remember(actor=alice, content="Standups are at 9:30 on weekdays, in the small room.").memory
    shared = memory_remember(actor=alice, content="We ship releases on Thursdays.", workspace="company").memory
    older = memory_remember(actor=alice, content="Releases used to go out on Mondays.", workspace="company").memory
    memory_link(actor=alice, from_id=shared.pk, to_id=older.pk, type="supersedes")
    before = {memory.pk: (memory.content, memory.tags, memory.status) for memory in Memory.objects.filter(author=alice)}
    links_before = link_count(alice)

    exported = api(alice, "get", "export/obsidian")
    assert exported.status_code == 200
    assert exported["Content-Disposition"] == 'attachment; filename="brain-memories-obsidian.zip"'
    data = b"".join(exported.streaming_content)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = archive.namelist()
        assert len(names) == len(before)
        shared_note = next(name for name in names if name.startswith("company/we-ship-releases-on-thursdays-"))
        text = archive.read(shared_note).decode()
    assert shared_note == f"company/we-ship-releases-on-thursdays-{shared.pk.hex[:8]}.md"
    assert f"brain_id: {shared.pk}" in text
    assert "layer: company" in text
    assert "status: draft" in text
    assert f"- supersedes [[company/releases-used-to-go-out-on-mondays-{older.pk.hex[:8]}]]" in text
    assert f"personal/standups-are-at-930-on-weekdays-in-the-small-room-{typed.pk.hex[:8]}.md" in names

    again = api(alice, "post", "import/obsidian?vault=Export", data)
    assert again.status_code == 200, again.content
    assert again.json()["outcomes"] == {"unchanged": len(before)}
    assert again.json()["links"]["created"] == 0
    after = {memory.pk: (memory.content, memory.tags, memory.status) for memory in Memory.objects.filter(author=alice)}
    assert after == before
    assert link_count(alice) == links_before

    # The management command writes the same notes into a folder.
    target = tmp_path / "out"
    call_command("brain_memory_vault", "export", str(target), "--member", "alice", stdout=io.StringIO())
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*.md")) == sorted(names)
    assert [file.path for file in obsidian_files(alice)] == names


# --------------------------------------------------------------------------- Notion


NOTION: dict[str, str | bytes] = {
    f"Workspace Home {HOME}.md": (
        "# Workspace Home\n\nOwner: Alice\nTags: planning, roadmap\n\n"
        f"This is the team wiki. See [Launch Plan](Workspace%20Home%20{HOME}/Launch%20Plan%20{PLAN}.md) "
        f"and [an old page](Ghost%20Page%20{GHOST}.md).\n"
    ),
    f"Workspace Home {HOME}/Launch Plan {PLAN}.md": (
        "# Launch Plan\n\nStatus: Active\n\nWe launch the product in May with a keynote. "
        f"Back to [Workspace Home](../Workspace%20Home%20{HOME}.md) "
        f"or [on the web](https://www.notion.so/acme/Workspace-Home-{HOME}?pvs=4).\n"
    ),
    f"Workspace Home {HOME}/Tasks {TASKS}.csv": "\ufeffName,Status,Owner\nWrite press release,Done,Alice\n",
    f"Workspace Home {HOME}/Tasks {TASKS}_all.csv": (
        "\ufeffName,Status,Owner\nWrite press release,Done,Alice\nBook venue,In progress,Bob\n"
        "Order catering,Not started,Carol\n"
    ),
    f"Workspace Home {HOME}/Tasks {TASKS}/Write press release {PRESS}.md": (
        "# Write press release\n\nStatus: Done\nOwner: Alice\n\nDraft the press release for the May launch.\n"
    ),
    f"Workspace Home {HOME}/Launch Plan {PLAN}/stage.png": b"\x89PNG\r\n\x1a\nimage",
}


def test_a_notion_export_imports_pages_links_and_rows_and_reimports_unchanged(alice: Member) -> None:
    answer = api(alice, "post", "import/notion", zip_of(NOTION))
    assert answer.status_code == 200, answer.content
    report = answer.json()
    assert sum(report["outcomes"].values()) == 5
    assert not {"unchanged", "duplicate"} & set(report["outcomes"])
    assert report["other_files"] == 1
    assert report["links"]["missing"] == 1
    pages = by_origin(alice, "notion:")
    assert sorted(pages) == sorted([HOME, PLAN, PRESS, *(key for key in pages if key.startswith(f"{TASKS}:row:"))])
    home = pages[HOME]
    assert home.content.startswith("# Workspace Home\n\nOwner: Alice\nTags: planning, roadmap")
    assert {"planning", "roadmap"} <= set(home.tags)
    assert home.source == "notion"
    rows = sorted(memory.content for key, memory in pages.items() if key.startswith(f"{TASKS}:row:"))
    assert rows == [
        "# Book venue\n\nDatabase: Tasks\nStatus: In progress\nOwner: Bob",
        "# Order catering\n\nDatabase: Tasks\nStatus: Not started\nOwner: Carol",
    ]  # the press release row has its own page, imported as the page
    assert {(f"notion:{HOME}", f"notion:{PLAN}"), (f"notion:{PLAN}", f"notion:{HOME}")} <= explicit_pairs(alice)
    links_before = link_count(alice)

    again = notion_import(actor=alice, zip_bytes=zip_of(NOTION))
    assert again.outcomes == {"unchanged": 5}
    assert again.links_created == 0
    # Notion's multi-part form (a zip of "Export-…-Part-1.zip") is the same export: unchanged.
    nested = zip_of({"Export-5e1c0d7a-Part-1.zip": zip_of(NOTION)})
    assert notion_import(actor=alice, zip_bytes=nested).outcomes == {"unchanged": 5}
    assert link_count(alice) == links_before
    assert Memory.objects.filter(author=alice).count() == 5


def test_a_nested_notion_export_imports_for_another_member(bob: Member) -> None:
    half = dict(list(NOTION.items())[:2])
    rest = dict(list(NOTION.items())[2:])
    parts = zip_of({"Export-5e1c-Part-1.zip": zip_of(half), "Export-5e1c-Part-2.zip": zip_of(rest)})
    report = notion_import(actor=bob, zip_bytes=parts)
    assert sum(report.outcomes.values()) == 5
    assert f"notion:{PLAN}" in {memory.origin for memory in Memory.objects.filter(author=bob)}


def test_zip_bombs_and_secrets_in_notion_exports_are_refused(alice: Member) -> None:
    bomb = zip_of({f"Big {HOME}.md": " " * (8 * 1024 * 1024)})
    answer = api(alice, "post", "import/notion", bomb)
    assert answer.status_code == 400
    assert answer.json()["error"]["problems"] == [f"Big {HOME}.md: compressed more than 100:1 (a zip bomb?)"]
    with pytest.raises(ImportRefused, match="a zip bomb"):
        notion_import(actor=alice, zip_bytes=zip_of({"Export-1-Part-1.zip": bomb}))
    leaky = {**NOTION, f"Keys {GHOST}.md": "# Keys\n\naws AKIAIOSFODNN7EXAMPLE"}
    with pytest.raises(ImportRefused) as refused:
        notion_import(actor=alice, zip_bytes=zip_of(leaky))
    assert refused.value.problems == [
        f"Keys {GHOST}.md: text refused: it contains an AWS access key id (credential) on line 3. "
        "Remove the value (keep credentials in a secret manager, not in the brain)."
    ]
    assert not Memory.objects.filter(author=alice).exists()
    assert api(alice, "post", "import/notion", b"not a zip").json()["error"]["problems"] == [
        "the Notion zip is not a valid zip archive"
    ]


# --------------------------------------------------------------------------- the page


def test_the_import_page_uploads_a_zip_and_shows_the_report(alice: Member) -> None:
    client = Client()
    client.force_login(alice.user)
    assert "Import a vault" in client.get("/memory/").content.decode()
    page = client.get("/memory/import/").content.decode()
    assert "Export as Obsidian vault" in page
    upload = io.BytesIO(zip_of(NOTION))
    upload.name = "notion.zip"
    shown = client.post("/memory/import/", {"kind": "notion", "archive": upload, "workspace": "company"})
    assert shown.status_code == 200
    assert "Imported from Notion" in shown.content.decode()
    assert Memory.objects.filter(author=alice, workspace="company").count() == 5
    vault = io.BytesIO(zip_of({"Notes/.obsidian/app.json": "{}", "Notes/Plants.md": "Water the ferns on Fridays."}))
    vault.name = "Notes.zip"
    client.post("/memory/import/", {"kind": "obsidian", "archive": vault})
    assert Memory.objects.get(author=alice, origin="obsidian:Notes/Plants.md").content.startswith("# Plants")
    refused = io.BytesIO(zip_of({"../x.md": "x"}))
    refused.name = "bad.zip"
    answer = client.post(
        "/memory/import/", {"kind": "obsidian", "archive": refused, "vault": "Work", "workspace": "company"}
    )
    assert answer.status_code == 400
    assert "unsafe path" in answer.content.decode()
    # The vault's name (part of every note's key) and its layer come back as chosen.
    shown_again = answer.content.decode()
    assert 'id="vault-name"' in shown_again
    assert 'value="Work"' in shown_again, shown_again[shown_again.find('id="vault-name"') :][:300]
    assert '<option value="company" selected>shared</option>' in shown_again
    download = client.get("/memory/export/obsidian")
    with zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content))) as archive:
        assert len(archive.namelist()) == 6


def test_links_inside_fenced_code_are_not_links_and_an_open_fence_runs_to_the_end() -> None:
    from memory.vaults.obsidian import wiki_targets

    body = "[[A]]\n```python\n[[B]]\n`````\n[[C]] `[[D]]`\n~~~\n[[E]]\n~~~\n[[F]]\n```\n[[G]]"
    assert wiki_targets(body) == ["A", "C", "F"]


def test_a_link_naming_part_of_a_path_resolves_by_lookup_not_by_scanning_every_note() -> None:
    """Each such link scanned every note's path (97 million comparisons for 200 notes of 2,400
    links): a 62 KB vault held a web thread for 90 s. The nearest (shortest) match still wins."""
    from memory.vaults.obsidian import Note, Resolver

    notes = [Note(path=f"area{n}/projects/x/y.md", title="y", body="") for n in range(2000)]
    notes += [Note(path="x/y.md", title="y", body=""), Note(path="deep/er/x/y.md", title="y", body="")]
    notes[0].wiki_targets = ["x/y", "projects/x/y", "er/x/Y.md", "nowhere/y", "y"]  # what the vault links to
    resolver = Resolver(notes)
    # Only the tails a link names are kept (every tail of every path held 332 MB for 1,000
    # notes of 1,000-character paths).
    assert set(resolver.by_tail) == {"x/y", "projects/x/y", "er/x/y"}
    assert resolver.resolve("x/y") == "x/y.md"
    assert resolver.resolve("projects/x/y") == "area0/projects/x/y.md"
    assert resolver.resolve("er/x/Y.md") == "deep/er/x/y.md"
    assert resolver.resolve("nowhere/y") is None
    assert resolver.resolve("y") == "x/y.md"
    resolver.by_path.clear()  # a second resolution of a name is the first one's answer
    assert resolver.resolve("projects/x/y") == "area0/projects/x/y.md"


def test_a_notion_export_over_the_note_limit_is_refused_before_the_rest_is_read(alice: Member) -> None:
    """Every table's rows were planned and every note scanned before the count refused the
    import: a 226 KB zip of 50 tables cost 16 s. Past 5,000 notes it stops at once."""
    from unittest import mock

    from memory.vaults import common

    tables: dict[str, str | bytes] = {
        f"Workspace Home {HOME}/Table{n} {n:032x}.csv": "Name,Owner\n"
        + "".join(f"Row {r},Alice\n" for r in range(2000))
        for n in range(1, 6)
    }
    with (
        mock.patch.object(common, "note_problems", wraps=common.note_problems) as scanned,
        pytest.raises(ImportRefused) as refused,
    ):
        notion_import(actor=alice, zip_bytes=zip_of(tables))
    assert scanned.call_count == 0
    assert refused.value.problems == ["6,000+ notes: an import takes at most 5,000; import the vault in parts"]
    assert not Memory.objects.filter(author=alice).exists()


def test_an_export_of_one_layer_keeps_its_links_when_imported_as_a_zip(alice: Member, bob: Member) -> None:
    """Every entry under personal/: the zip's single top folder was cut, and the links, which
    name it ([[personal/…]]), all went missing — for the same account and for another."""
    newer = memory_remember(actor=alice, content="The office opens at eight from March.").memory
    older = memory_remember(actor=alice, content="The office opened at nine until February.").memory
    memory_link(actor=alice, from_id=newer.pk, to_id=older.pk, type="supersedes")
    data = b"".join(api(alice, "get", "export/obsidian").streaming_content)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert all(name.startswith("personal/") for name in archive.namelist())
    again = api(alice, "post", "import/obsidian?vault=Export", data).json()
    assert again["links"]["missing"] == 0
    elsewhere = api(bob, "post", "import/obsidian?vault=Export", data).json()
    assert elsewhere["links"]["missing"] == 0
    assert elsewhere["links"]["created"] >= 1


def test_exporting_into_a_folder_that_cannot_be_made_is_a_command_error(tmp_path: Path, alice: Member) -> None:
    memory_remember(actor=alice, content="The fern wants water on Mondays.")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(CommandError, match="cannot write the vault"):
        call_command("brain_memory_vault", "export", str(blocker / "vault"), "--member", "alice", stdout=io.StringIO())


def test_a_memory_holding_the_links_marker_reimports_with_its_whole_text(alice: Member) -> None:
    """The import read the first export marker it met as the links block and cut the text
    there: a memory quoting the block ("… More text after it.") lost its end, reported
    "updated". Only a last block of nothing but link lines is links."""
    texts = [
        "Ops checklist.\n\n## Links\n<!-- brain:links -->\n- supersedes [[old]]\nMore text after it.",
        "How our export looks, at the end:\n\n## Links\n<!-- brain:links -->\n- relates_to [[other]]",
    ]
    for text in texts:
        memory_remember(actor=alice, content=text)
    data = b"".join(api(alice, "get", "export/obsidian").streaming_content)
    again = api(alice, "post", "import/obsidian?vault=Export", data).json()
    assert again["outcomes"] == {"unchanged": 2}
    assert sorted(Memory.objects.filter(author=alice).values_list("content", flat=True)) == sorted(texts)
    assert link_count(alice) == 0


def test_an_export_imported_into_another_account_keeps_each_text_and_layer(alice: Member, bob: Member) -> None:
    """A member back after leaving (or in another brain) imports their export: each memory
    came back behind a "# <file name>" line, and every shared one in the personal layer."""
    memory_remember(actor=alice, content="We deploy from the release branch only.", workspace="company")
    memory_remember(actor=alice, content="My standup notes live in the blue notebook.")
    before = sorted(Memory.objects.filter(author=alice).values_list("content", "workspace"))
    data = b"".join(api(alice, "get", "export/obsidian").streaming_content)
    Memory.objects.filter(author=alice).delete()
    assert api(bob, "post", "import/obsidian?vault=Export", data).status_code == 200
    assert sorted(Memory.objects.filter(author=bob).values_list("content", "workspace")) == before
    # A layer the import names wins over the notes' own.
    carol = member_create(actor=SYSTEM, username="carol")
    assert api(carol, "post", "import/obsidian?vault=Export&workspace=personal", data).status_code == 200
    assert set(Memory.objects.filter(author=carol).values_list("workspace", flat=True)) == {"personal"}


def test_a_layer_in_an_ordinary_notes_front_matter_is_not_read(alice: Member) -> None:
    """Only Brain's own export (a note with a brain_id) says where a note lands."""
    obsidian_import(actor=alice, files={"a.md": b"---\nlayer: company\n---\nThe fern wants water."}, vault="V")
    assert Memory.objects.get(author=alice).workspace == "personal"


def test_a_vaults_notes_count_in_the_import_window_on_the_api_and_the_page(
    tmp_path: Path, alice: Member, bob: Member
) -> None:
    """Each note is embedded, as each record of a JSON-lines import is: a vault import used to
    count once (``upload``) however many notes it stored."""
    from django.test import override_settings

    from tests.base import start_of_fresh_rate_window

    def vault(name: str, notes: int) -> bytes:
        return zip_of({f"{name}/note-{i}.md": f"Fact {i} of {name}: the ferns want water." for i in range(notes)})

    start_of_fresh_rate_window()
    with override_settings(BRAIN_MCP_RATE_LIMITS={"import": 3}):
        assert api(alice, "post", "import/obsidian", vault("One", 2)).status_code == 200
        over = api(alice, "post", "import/obsidian", vault("Two", 2))
        assert over.status_code == 429
        assert 1 <= int(over["Retry-After"]) <= 60
        assert over.json()["error"]["code"] == "rate_limited"
        assert not Memory.objects.filter(author=alice, origin__startswith="obsidian:Two/").exists()  # nothing stored
        # A vault larger than the window fills it and runs alone in its minute.
        assert api(bob, "post", "import/obsidian", vault("Big", 5)).status_code == 200
        assert Memory.objects.filter(author=bob, origin__startswith="obsidian:Big/").count() == 5
        client = Client()
        client.force_login(bob.user)
        upload = io.BytesIO(vault("Three", 1))
        upload.name = "Three.zip"
        page = client.post("/memory/import/", {"kind": "obsidian", "archive": upload})
        assert page.status_code == 429
        assert "Too many memories imported this minute" in page.content.decode()
        # The operator's command is not a person's request: no window.
        write(tmp_path, {"Cli/a.md": "Fact a.", "Cli/b.md": "Fact b."})
        import_folder(tmp_path / "Cli", member="bob", vault="Cli")
        assert Memory.objects.filter(author=bob, origin__startswith="obsidian:Cli/").count() == 2
