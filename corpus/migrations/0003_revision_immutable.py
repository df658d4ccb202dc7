from django.db import migrations

IMMUTABLE = """
CREATE FUNCTION corpus_revision_immutable() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.path IS DISTINCT FROM OLD.path
           OR NEW.frontmatter IS DISTINCT FROM OLD.frontmatter
           OR NEW.body IS DISTINCT FROM OLD.body
           OR NEW.sha256 IS DISTINCT FROM OLD.sha256
           OR NEW.author_id IS DISTINCT FROM OLD.author_id
           OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
            RAISE EXCEPTION 'revisions are immutable: write a new revision instead'
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF OLD.promoted_at IS NOT NULL AND (NEW.promoted_at IS DISTINCT FROM OLD.promoted_at
           OR NEW.promoted_by_id IS DISTINCT FROM OLD.promoted_by_id) THEN
            RAISE EXCEPTION 'a revision is promoted once'
                USING ERRCODE = 'insufficient_privilege';
        END IF;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER corpus_revision_immutable
    BEFORE UPDATE ON corpus_revision
    FOR EACH ROW EXECUTE FUNCTION corpus_revision_immutable();

CREATE FUNCTION corpus_chunk_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'chunks are content-addressed and never edited'
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER corpus_chunk_immutable
    BEFORE UPDATE ON corpus_chunk
    FOR EACH ROW EXECUTE FUNCTION corpus_chunk_immutable();
"""

DROP = """
DROP TRIGGER IF EXISTS corpus_revision_immutable ON corpus_revision;
DROP FUNCTION IF EXISTS corpus_revision_immutable();
DROP TRIGGER IF EXISTS corpus_chunk_immutable ON corpus_chunk;
DROP FUNCTION IF EXISTS corpus_chunk_immutable();
"""


class Migration(migrations.Migration):
    """Revisions and chunks are never edited in place; the database enforces it."""

    dependencies = [("corpus", "0002_corpus_models")]
    operations = [migrations.RunSQL(IMMUTABLE, DROP)]
