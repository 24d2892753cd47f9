# "won't fix" reads "Won't fix", as the other triage statuses are capitalised (choices only: no column changes).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('results', '0024_change_point_kind'),
    ]

    operations = [
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
