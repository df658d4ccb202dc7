"""``brain_lexical_query``: the lexical arm's terms and their weights, inside the search statement.

Reads the query's English lexemes, weighs each by BM25's inverse document frequency from
PostgreSQL's own statistics of ``corpus_chunk.search_vector`` (ANALYZE's most common lexemes;
a lexeme not listed is rarer than the least common listed), and returns: the tsquery a chunk
must match (any term found in at most ``common_share`` of chunks; when every term is common,
the two rarest together), the terms (at most ``max_terms``, rarest first) and their weights.
Table-wide statistics by design: a sample's frequency of a common word says nothing about any
one page, while a per-caller count would cost a scan per term per query.
"""

from django.db import migrations

FUNCTION = r"""
CREATE OR REPLACE FUNCTION brain_lexical_query(query text, common_share float8, max_terms integer)
RETURNS TABLE (match tsquery, terms tsquery[], weights float8[])
LANGUAGE plpgsql STABLE AS $$
DECLARE
    elems text[];
    freqs real[];
    floor_share float8 := 0.001;
BEGIN
    SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs INTO elems, freqs
      FROM pg_stats s
     WHERE s.schemaname = current_schema() AND s.tablename = 'corpus_chunk' AND s.attname = 'search_vector';
    IF freqs IS NOT NULL AND array_length(freqs, 1) >= 3 THEN
        -- The last three numbers are the least and greatest frequency and the null share.
        floor_share := freqs[array_length(freqs, 1) - 2];
    END IF;
    RETURN QUERY
    WITH lexemes AS (
        SELECT l.lexeme,
               LEAST(GREATEST(COALESCE(freqs[array_position(elems, l.lexeme)], floor_share / 2), 1e-6), 0.999) AS share
          FROM unnest(tsvector_to_array(to_tsvector('english', query))) AS l(lexeme)
    ), chosen AS (
        SELECT ('''' || replace(replace(x.lexeme, '\', '\\'), '''', '''''') || '''')::tsquery AS term,
               ln(1 + (1 - x.share) / x.share) AS weight, x.share
          FROM lexemes x
         ORDER BY x.share, x.lexeme
         LIMIT max_terms
    ), ranked AS (
        SELECT c.term, c.weight, c.share, row_number() OVER (ORDER BY c.share, c.term::text) AS n FROM chosen c
    )
    SELECT CASE WHEN bool_or(r.share <= common_share)
                THEN (SELECT string_agg(r2.term::text, ' | ')::tsquery FROM ranked r2 WHERE r2.share <= common_share)
                ELSE (SELECT string_agg(r2.term::text, ' & ')::tsquery FROM ranked r2 WHERE r2.n <= 2) END,
           array_agg(r.term ORDER BY r.n), array_agg(r.weight ORDER BY r.n)
      FROM ranked r
    HAVING count(*) > 0;
END;
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("corpus", "0014_source_updated_at")]

    operations = [
        migrations.RunSQL(FUNCTION, "DROP FUNCTION IF EXISTS brain_lexical_query(text, float8, integer)"),
    ]
