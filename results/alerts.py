"""Alerts (writes): a run's regressions open alerts, grouped per run and announced once after commit;
people triage them."""

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from .models import Alert, AlertEvent, AlertGroup, AlertStatus, Comparison, ComparisonMethod, Run, RunKind, Verdict
from .signals import alerts_opened


def open_alerts(run: Run) -> None:
    """A regression by the run's decisive method (history for nightlies, pairwise for pull requests)
    opens an alert; one group per run, notified once after commit."""
    decisive = ComparisonMethod.PAIRWISE if run.kind == RunKind.PR else ComparisonMethod.HISTORY
    regressions = list(Comparison.objects.filter(candidate__run=run, method=decisive, verdict=Verdict.REGRESSION)
                       .order_by("candidate__metric__benchmark__name", "candidate__metric__name")
                       .values_list("pk", flat=True))
    if not regressions:
        return
    group, _ = AlertGroup.objects.get_or_create(run=run)
    Alert.objects.bulk_create([Alert(group=group, comparison_id=comparison) for comparison in regressions])
    alert_ids = list(Alert.objects.filter(group=group).values_list("pk", flat=True))
    transaction.on_commit(lambda: _announce(group.pk, alert_ids))


def _announce(group_id: int, alert_ids: list[int]) -> None:
    """After commit: notify the project, and tell the apps built on results (the runner confirms)."""
    from .tasks import enqueue, notify_alert_group

    enqueue(notify_alert_group, group_id)
    alerts_opened.send(sender=AlertGroup, group_id=group_id, alert_ids=alert_ids)


@transaction.atomic
def set_alert_status(*, alert: Alert, status: str, note: str = "", user) -> Alert:
    """Triage an alert (new, acknowledged, invalid, fixed, won't fix), recording who, when and why."""
    if not user.is_authenticated:
        raise PermissionDenied("Log in to triage alerts.")
    if status not in AlertStatus.values:
        raise ValidationError({"status": f"Choose one of {', '.join(AlertStatus.values)}."})
    alert = Alert.objects.select_for_update().get(pk=alert.pk)
    if alert.status != status or note:
        AlertEvent.objects.create(alert=alert, old_status=alert.status, new_status=status, note=note, user=user)
        alert.status, alert.updated_by = status, user
        alert.save(update_fields=["status", "updated_by", "updated_at"])
    return alert
