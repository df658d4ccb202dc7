from django.db import migrations

# A 384-dimension vector is 1,544 bytes; with a chunk's text beside it the row passes
# PostgreSQL's 2 kB TOAST threshold and the vector (storage EXTERNAL by default) was moved
# out of line. Every exact distance computation then fetched it from the TOAST table: at
# 100k chunks an exact scan of 10k visible chunks took 31 ms in TOAST reads alone, 5 ms
# with the vector in the row. PLAIN keeps it in the row; the text columns are toasted
# instead, and they are read only for the few results. Existing rows are rewritten so
# their vectors move in line (the cast through real[] is exact).
FORWARD = """
ALTER TABLE corpus_chunk ALTER COLUMN embedding SET STORAGE PLAIN;
UPDATE corpus_chunk SET embedding = embedding::real[]::vector;
ALTER TABLE corpus_sourcechunk ALTER COLUMN embedding SET STORAGE PLAIN;
UPDATE corpus_sourcechunk SET embedding = embedding::real[]::vector WHERE embedding IS NOT NULL;
"""

BACKWARD = """
ALTER TABLE corpus_chunk ALTER COLUMN embedding SET STORAGE EXTERNAL;
ALTER TABLE corpus_sourcechunk ALTER COLUMN embedding SET STORAGE EXTERNAL;
"""


class Migration(migrations.Migration):
    """Keep chunk vectors in the row, so exact scans do not read the TOAST table."""

    dependencies = [("corpus", "0008_sourcechunk")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
