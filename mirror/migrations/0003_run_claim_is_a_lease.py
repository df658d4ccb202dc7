"""The mirror's run claim becomes the row's lease (``brain.leases``): one claim API for every job."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("mirror", "0002_run_claim"),
    ]

    operations = [
        migrations.RenameField(model_name="mirror", old_name="run_token", new_name="lease_token"),
        migrations.RenameField(model_name="mirror", old_name="run_expires_at", new_name="lease_expires_at"),
        migrations.AlterField(
            model_name="mirror", name="lease_token", field=models.UUIDField(blank=True, null=True)
        ),
        migrations.AlterField(
            model_name="mirror", name="lease_expires_at", field=models.DateTimeField(blank=True, null=True)
        ),
        migrations.AddField(model_name="mirror", name="attempts", field=models.PositiveIntegerField(default=0)),
    ]
