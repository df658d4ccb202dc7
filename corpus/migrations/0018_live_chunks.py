"""``corpus_livechunk``: the chunks of live pages with their search vectors, kept by the database.

The lexical arm matches here instead of in ``corpus_chunk``: each row carries its revision, so
the caller's visibility is a hash lookup per match rather than an index probe from chunk to
revision (at 100k chunks a query matching 900 chunks spent 8 ms in those probes; docs/search.md,
"Scale"). Like an index it is derived data: two triggers keep it, so every writer (promotion,
retirement, bulk loads, COPY) leaves it true and no Python code writes it.

- a page's current revision set, changed or cleared (or the page deleted): the old revision's
  rows go, the new revision's chunks come in;
- chunks linked to a revision that is already current (a bulk load that creates pages first):
  they come in too.
A revision is current for at most one page (``Page.current_revision`` is one-to-one), so a
revision's rows belong to one page.
"""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
import django.db.models.deletion
from django.db import migrations, models

TRIGGERS = r"""
CREATE FUNCTION brain_livechunk_page() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.current_revision_id IS NOT DISTINCT FROM NEW.current_revision_id THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.current_revision_id IS NOT NULL THEN
        DELETE FROM corpus_livechunk WHERE revision_id = OLD.current_revision_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.current_revision_id IS NOT NULL THEN
        INSERT INTO corpus_livechunk (revision_id, chunk_id, search_vector)
        SELECT rc.revision_id, rc.chunk_id, c.search_vector
          FROM corpus_revisionchunk rc JOIN corpus_chunk c ON c.id = rc.chunk_id
         WHERE rc.revision_id = NEW.current_revision_id;
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER corpus_page_livechunk
    AFTER INSERT OR DELETE OR UPDATE OF current_revision_id ON corpus_page
    FOR EACH ROW EXECUTE FUNCTION brain_livechunk_page();

CREATE FUNCTION brain_livechunk_revisionchunk() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO corpus_livechunk (revision_id, chunk_id, search_vector)
    SELECT n.revision_id, n.chunk_id, c.search_vector
      FROM linked n JOIN corpus_chunk c ON c.id = n.chunk_id
     WHERE EXISTS (SELECT 1 FROM corpus_page p WHERE p.current_revision_id = n.revision_id);
    RETURN NULL;
END;
$$;
CREATE TRIGGER corpus_revisionchunk_livechunk
    AFTER INSERT ON corpus_revisionchunk REFERENCING NEW TABLE AS linked
    FOR EACH STATEMENT EXECUTE FUNCTION brain_livechunk_revisionchunk();

INSERT INTO corpus_livechunk (revision_id, chunk_id, search_vector)
SELECT rc.revision_id, rc.chunk_id, c.search_vector
  FROM corpus_page p
  JOIN corpus_revisionchunk rc ON rc.revision_id = p.current_revision_id
  JOIN corpus_chunk c ON c.id = rc.chunk_id;
"""

DROP_TRIGGERS = r"""
DROP TRIGGER IF EXISTS corpus_revisionchunk_livechunk ON corpus_revisionchunk;
DROP FUNCTION IF EXISTS brain_livechunk_revisionchunk();
DROP TRIGGER IF EXISTS corpus_page_livechunk ON corpus_page;
DROP FUNCTION IF EXISTS brain_livechunk_page();
"""


class Migration(migrations.Migration):
    dependencies = [("corpus", "0017_chunk_vector_may_wait")]

    operations = [
        migrations.CreateModel(
            name="LiveChunk",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("search_vector", django.contrib.postgres.search.SearchVectorField()),
                (
                    "chunk",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="corpus.chunk",
                    ),
                ),
                (
                    "revision",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="corpus.revision"
                    ),
                ),
            ],
            options={
                "indexes": [
                    django.contrib.postgres.indexes.GinIndex(
                        fields=["search_vector"], name="livechunk_search_vector_gin"
                    )
                ],
            },
        ),
        migrations.RunSQL(TRIGGERS, DROP_TRIGGERS),
    ]
