"""The extraction's lease becomes brain.leases.LeasedJob's: an expiry under its common name and a token."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("ingest", "0002_document_sha256_not_unique")]

    operations = [
        migrations.RenameField(model_name="extraction", old_name="lease_until", new_name="lease_expires_at"),
    ]
