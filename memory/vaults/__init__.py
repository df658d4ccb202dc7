"""Memories from and to note vaults: Obsidian (folders of Markdown) and Notion exports.

- ``obsidian_import`` — each note of a vault becomes one memory (origin
  ``obsidian:<vault>/<path>``); ``[[wiki links]]`` become links between them.
- ``notion_import`` — each page of a Notion "Markdown & CSV" export zip becomes one memory
  (origin ``notion:<page id>``), its relative links become links, and each database row
  without a page of its own becomes one memory.
- ``obsidian_files`` / ``obsidian_export`` — every memory a member wrote as a vault that
  re-imports into the same account without creating anything (``brain_id`` front matter).

Both imports check every note first (paths, sizes, front matter, the secret detector) and
refuse the whole import, naming every bad note, before anything is stored; then they store
every note through the memory services in one transaction (all or nothing).
"""

from memory.vaults.common import ImportRefused, ImportReport
from memory.vaults.export import obsidian_export, obsidian_files
from memory.vaults.notion import notion_import
from memory.vaults.obsidian import obsidian_import, vault_files_from_folder, vault_files_from_zip

__all__ = [
    "ImportRefused",
    "ImportReport",
    "notion_import",
    "obsidian_export",
    "obsidian_files",
    "obsidian_import",
    "vault_files_from_folder",
    "vault_files_from_zip",
]
