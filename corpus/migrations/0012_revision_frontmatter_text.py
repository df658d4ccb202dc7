from django.db import migrations, models

# The immutability trigger now covers the frontmatter as written too.
IMMUTABLE = """
CREATE OR REPLACE FUNCTION corpus_revision_immutable() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.path IS DISTINCT FROM OLD.path
           OR NEW.frontmatter IS DISTINCT FROM OLD.frontmatter
           OR NEW.frontmatter_text IS DISTINCT FROM OLD.frontmatter_text
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
"""

PREVIOUS = """
CREATE OR REPLACE FUNCTION corpus_revision_immutable() RETURNS trigger AS $$
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
"""


class Migration(migrations.Migration):
    """Keep each revision's frontmatter exactly as its author wrote it (shown in review)."""

    dependencies = [("corpus", "0011_drop_duplicate_chunk_index")]

    operations = [
        migrations.AddField(
            model_name="revision",
            name="frontmatter_text",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.RunSQL(IMMUTABLE, PREVIOUS),
    ]
