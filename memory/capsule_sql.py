"""The database side of prompt capsules: the capsule flag, the revision triggers, the index.

``memory.capsule_sql.install`` (the migration) and ``check_and_repair`` (start-up, the
``capsules_check`` command) use the same definitions, so what is installed can be
compared with what is expected. A capsule-tagged insert, a content/tag/id/status/author
update, a workspace move or a delete advances the layer's revision in the same
transaction; writes to ordinary memories (and recall counters) do not.
"""

from __future__ import annotations

from django.db import connection, transaction

FLAG_BODY = """
BEGIN
    NEW.is_capsule := EXISTS (
        SELECT 1 FROM unnest(NEW.tags) AS t(tag) WHERE t.tag LIKE 'capsule:%' OR t.tag LIKE 'capsule-slot:%'
    );
    RETURN NEW;
END;
"""

ADVANCE_BODY = """
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.is_capsule THEN
            PERFORM memory_capsule_bump(memory_capsule_layer(NEW.workspace, NEW.author_id));
        END IF;
    ELSIF TG_OP = 'DELETE' THEN
        IF OLD.is_capsule THEN
            PERFORM memory_capsule_bump(memory_capsule_layer(OLD.workspace, OLD.author_id));
        END IF;
    ELSIF (OLD.is_capsule OR NEW.is_capsule) AND (
            OLD.content IS DISTINCT FROM NEW.content OR OLD.tags IS DISTINCT FROM NEW.tags
            OR OLD.id IS DISTINCT FROM NEW.id OR OLD.workspace IS DISTINCT FROM NEW.workspace
            OR OLD.status IS DISTINCT FROM NEW.status OR OLD.author_id IS DISTINCT FROM NEW.author_id) THEN
        PERFORM memory_capsule_bump(memory_capsule_layer(OLD.workspace, OLD.author_id));
        IF memory_capsule_layer(NEW.workspace, NEW.author_id) <> memory_capsule_layer(OLD.workspace, OLD.author_id) THEN
            PERFORM memory_capsule_bump(memory_capsule_layer(NEW.workspace, NEW.author_id));
        END IF;
    END IF;
    RETURN NULL;
END;
"""

LAYER_BODY = """
    SELECT CASE WHEN workspace = 'company' THEN 'company' ELSE 'personal:' || author END
"""

BUMP_BODY = """
    INSERT INTO prompt_capsule_revisions (layer, revision, updated_at)
    VALUES (layer, replace(gen_random_uuid()::text, '-', ''), now())
    ON CONFLICT (layer) DO UPDATE SET revision = EXCLUDED.revision, updated_at = EXCLUDED.updated_at
"""

FUNCTIONS = {
    "memory_capsule_layer": f"CREATE OR REPLACE FUNCTION memory_capsule_layer(workspace text, author bigint) "
    f"RETURNS text AS $body${LAYER_BODY}$body$ LANGUAGE sql IMMUTABLE",
    "memory_capsule_bump": f"CREATE OR REPLACE FUNCTION memory_capsule_bump(layer text) "
    f"RETURNS void AS $body${BUMP_BODY}$body$ LANGUAGE sql",
    "memory_capsule_flag": f"CREATE OR REPLACE FUNCTION memory_capsule_flag() "
    f"RETURNS trigger AS $body${FLAG_BODY}$body$ LANGUAGE plpgsql",
    "memory_capsule_advance": f"CREATE OR REPLACE FUNCTION memory_capsule_advance() "
    f"RETURNS trigger AS $body${ADVANCE_BODY}$body$ LANGUAGE plpgsql",
}
BODIES = {
    "memory_capsule_layer": LAYER_BODY,
    "memory_capsule_bump": BUMP_BODY,
    "memory_capsule_flag": FLAG_BODY,
    "memory_capsule_advance": ADVANCE_BODY,
}
TRIGGERS = {
    "memory_capsule_flag": "CREATE TRIGGER memory_capsule_flag BEFORE INSERT OR UPDATE ON memory_memory "
    "FOR EACH ROW EXECUTE FUNCTION memory_capsule_flag()",
    "memory_capsule_advance": "CREATE TRIGGER memory_capsule_advance AFTER INSERT OR UPDATE OR DELETE ON memory_memory "
    "FOR EACH ROW EXECUTE FUNCTION memory_capsule_advance()",
}
TRIGGER_TIMING = {
    "memory_capsule_flag": "BEFORE INSERT OR UPDATE",
    "memory_capsule_advance": "AFTER INSERT OR DELETE OR UPDATE",
}
INDEX_NAME = "memory_capsule_entries"
INDEX = f"CREATE INDEX {INDEX_NAME} ON memory_memory (workspace, author_id) WHERE is_capsule"


def install_sql() -> str:
    return ";\n".join([*FUNCTIONS.values(), *TRIGGERS.values(), INDEX]) + ";"


UNINSTALL_SQL = """
DROP TRIGGER IF EXISTS memory_capsule_advance ON memory_memory;
DROP TRIGGER IF EXISTS memory_capsule_flag ON memory_memory;
DROP INDEX IF EXISTS memory_capsule_entries;
DROP FUNCTION IF EXISTS memory_capsule_advance();
DROP FUNCTION IF EXISTS memory_capsule_flag();
DROP FUNCTION IF EXISTS memory_capsule_bump(text);
DROP FUNCTION IF EXISTS memory_capsule_layer(text, bigint);
"""


def problems() -> list[str]:
    """What differs between the installed capsule machinery and the expected one."""
    found: list[str] = []
    with connection.cursor() as cursor:
        for name, body in BODIES.items():
            cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = %s", [name])
            row = cursor.fetchone()
            if row is None or row[0].strip() != body.strip():
                found.append(f"function {name}")
        for name, timing in TRIGGER_TIMING.items():
            cursor.execute(
                "SELECT pg_get_triggerdef(t.oid), t.tgenabled FROM pg_trigger t "
                "JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relname = 'memory_memory' AND t.tgname = %s",
                [name],
            )
            row = cursor.fetchone()
            if row is None or row[1] != "O" or timing not in row[0] or f"EXECUTE FUNCTION {name}()" not in row[0]:
                found.append(f"trigger {name}")
        cursor.execute(
            "SELECT pg_get_expr(i.indpred, i.indrelid), i.indisvalid, pg_get_indexdef(i.indexrelid) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = %s",
            [INDEX_NAME],
        )
        row = cursor.fetchone()
        if row is None or row[0] != "is_capsule" or not row[1] or "(workspace, author_id)" not in row[2]:
            found.append(f"index {INDEX_NAME}")
    return found


def check_and_repair() -> list[str]:
    """Reinstall whatever is missing or changed, atomically with a rotation of every revision.

    Returns what was repaired (empty when all was in place). Rotating the revisions means
    nothing cached while the machinery was broken can be served again.
    """
    broken = problems()
    if not broken:
        return []
    index = [
        # Deferred foreign-key checks pending in this transaction would block CREATE INDEX.
        "SET CONSTRAINTS ALL IMMEDIATE",
        f"DROP INDEX IF EXISTS {INDEX_NAME}",
        INDEX,
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        for statement in [
            "DROP TRIGGER IF EXISTS memory_capsule_advance ON memory_memory",
            "DROP TRIGGER IF EXISTS memory_capsule_flag ON memory_memory",
            *FUNCTIONS.values(),
            *TRIGGERS.values(),
            *(index if f"index {INDEX_NAME}" in broken else []),
            # Flags may be stale if the flag trigger was missing while tags changed.
            "UPDATE memory_memory SET tags = tags WHERE is_capsule OR array_to_string(tags, ' ') LIKE '%capsule%'",
            "UPDATE prompt_capsule_revisions"
            " SET revision = replace(gen_random_uuid()::text, '-', ''), updated_at = now()",
        ]:
            cursor.execute(statement)
    return broken
