"""Build credentials move to the one shown-once scheme (``brain.bearer``: SHA-256 of the token).

Credentials issued before cannot be checked under the new scheme (they were keyed HMACs),
so the ones still live are revoked: they lived two hours at most, and the requester issues
a new one. The old HMAC values stay in the renamed column, where no presented token's
SHA-256 can match them.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("builds", "0003_branch_captures_and_figures")]

    operations = [
        migrations.RunSQL(
            "UPDATE builds_buildcredential SET revoked_at = now() WHERE revoked_at IS NULL",
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.RenameField("buildcredential", "token_hmac", "token_hash"),
        migrations.AlterField("buildcredential", "token_hash", models.CharField(max_length=64, unique=True)),
        migrations.AlterField("buildcredential", "prefix", models.CharField(max_length=16)),
    ]
