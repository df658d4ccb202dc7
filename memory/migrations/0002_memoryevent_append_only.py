from django.db import migrations

APPEND_ONLY = """
CREATE FUNCTION memory_memoryevent_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'memory events are append-only (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER memory_memoryevent_append_only
    BEFORE UPDATE OR DELETE ON memory_memoryevent
    FOR EACH ROW EXECUTE FUNCTION memory_memoryevent_append_only();
"""

DROP = """
DROP TRIGGER IF EXISTS memory_memoryevent_append_only ON memory_memoryevent;
DROP FUNCTION IF EXISTS memory_memoryevent_append_only();
"""


class Migration(migrations.Migration):
    """A memory's history refuses UPDATE and DELETE at the database."""

    dependencies = [("memory", "0001_initial")]
    operations = [migrations.RunSQL(APPEND_ONLY, DROP)]
