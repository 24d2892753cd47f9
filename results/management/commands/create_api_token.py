from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from results import services
from results.models import Project, TokenScope


class Command(BaseCommand):
    help = ("Create an API token for a user and print it (it is shown only once). It posts runs (scope upload) "
            "unless other scopes are given, to any project the user may write to unless --project names one.")

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("name", help="What the token is for, e.g. 'nightly CI'.")
        parser.add_argument("--project", help="The slug of the one project the token may write to.")
        parser.add_argument("--scope", action="append", choices=TokenScope.values, dest="scopes",
                            help="What the token may do (repeat for several; default: upload).")

    def handle(self, *args, username: str, name: str, project: str | None, scopes: list[str] | None, **options):
        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user {username!r}") from None
        chosen = None
        if project is not None:
            chosen = Project.objects.filter(slug=project).first()
            if chosen is None:
                raise CommandError(f"no project {project!r}")
        try:
            _, token = services.create_api_token(user=user, name=name, project=chosen,
                                                 scopes=scopes or services.DEFAULT_TOKEN_SCOPES)
        except ValidationError as error:
            raise CommandError("; ".join(error.messages)) from None
        self.stdout.write(token)
