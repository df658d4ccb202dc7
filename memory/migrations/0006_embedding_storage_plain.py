from django.db import migrations

# See corpus/migrations/0009_embedding_storage_plain.py: recall scans up to 50k visible
# memories exactly, and an out-of-line vector costs a TOAST fetch per distance.
FORWARD = """
ALTER TABLE memory_memory ALTER COLUMN embedding SET STORAGE PLAIN;
UPDATE memory_memory SET embedding = embedding::real[]::vector WHERE embedding IS NOT NULL;
"""

BACKWARD = "ALTER TABLE memory_memory ALTER COLUMN embedding SET STORAGE EXTERNAL;"


class Migration(migrations.Migration):
    """Keep memory vectors in the row, so exact recall does not read the TOAST table."""

    dependencies = [("memory", "0005_capsule_triggers")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
