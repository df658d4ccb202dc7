from django.db import migrations

from memory.capsule_sql import UNINSTALL_SQL, install_sql


class Migration(migrations.Migration):
    """Capsule flag and revision triggers, and the partial index over capsule definitions."""

    dependencies = [("memory", "0004_capsules")]
    operations = [migrations.RunSQL(install_sql(), UNINSTALL_SQL)]
