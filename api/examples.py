"""Examples in the OpenAPI document: one request and/or answer for each main operation.

Values are illustrative (the demo's own pages and people); ids are made-up UUIDs.
"""

from __future__ import annotations

from typing import Any

MEMORY_ID = "0b8e6f4e-6d3c-4f0a-9a51-2f1d3c7e9b10"
OTHER_ID = "5c1a9d22-8e7b-4b6f-a0c4-1e2d3f4a5b6c"
BUILD_ID = "9f3c2a1e-4b5d-4c6e-8f7a-0b1c2d3e4f5a"

MEMORY = {
    "id": MEMORY_ID,
    "content": "We ship on Thursdays.",
    "tags": ["release", "status:canonical"],
    "workspace": "company",
    "author": "alice",
    "status": "canonical",
    "importance": 3,
    "kind": "semantic",
    "volatility": "durable",
    "source": "",
    "created_at": "2026-11-30T09:12:00+00:00",
    "updated_at": "2026-11-30T09:12:00+00:00",
}

# operation id -> {"request": body, "response": answer}
EXAMPLES: dict[str, dict[str, Any]] = {
    "remember": {
        "request": {"content": "We ship on Thursdays.", "tags": ["release"], "workspace": "company"},
        "response": {
            "id": MEMORY_ID,
            "outcome": "stored",
            "workspace": "company",
            "status": "draft",
            "tags": ["release", "status:draft"],
            "similarity": None,
            "duplicate_of": None,
            "links": [],
        },
    },
    "update": {"request": {"content": "We ship on Fridays.", "tags": ["release"]}, "response": MEMORY},
    "append": {"request": {"text": "Moved to Fridays from December."}, "response": MEMORY},
    "set_status": {"request": {"status": "canonical"}, "response": MEMORY},
    "share": {"request": {"workspace": "company"}, "response": {"id": MEMORY_ID, "message": "Shared to company."}},
    "link": {"request": {"from_id": MEMORY_ID, "to_id": OTHER_ID, "type": "caused_by"}},
    "get": {"response": MEMORY},
    "list_memories": {"response": {"results": [MEMORY], "next": None, "previous": None}},
    "recall": {"response": {"results": [{**MEMORY, "score": 0.82, "similarity": 0.79, "hop": 0}], "degraded": False}},
    "read_page": {
        "response": {
            "path": "topics/pricing/discounts.md",
            "title": "Discounts",
            "type": "topic",
            "owner": "alice",
            "status": "approved",
            "change_policy": "gate",
            "category": "pricing",
            "sensitivity": "ordinary",
            "as_of": "2026-09-02",
            "sources": ["gdrive/2026-01-15-northwind-msa"],
            "related": [],
            "body": "# Discounts\n\nUp to 12% without escalation; above that the finance lead approves.\n",
            "revision_sha256": "3f5e…",
            "promoted_by": "erin",
            "promoted_at": "2026-09-02T10:00:00+00:00",
        }
    },
    "search": {
        "response": {
            "results": [
                {
                    "path": "topics/pricing/discounts.md",
                    "title": "Discounts",
                    "heading_path": "Discounts",
                    "snippet": "above that the finance lead approves",
                    "score": 0.031,
                    "semantic_rank": 1,
                    "lexical_rank": 2,
                }
            ],
            "degraded": False,
        }
    },
    "ask": {
        "request": {"question": "Who approves a discount above 12%?"},
        "response": {"question_id": 42, "status": "queued"},
    },
    "await_answer": {
        "response": {
            "question_id": 42,
            "status": "answered",
            "answer": "The finance lead approves discounts above 12%.",
            "citations": ["topics/pricing/discounts.md#discounts"],
            "refusal_reason": "",
            "refusal_pages": [],
        }
    },
    "tag_source": {
        "request": {"add": ["contract"], "remove": []},
        "response": {"key": "gdrive/2026-01-15-northwind-msa", "tags": ["contract"]},
    },
    "open_build": {
        "request": {"title": "Raise the team plan price", "purpose": "Finance approved 14 EUR a seat."},
        "response": {
            "id": BUILD_ID,
            "title": "Raise the team plan price",
            "status": "open",
            "credential": "bld_…shown once…",
            "credential_expires_at": "2026-12-01T12:00:00+00:00",
            "mcp_url": "https://brain.example.org/api/build/mcp",
        },
    },
    "submit_for_review": {"response": {"status": "awaiting_review"}},
    "count_memories": {"response": {"count": 128}},
}
