from django.db import migrations

APPEND_ONLY = """
CREATE FUNCTION grants_auditevent_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'audit events are append-only (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER grants_auditevent_append_only
    BEFORE UPDATE OR DELETE ON grants_auditevent
    FOR EACH ROW EXECUTE FUNCTION grants_auditevent_append_only();
"""

DROP = """
DROP TRIGGER IF EXISTS grants_auditevent_append_only ON grants_auditevent;
DROP FUNCTION IF EXISTS grants_auditevent_append_only();
"""


class Migration(migrations.Migration):
    """The audit log refuses UPDATE and DELETE at the database, whoever asks."""

    dependencies = [("grants", "0001_initial")]
    operations = [migrations.RunSQL(APPEND_ONLY, DROP)]
