"""A/B confirmation settles an alert (writes): an interleaved session re-measured the alert's two revisions
on its machine; their runs, compared by the comparison service, confirm or dismiss the change (spec §7)."""

from django.db import transaction

from . import comparisons
from .models import Alert, AlertState
from .presentation import CHANGE_SIDES, contradicts


@transaction.atomic
def settle_alert(*, alert_id: int, baseline_run_id: int | None, candidate_run_id: int | None,
                 session_id: int) -> Alert:
    """Compare the session's baseline and candidate runs for the alert's metric; a significant change on the
    alert's side (decided or suspected) confirms it, no change or a change the other way dismisses it, and
    an inconclusive one, or a session that stored no run of a revision (None), leaves it as it was (the
    note says so). Returns the alert."""
    alert = Alert.objects.select_for_update().select_related("comparison__candidate__metric__benchmark").get(
        pk=alert_id)
    metric = alert.comparison.candidate.metric
    row = None
    if baseline_run_id is not None and candidate_run_id is not None:
        compared = comparisons.compare_stored_runs(baseline_id=baseline_run_id, candidate_id=candidate_run_id)
        row = next((row for row in compared.rows
                    if (row.benchmark, row.metric) == (metric.benchmark.name, metric.name)), None)
    side = CHANGE_SIDES.get(alert.comparison.verdict)
    if baseline_run_id is None or candidate_run_id is None:
        missing = " and ".join(label for label, run_id in (("baseline", baseline_run_id),
                                                           ("candidate", candidate_run_id)) if run_id is None)
        note = f"not settled by session #{session_id}: no valid measurement of the {missing}"
    elif row is None:
        note = f"session #{session_id} measured no comparable {metric.name} of {metric.benchmark.name}"
    else:
        found = f"session #{session_id}: {row.change or 'no ratio'}, p = {row.pvalue_text}, {row.verdict}"
        if CHANGE_SIDES.get(row.verdict) == side and row.significant:
            alert.state, note = AlertState.CONFIRMED, f"confirmed by {found}"
        elif contradicts(row.verdict, side):
            alert.state, note = AlertState.DISMISSED, f"dismissed by {found}"
        else:
            note = f"not settled by {found}"
    alert.state_note = note[:300]
    alert.save(update_fields=["state", "state_note", "updated_at"])
    return alert
