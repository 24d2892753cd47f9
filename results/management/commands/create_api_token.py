from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from results import services


class Command(BaseCommand):
    help = "Create an API token for a user and print it (it is shown only once)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("name", help="What the token is for, e.g. 'nightly CI'.")

    def handle(self, *args, username: str, name: str, **options):
        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user {username!r}") from None
        _, token = services.create_api_token(user=user, name=name)
        self.stdout.write(token)
