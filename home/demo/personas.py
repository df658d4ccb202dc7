"""The demo people and what each may do: plain data, shared by ``demo_seed`` (which creates
them), the ``make run`` banner (imported before Django is set up) and the README."""

from __future__ import annotations

PERSONAS: list[tuple[str, str]] = [
    ("admin", "owner: administers everything, reads no page (administering is not content access)"),
    ("charlie", "admin: administers people and grants, reads no page"),
    ("alice", "reads topics/; approves topics/pricing/ and the restricted discount policy; suggests captures"),
    ("erin", "reads topics/; approves topics/pricing/ (reviews what alice proposes)"),
    ("bob", "reads topics/ and the tickets captures"),
    ("dana", "engineering group: approves engineering/, reads topics/"),
]
