"""The question's lease becomes brain.leases.LeasedJob's: an expiry under its common name and a token."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("answers", "0002_question_credentials")]

    operations = [
        migrations.RenameField(model_name="question", old_name="lease_until", new_name="lease_expires_at"),
    ]
