"""Commits link to the project's forge (issue 16); an alert carries its bug link and who follows it up."""

import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('results', '0008_recompute_variance_of_the_mean'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='alert',
            name='assignee',
            field=models.ForeignKey(blank=True, help_text='Who follows the change up.', null=True,
                                    on_delete=django.db.models.deletion.SET_NULL, related_name='assigned_alerts',
                                    to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='alert',
            name='bug_url',
            field=models.URLField(blank=True, help_text='The issue that follows the change up.', max_length=500,
                                  verbose_name='bug'),
        ),
        migrations.AddField(
            model_name='project',
            name='commit_url_template',
            field=models.CharField(
                blank=True, max_length=500,
                help_text="Where a commit is shown, e.g. https://git.example.org/tool/commit/{commit}; wins over "
                          "the repository URL's host.",
                validators=[django.core.validators.RegexValidator(
                    '^https?://[^\\s]*\\{commit\\}[^\\s]*$',
                    message='An http(s) address containing {commit}, without spaces.')]),
        ),
        migrations.AlterField(
            model_name='project',
            name='repository_url',
            field=models.URLField(blank=True,
                                  help_text='Commits link to it where its host is GitHub, GitLab, Gitea or Codeberg.'),
        ),
    ]
