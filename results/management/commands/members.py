from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from results import services
from results.models import Membership, Project, Role


class Command(BaseCommand):
    help = ("A project's members and their roles (viewer, uploader, maintainer): list them, give a user a role, "
            "or take it away. Staff may do everything in every project without one.")

    def add_arguments(self, parser):
        parser.add_argument("project", help="The project's slug.")
        actions = parser.add_subparsers(dest="action", required=True)
        actions.add_parser("list", help="Every member and role.")
        give = actions.add_parser("set", help="Give a user a role (replacing the one they had).")
        give.add_argument("username")
        give.add_argument("role", choices=Role.values)
        remove = actions.add_parser("remove", help="Take a user's membership away.")
        remove.add_argument("username")

    def handle(self, *args, project: str, action: str, username: str | None = None, role: str | None = None,
               **options):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"no project {project!r}")
        if action == "list":
            for membership in Membership.objects.filter(project=found).select_related("user").order_by("user"):
                self.stdout.write(f"{membership.user.get_username()}\t{membership.role}")
            return
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        services.set_membership(project=found, user=user, role=role if action == "set" else None)
        self.stdout.write(f"{username} is {'now ' + role if action == 'set' else 'no longer a member'} of {project}.")
