"""Lexeme statistics for the lexical arm, and ``brain_lexical_query`` reading them.

``corpus_lexemestatistic`` holds exact chunk counts per lexeme over live, ordinary pages
(refreshed on beat by ``corpus.lexemes``); it replaces ANALYZE's most-common-lexeme sample,
which lists about a thousand lexemes, so every rarer word got the same weight.
"""

from django.db import migrations, models

FUNCTION = r"""
DROP FUNCTION IF EXISTS brain_lexical_query(text, float8, integer);
DROP FUNCTION IF EXISTS brain_lexical_query(text, float8, integer, integer);
CREATE FUNCTION brain_lexical_query(query text, common_share float8, common_chunks integer, max_terms integer)
RETURNS TABLE (match tsquery, every tsquery, terms tsquery[], weights float8[])
LANGUAGE plpgsql STABLE ROWS 1 AS $$
DECLARE
    total float8;
BEGIN
    SELECT s.chunks INTO total FROM corpus_lexemestatistic s WHERE s.lexeme = '';
    RETURN QUERY
    WITH lexemes AS (
        SELECT l.lexeme, COALESCE(s.chunks, 0) AS chunks,
               CASE WHEN COALESCE(total, 0) <= 0 THEN 0.001  -- never counted: every term weighs the same
                    ELSE LEAST(GREATEST(COALESCE(s.chunks, 0.5) / total, 1e-9), 0.999) END AS share
          FROM unnest(tsvector_to_array(to_tsvector('english', query))) AS l(lexeme)
          LEFT JOIN corpus_lexemestatistic s ON s.lexeme = l.lexeme
    ), chosen AS (
        SELECT ('''' || replace(replace(x.lexeme, '\', '\\'), '''', '''''') || '''')::tsquery AS term,
               ln(1 + (1 - x.share) / x.share) AS weight, x.share,
               -- Common: in more than common_share of the chunks and more than common_chunks
               -- of them (a small corpus has no common words worth leaving out).
               x.chunks > GREATEST(common_share * COALESCE(total, 0), common_chunks) AS common
          FROM lexemes x
         ORDER BY x.share, x.lexeme
         LIMIT max_terms
    ), ranked AS (
        SELECT c.term, c.weight, c.common, row_number() OVER (ORDER BY c.share, c.term::text) AS n FROM chosen c
    )
    SELECT CASE WHEN bool_or(NOT r.common)
                THEN (SELECT string_agg(r2.term::text, ' | ')::tsquery FROM ranked r2 WHERE NOT r2.common)
                ELSE (SELECT string_agg(r2.term::text, ' & ')::tsquery FROM ranked r2 WHERE r2.n <= 2) END,
           -- every rare term at once: the chunks that hold all of them rank first (AND inside OR)
           COALESCE((SELECT string_agg(r2.term::text, ' & ')::tsquery FROM ranked r2 WHERE NOT r2.common),
                    (SELECT string_agg(r2.term::text, ' & ')::tsquery FROM ranked r2 WHERE r2.n <= 2)),
           array_agg(r.term ORDER BY r.n), array_agg(r.weight ORDER BY r.n)
      FROM ranked r
    HAVING count(*) > 0;
END;
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("corpus", "0015_lexical_query_function")]

    operations = [
        migrations.CreateModel(
            name="LexemeStatistic",
            fields=[
                ("lexeme", models.TextField(primary_key=True, serialize=False)),
                ("chunks", models.IntegerField()),
            ],
        ),
        migrations.RunSQL(FUNCTION, "DROP FUNCTION IF EXISTS brain_lexical_query(text, float8, integer, integer)"),
    ]
