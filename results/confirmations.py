"""A/B confirmation settles an alert (writes): an interleaved session re-measured the alert's two revisions on
its machine and decided, by its own sequential rule (spec §5), whether they differ; that decision confirms or
dismisses the change (spec §7)."""

from dataclasses import dataclass

from django.db import transaction

from .models import Alert, AlertState
from .decisions import CHANGE_SIDES
from .presentation import said_probability
from .stats import DIFFERENT, EQUIVALENT, format_change, verdict


@dataclass(frozen=True)
class PairDecision:
    """What an A/B session decided about the alert's metric, candidate over baseline.

    Attributes
    ----------
    decision : {"different", "equivalent", "undecided"}
    ratio, low, high : float or None
        Candidate mean over baseline mean and the interval the decision rests on (None: unbounded).
    pvalue : float
        The rule's evidence of a difference.
    rule : str
        The session's comparison rule (``anytime`` or ``pilot``).
    """

    decision: str
    ratio: float | None
    low: float | None
    high: float | None
    pvalue: float
    rule: str


def note_unconfirmed(*, alert_ids: list[int], note: str) -> None:
    """Say on each alert why no A/B session re-measures it (or why the one started could not)."""
    Alert.objects.filter(pk__in=alert_ids).update(confirmation_note=note[:300])


@transaction.atomic
def settle_alert(*, alert_id: int, session_id: int, decision: PairDecision | None) -> Alert:
    """Settle the alert by the session's decision: a difference on the alert's side confirms it; no difference
    that matters, or a difference the other way, dismisses it; an undecided session, or one that decided
    nothing about the metric (None: no valid measurement of a revision), leaves it as it was. The note says
    which, with the change, its interval and the rule's p. Returns the alert."""
    alert = Alert.objects.select_for_update().select_related("comparison__candidate__metric__benchmark").get(
        pk=alert_id)
    metric = alert.comparison.candidate.metric
    side = CHANGE_SIDES.get(alert.comparison.verdict)
    if decision is None:
        note = (f"not settled by session #{session_id}: no valid measurement of both revisions of "
                f"{metric.name} of {metric.benchmark.name}")
    else:
        change = "no ratio" if decision.ratio is None else format_change(decision.ratio, decision.low, decision.high)
        found = f"session #{session_id}: {change}, {said_probability('p', decision.pvalue)} ({decision.rule})"
        # The side of the change by the one verdict rule (spec §7), at its point estimate and θ = 0.
        point = 1.0 if decision.ratio is None else decision.ratio
        worse = CHANGE_SIDES.get(verdict(point, point, threshold=0.0, direction=metric.direction)) == "regression"
        changed = "a regression" if worse else "an improvement"
        if decision.decision == DIFFERENT and changed.endswith(side or "-"):
            alert.state, note = AlertState.CONFIRMED, f"confirmed by {found}, {changed}"
        elif decision.decision == DIFFERENT:
            alert.state, note = AlertState.DISMISSED, f"dismissed by {found}, {changed}"
        elif decision.decision == EQUIVALENT:
            alert.state, note = AlertState.DISMISSED, f"dismissed by {found}, no difference that matters"
        else:
            note = f"not settled by {found}, no difference resolved"
    alert.state_note = note[:300]
    alert.save(update_fields=["state", "state_note", "updated_at"])
    return alert
