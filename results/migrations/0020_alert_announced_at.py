from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def announced_with_their_group(apps, schema_editor):
    """Alerts of groups already notified were announced then."""
    Alert, AlertGroup = apps.get_model("results", "Alert"), apps.get_model("results", "AlertGroup")
    notified = AlertGroup.objects.filter(pk=OuterRef("group_id")).values("notified_at")
    Alert.objects.filter(group__notified_at__isnull=False).update(announced_at=Subquery(notified))


class Migration(migrations.Migration):

    dependencies = [
        ('results', '0019_environment_match'),
    ]

    operations = [
        migrations.AddField(
            model_name='alert',
            name='announced_at',
            field=models.DateTimeField(blank=True, help_text="When its group's notification named it (every channel done): an alert that joins a group already announced, as the daily scan's do, is announced anew.", null=True),
        ),
        migrations.RunPython(announced_with_their_group, migrations.RunPython.noop),
    ]
