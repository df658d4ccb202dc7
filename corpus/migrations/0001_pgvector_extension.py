from django.db import migrations
from pgvector.django import VectorExtension


class Migration(migrations.Migration):
    """Enable pgvector on its own, before any table uses the vector type."""

    initial = True
    dependencies = []
    operations = [VectorExtension()]
