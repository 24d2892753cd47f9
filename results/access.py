"""Who may do what, in one place: the roles of project members, the scopes of API tokens, who may create
projects and machines, and the decorators of pages.

Staff may do everything everywhere. Otherwise a user's role in a project decides (each includes the ones before
it): a *viewer* reads the project (any logged-in user, and anybody under ``PILOTWEB_PUBLIC_READ``, reads a
project that is not private); an *uploader* also posts its runs; a *maintainer* also triages its alerts and
vouches for the revisions it posts (a confirmation session may then build them on a benchmark machine). A
request made with an API token can do no more than the token's scopes allow, and a token for one project
writes to that project only. Only staff define, change, schedule, start or cancel jobs.
"""

from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse

from .models import ApiToken, Machine, Membership, Project, Role, TokenScope

ROLE_ORDER = (Role.VIEWER, Role.UPLOADER, Role.MAINTAINER)
"""Roles from the least to the most a member may do; each includes the ones before it."""
ACTIONS: dict[str, tuple[Role, str | None]] = {
    "read": (Role.VIEWER, None),
    "upload": (Role.UPLOADER, TokenScope.UPLOAD),
    "triage": (Role.MAINTAINER, TokenScope.TRIAGE),
    "vouch": (Role.MAINTAINER, TokenScope.JOBS),
}
"""What each action on a project needs: the least role, and the token scope when it is made with a token."""
VERBS = {"read": "read", "upload": "post runs to", "triage": "triage the alerts of",
         "vouch": "vouch for revisions of"}


class _System:
    """The dashboard itself, reading as the operator's management commands and its own tasks do: as staff."""

    pk = id = None
    is_active = is_staff = is_authenticated = True
    is_anonymous = False

    def __repr__(self) -> str:
        return "SYSTEM"


SYSTEM = _System()
"""The viewer of reads made by the system (management commands, tasks): it reads every project."""


def is_staff(user) -> bool:
    return bool(user is not None and user.is_active and user.is_staff)


def role_of(user, project: Project) -> str | None:
    """The user's role in the project (one query), None for no membership."""
    if user is None or not user.is_authenticated or user is SYSTEM:
        return None
    return Membership.objects.filter(project=project, user=user).values_list("role", flat=True).first()


def _holds(role: str | None, least: Role) -> bool:
    return role is not None and ROLE_ORDER.index(Role(role)) >= ROLE_ORDER.index(least)


def allowed(user, action: str, project: Project, *, token: ApiToken | None = None, role: str | None = None) -> bool:
    """Whether `user` (through `token`, when the request carried one) may do `action` in `project`.

    `role` is the user's role in the project when the caller has read it already (a list of projects);
    otherwise it is read here.
    """
    least, scope = ACTIONS[action]
    if action == "read" and not project.private and (settings.PILOTWEB_PUBLIC_READ or _logged_in(user)):
        return True
    if not _logged_in(user):
        return False
    if token is not None and (scope is not None and not token.allows(scope)
                              or action != "read" and token.project_id not in (None, project.pk)):
        return False
    if is_staff(user):
        return True
    return _holds(role if role is not None else role_of(user, project), least)


def require(user, action: str, project: Project, *, token: ApiToken | None = None) -> None:
    """:func:`allowed`, or a PermissionDenied that says what is missing."""
    if allowed(user, action, project, token=token):
        return
    least, scope = ACTIONS[action]
    if token is not None and scope is not None and not token.allows(scope):
        reason = f"the token {token.prefix}… lacks the scope '{scope}'"
    elif token is not None and token.project_id not in (None, project.pk):
        reason = f"the token {token.prefix}… is for another project"
    else:
        held = role_of(user, project)
        reason = (f"your role there is {held}; it needs {least.value} or above" if held
                  else f"it needs a member with the role {least.value} or above (ask its maintainers or staff)")
    raise PermissionDenied(f"You may not {VERBS[action]} project {project.slug!r}: {reason}.")


def _logged_in(user) -> bool:
    return user is not None and user.is_authenticated and user.is_active


def projects_with_role(user, least: Role) -> set[int] | None:
    """The ids of the projects where `user` holds `least` or a role above it (one query); None for staff, who
    hold every role everywhere."""
    if is_staff(user):
        return None
    if not _logged_in(user):
        return set()
    roles = ROLE_ORDER[ROLE_ORDER.index(least):]
    return set(Membership.objects.filter(user=user, role__in=roles).values_list("project_id", flat=True))


def readable_projects(user) -> QuerySet[Project] | None:
    """The projects `user` may read, as a queryset to filter by (``project__in=``); None when every project is
    readable (staff), so that callers add no filter."""
    if is_staff(user):
        return None
    visible = Q(private=False) if settings.PILOTWEB_PUBLIC_READ or _logged_in(user) else Q(pk__in=[])
    if _logged_in(user):
        visible |= Q(pk__in=Membership.objects.filter(user=user).values("project_id"))
    return Project.objects.filter(visible).values("pk")


def visible(queryset: QuerySet, user, path: str = "project") -> QuerySet:
    """`queryset` narrowed to the rows whose project (at `path`) `user` may read."""
    projects = readable_projects(user)
    return queryset if projects is None else queryset.filter(**{f"{path}__in": projects})


def may_create(user, what: type[Project] | type[Machine], *, token: ApiToken | None = None) -> str | None:
    """Why `user` may not create a project or a machine by posting a run, or None if they may: staff always;
    others only while ``PILOTWEB_OPEN_CREATION`` is on, with a token for no single project, up to
    ``PILOTWEB_CREATION_QUOTA`` of each."""
    noun = what._meta.verbose_name
    if is_staff(user) and (token is None or token.allows(TokenScope.UPLOAD)):
        return None
    if not settings.PILOTWEB_OPEN_CREATION:
        return f"only staff create a {noun} here (PILOTWEB_OPEN_CREATION is off): ask them to create it"
    if not _logged_in(user):
        return f"creating a {noun} needs a logged-in user"
    if token is not None and token.project_id is not None:
        return f"the token {token.prefix}… is for one project and cannot create a {noun}"
    quota = settings.PILOTWEB_CREATION_QUOTA
    if what.objects.filter(created_by=user).count() >= quota:
        return f"you have created {quota} of them, the limit (PILOTWEB_CREATION_QUOTA); ask staff"
    return None


def can_read(request: HttpRequest) -> bool:
    """Anyone when ``PILOTWEB_PUBLIC_READ`` is on, else logged-in users (a page's own projects then narrow it)."""
    return settings.PILOTWEB_PUBLIC_READ or request.user.is_authenticated


def readable(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A page anyone who may read sees; others are sent to log in."""
    @wraps(view)
    def guarded(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not can_read(request):
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return guarded


def staff_only(message: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """A page for staff: anonymous visitors are sent to log in, other users get a 403 saying ``message``."""
    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def guarded(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not request.user.is_staff:
                raise PermissionDenied(message)
            return view(request, *args, **kwargs)

        return guarded

    return decorate
