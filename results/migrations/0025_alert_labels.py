# Labels only (no column changes): "Won't fix" capitalised as the other triage statuses; the alert states say what decides them.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('results', '0024_change_point_kind'),
    ]

    operations = [
        migrations.AlterField(
            model_name='alert',
            name='state',
            field=models.CharField(choices=[('suspected', 'suspected: significant, not yet a level: its interval still crosses the band edge, or its nights do not yet differ with their own spread (one night never does)'), ('confirmed', "confirmed: beyond the band (or significant at the series' level with its estimate beyond it), on nights that differ with their own spread"), ('dismissed', 'dismissed: later measurements show no such change')], default='confirmed', max_length=20),
        ),
        migrations.AlterField(
            model_name='alert',
            name='status',
            field=models.CharField(choices=[('new', 'New'), ('acknowledged', 'Acknowledged'), ('invalid', 'Invalid'), ('fixed', 'Fixed'), ('wont_fix', "Won't fix")], default='new', max_length=20),
        ),
        migrations.AlterField(
            model_name='alertevent',
            name='new_status',
            field=models.CharField(choices=[('new', 'New'), ('acknowledged', 'Acknowledged'), ('invalid', 'Invalid'), ('fixed', 'Fixed'), ('wont_fix', "Won't fix")], max_length=20),
        ),
        migrations.AlterField(
            model_name='alertevent',
            name='old_status',
            field=models.CharField(choices=[('new', 'New'), ('acknowledged', 'Acknowledged'), ('invalid', 'Invalid'), ('fixed', 'Fixed'), ('wont_fix', "Won't fix")], max_length=20),
        ),
        migrations.AlterField(
            model_name='incident',
            name='status',
            field=models.CharField(choices=[('new', 'New'), ('acknowledged', 'Acknowledged'), ('invalid', 'Invalid'), ('fixed', 'Fixed'), ('wont_fix', "Won't fix")], default='new', max_length=20),
        ),
    ]
