"""Triage (writes): people set an alert's or an incident's status, its bug link and its assignee, each change
recorded on the alert (who, when, why); only those allowed to triage the project may."""

from types import EllipsisType

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import URLValidator
from django.db import transaction

from . import access, changepoints
from .models import Alert, AlertEvent, AlertStatus, ApiToken, Incident, Project

TRIAGE_LOGIN = "Log in to triage alerts."
STATUS_RULE = f"Choose one of {', '.join(AlertStatus.values)}."
BUG_URL_RULE = "The bug link is an http(s) address of at most {length} characters."
ASSIGNEE_RULE = "Alerts are assigned to active users who may triage them (staff and the project's maintainers)."


@transaction.atomic
def set_alert_status(*, alert: Alert, status: str, note: str = "", user, token: ApiToken | None = None) -> Alert:
    """Triage an alert (new, acknowledged, invalid, fixed, won't fix), recording who, when and why. ``user``
    (through ``token``, where the request carried one) must be allowed to triage its project's alerts."""
    _check_triage(alert=alert, user=user, token=token, status=status)
    alert = Alert.objects.select_for_update().get(pk=alert.pk)
    if _change_status(alert, status=status, note=note, user=user):
        alert.updated_by = user
        alert.save(update_fields=["status", "updated_by", "updated_at"])
    return alert


@transaction.atomic
def triage_alert(*, alert: Alert, status: str, note: str = "", bug_url: str | None = None,
                 assignee: AbstractBaseUser | None | EllipsisType = ..., user) -> Alert:
    """Triage an alert from its page: its status as :func:`set_alert_status` does, and where given the link to the
    bug that follows the change up (empty: none) and who does (None: nobody); the defaults leave them as they are.
    The assignee must be able to triage it too."""
    _check_triage(alert=alert, user=user, token=None, status=status)
    alert = Alert.objects.select_for_update().get(pk=alert.pk)
    bug_url, assignee = _follow_up(bug_url, assignee, _project(alert), kept=alert)
    _triage_one(alert, status=status, note=note, bug_url=bug_url, assignee=assignee, user=user)
    return alert


def _follow_up(bug_url: str | None, assignee: AbstractBaseUser | None | EllipsisType, project: Project, *,
               kept: Alert | Incident) -> tuple[str, AbstractBaseUser | None]:
    """A bug link and an assignee checked (an http(s) address; someone who may triage the project), those not given
    (None, ``...``) taken from `kept` as they are: the link stripped, and the assignee."""
    bug_url = kept.bug_url if bug_url is None else bug_url
    assignee = kept.assignee if assignee is ... else assignee
    bug_url = bug_url.strip()
    length = Alert._meta.get_field("bug_url").max_length
    if len(bug_url) > length or (bug_url and not _is_web_address(bug_url)):
        raise ValidationError({"bug_url": BUG_URL_RULE.format(length=length)})
    if assignee is not None and not (assignee.is_active and access.allowed(assignee, "triage", project)):
        raise ValidationError({"assignee": ASSIGNEE_RULE})
    return bug_url, assignee


def _triage_one(alert: Alert, *, status: str, note: str, bug_url: str, assignee: AbstractBaseUser | None,
                user) -> None:
    """The (locked) alert's status changed and recorded (:func:`_change_status`), its bug link and assignee set, and
    it saved where anything changed, as updated by `user` (``updated_at`` is the save's time)."""
    changed = ["status"] if _change_status(alert, status=status, note=note, user=user) else []
    if alert.bug_url != bug_url or alert.assignee_id != (assignee.pk if assignee else None):
        alert.bug_url, alert.assignee = bug_url, assignee
        changed += ["bug_url", "assignee"]
    if changed:
        alert.updated_by = user
        alert.save(update_fields=[*changed, "updated_by", "updated_at"])


@transaction.atomic
def triage_incident(*, incident: Incident, status: str, note: str = "", bug_url: str | None = None,
                    assignee: AbstractBaseUser | None | EllipsisType = ..., user, token: ApiToken | None = None
                    ) -> Incident:
    """Triage an incident once: its status, and the same status for each of its alerts, each change recorded on the
    alert with the note (who, when, why); where given, the bug link and the assignee (None: nobody) of the incident
    and of each of its alerts (``...``, the default, leaves the assignee as it is). ``user`` (through ``token``)
    must be allowed to triage its project."""
    if not user.is_authenticated:
        raise PermissionDenied(TRIAGE_LOGIN)
    access.require(user, "triage", incident.project, token=token)
    if status not in AlertStatus.values:
        raise ValidationError({"status": STATUS_RULE})
    incident = Incident.objects.select_for_update().get(pk=incident.pk)
    bug_url, assignee = _follow_up(bug_url, assignee, incident.project, kept=incident)
    for alert in Alert.objects.select_for_update().filter(incident=incident).order_by("pk"):
        _triage_one(alert, status=status, note=note or f"with incident #{incident.pk}", bug_url=bug_url,
                    assignee=assignee, user=user)
    incident.status, incident.bug_url, incident.assignee = status, bug_url, assignee
    incident.save(update_fields=["status", "bug_url", "assignee", "updated_at"])
    return incident


def _check_triage(*, alert: Alert, user, token: ApiToken | None, status: str) -> None:
    if not user.is_authenticated:
        raise PermissionDenied(TRIAGE_LOGIN)
    access.require(user, "triage", _project(alert), token=token)
    if status not in AlertStatus.values:
        raise ValidationError({"status": STATUS_RULE})


def _project(alert: Alert) -> Project:
    return Project.objects.get(runs__alert_group__alerts=alert)


def _is_web_address(value: str) -> bool:
    try:
        URLValidator(schemes=["http", "https"])(value)
    except ValidationError:
        return False
    return True


def _change_status(alert: Alert, *, status: str, note: str, user) -> bool:
    """Set the (locked) alert's status and record the event, when it changes or a note is given; an alert marked
    invalid takes back the change point it recorded."""
    if alert.status == status and not note:
        return False
    if status == AlertStatus.INVALID:
        changepoints.retract_for_alerts(alerts=Alert.objects.filter(pk=alert.pk))
    AlertEvent.objects.create(alert=alert, old_status=alert.status, new_status=status, note=note, user=user)
    alert.status = status
    return True
