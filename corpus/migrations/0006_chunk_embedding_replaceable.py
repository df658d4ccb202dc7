from django.db import migrations

REPLACEABLE = """
CREATE OR REPLACE FUNCTION corpus_chunk_immutable() RETURNS trigger AS $$
BEGIN
    -- Content is content-addressed and never edited; only the vector (and the model that
    -- made it) may be replaced, by a re-embedding build after a model change.
    IF NEW.id IS DISTINCT FROM OLD.id
       OR NEW.heading_path IS DISTINCT FROM OLD.heading_path
       OR NEW.body IS DISTINCT FROM OLD.body
       OR NEW.lexical_heading IS DISTINCT FROM OLD.lexical_heading
       OR NEW.lexical_body IS DISTINCT FROM OLD.lexical_body
       OR NEW.cjk_terms IS DISTINCT FROM OLD.cjk_terms
       OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
        RAISE EXCEPTION 'chunks are content-addressed and never edited'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
"""

STRICT = """
CREATE OR REPLACE FUNCTION corpus_chunk_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'chunks are content-addressed and never edited'
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""


class Migration(migrations.Migration):
    """Allow a re-embedding build to replace a chunk's vector; its text stays immutable."""

    dependencies = [("corpus", "0005_source_scope_prefix_index")]
    operations = [migrations.RunSQL(REPLACEABLE, STRICT)]
