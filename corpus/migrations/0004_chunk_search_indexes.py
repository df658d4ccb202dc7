from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations
from pgvector.django import HnswIndex


class Migration(migrations.Migration):
    """The two search indexes on chunks, built without locking writes."""

    atomic = False
    dependencies = [("corpus", "0003_revision_immutable")]
    operations = [
        AddIndexConcurrently(
            model_name="chunk",
            index=HnswIndex(
                name="chunk_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ),
        AddIndexConcurrently(
            model_name="chunk",
            index=GinIndex(name="chunk_search_vector_gin", fields=["search_vector"]),
        ),
    ]
