"""Alerts (writes): a run's regressions, and a nightly series' changes, open alerts, grouped per run and
announced once after commit; later nights, confirmation sessions and people settle them."""

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from . import access
from .models import (
    Alert,
    AlertEvent,
    AlertGroup,
    AlertState,
    AlertStatus,
    ApiToken,
    Comparison,
    ComparisonMethod,
    Project,
    Run,
    RunKind,
    Verdict,
)
from .presentation import ALPHA, CHANGE_SIDES, contradicts, is_significant
from .services import bulk_insert
from .signals import alerts_opened

PULL_REQUEST_ALERTS = (Verdict.REGRESSION, Verdict.SUSPECTED_REGRESSION)
NIGHTLY_ALERTS = (Verdict.REGRESSION, Verdict.SUSPECTED_REGRESSION, Verdict.IMPROVEMENT,
                  Verdict.SUSPECTED_IMPROVEMENT)
"""A nightly's improvements alert too: the series' level moved (and a benchmark that stopped working looks faster)."""
SERIES_LEVEL = 0.01
"""A nightly series alerts only when its own shift p-value (adjusted for the first nights tried) is below this,
besides q < α: the false-alarm budget of spec §8, 0.5% per series-night. The q-value alone allows 5% per
night in a project of one series (Benjamini–Hochberg over one test is the test)."""


def open_alerts(run: Run, *, carried: dict[int, int]) -> None:
    """Open the run's alerts, one group per run, notified once after commit; carry the suspected ones.

    A pull request alerts on its (suspected) regressions against its base. A nightly alerts per series on
    a (suspected) change of its shift row, which names the first night; a suspected verdict opens a
    *suspected* alert, an interval beyond the band a confirmed one. Tonight's row against the last K nights
    is shown, and alerts nobody: with K = 10 nights it cries wolf on a series with two modes, where the
    shift test's 10 to 30 nights do not. A series whose shift test pooled the nights since an alert's first
    night (``carried``: alert by metric; see :mod:`results.baselines`) opens none: tonight's evidence is
    added to that alert, and confirms or dismisses it once decisive.
    """
    compared = Comparison.objects.filter(candidate__run=run).order_by(
        "candidate__metric__benchmark__name", "candidate__metric__name", "method")
    if run.kind == RunKind.PR:
        opened = [Alert(comparison_id=pk, first_run=run, state=AlertState.CONFIRMED if verdict == Verdict.REGRESSION
                        else AlertState.SUSPECTED)
                  for pk, verdict, pvalue, qvalue in compared.filter(
                      method=ComparisonMethod.PAIRWISE, verdict__in=PULL_REQUEST_ALERTS).values_list(
                      "pk", "verdict", "pvalue", "qvalue")
                  if is_significant(pvalue, qvalue)]
    else:
        opened, evidence = [], {}
        # Only alerting verdicts and carried series matter: reading every shift row's inputs costs 0.3 s a run.
        shifts = compared.filter(Q(verdict__in=NIGHTLY_ALERTS) | Q(candidate__metric_id__in=list(carried)),
                                 method=ComparisonMethod.SHIFT)
        for pk, metric_id, verdict, inputs, pvalue, qvalue in shifts.values_list(
                "pk", "candidate__metric_id", "verdict", "inputs", "pvalue", "qvalue"):
            # An interval beyond the band is a change only when the run's false-discovery control agrees
            # (spec §7): a shift's interval is that of the start it chose among several.
            alerting = verdict in NIGHTLY_ALERTS and is_significant(pvalue, qvalue) and pvalue < SERIES_LEVEL
            if metric_id in carried:
                if verdict != Verdict.INSUFFICIENT_HISTORY:
                    evidence[carried[metric_id]] = (pk, verdict, inputs, alerting)
            elif alerting:
                opened.append(Alert(comparison_id=pk, first_run_id=inputs["first_run"], evidence_id=pk,
                                    state=_state(verdict, inputs)))
        _carry(evidence)
    if not opened:
        return
    group, _ = AlertGroup.objects.get_or_create(run=run)
    for alert in opened:
        alert.group = group
    bulk_insert(opened)
    alert_ids = list(Alert.objects.filter(group=group).values_list("pk", flat=True))
    transaction.on_commit(lambda: _announce(group.pk, alert_ids))


def _state(verdict: str, inputs: dict) -> str:
    """Confirmed: the interval lies beyond the band, and the nights since differ from those before with their
    own spread too (Welch, two nights at least): one night, or a spike and a normal night, is not a level."""
    return AlertState.CONFIRMED if verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT) and _consistent(inputs) \
        else AlertState.SUSPECTED


def _consistent(inputs: dict) -> bool:
    welch = inputs.get("welch_pvalue")
    return welch is not None and welch < ALPHA


def _carry(evidence: dict[int, tuple]) -> None:
    """Add tonight's pooled evidence to each alert (by alert id), in two queries: a significant interval beyond
    the band on its side confirms it, one inside the band (or beyond it on the other side) dismisses it (a
    confirmed change that the nights since do not bear out was a transient, not a new level)."""
    alerts = list(Alert.objects.filter(pk__in=list(evidence)).select_related("comparison"))
    now = timezone.now()
    for alert in alerts:
        pk, verdict, inputs, significant = evidence[alert.pk]
        side = CHANGE_SIDES.get(alert.comparison.verdict)
        nights = len(inputs.get("pooled_runs", []))
        alert.evidence_id, alert.updated_at = pk, now
        if verdict == side and significant and _consistent(inputs):
            alert.state, alert.state_note = AlertState.CONFIRMED, f"confirmed: {nights} nights pooled, {verdict}"
        elif contradicts(verdict, side):
            alert.state, alert.state_note = AlertState.DISMISSED, f"dismissed: {nights} nights pooled, {verdict}"
    Alert.objects.bulk_update(alerts, ["evidence", "state", "state_note", "updated_at"])


def _announce(group_id: int, alert_ids: list[int]) -> None:
    """After commit: notify the project, and tell the apps built on results (the runner confirms)."""
    from .tasks import enqueue, notify_alert_group

    enqueue(notify_alert_group, group_id)
    alerts_opened.send(sender=AlertGroup, group_id=group_id, alert_ids=alert_ids)


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
def triage_alert(*, alert: Alert, status: str, note: str = "", bug_url: str = "",
                 assignee: AbstractBaseUser | None = None, user) -> Alert:
    """Triage an alert from its page: its status as :func:`set_alert_status` does, and the link to the bug
    that follows the change up and who does, both replaced by the values given (empty, None: none). The
    assignee must be able to triage it too."""
    _check_triage(alert=alert, user=user, token=None, status=status)
    bug_url = bug_url.strip()
    length = Alert._meta.get_field("bug_url").max_length
    if len(bug_url) > length or (bug_url and not _is_web_address(bug_url)):
        raise ValidationError({"bug_url": BUG_URL_RULE.format(length=length)})
    if assignee is not None and not (assignee.is_active and access.allowed(assignee, "triage", _project(alert))):
        raise ValidationError({"assignee": ASSIGNEE_RULE})
    alert = Alert.objects.select_for_update().get(pk=alert.pk)
    changed = ["status"] if _change_status(alert, status=status, note=note, user=user) else []
    if alert.bug_url != bug_url or alert.assignee_id != (assignee.pk if assignee else None):
        alert.bug_url, alert.assignee = bug_url, assignee
        changed += ["bug_url", "assignee"]
    if changed:
        alert.updated_by = user
        alert.save(update_fields=[*changed, "updated_by", "updated_at"])
    return alert


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
    """Set the (locked) alert's status and record the event, when it changes or a note is given."""
    if alert.status == status and not note:
        return False
    AlertEvent.objects.create(alert=alert, old_status=alert.status, new_status=status, note=note, user=user)
    alert.status = status
    return True
