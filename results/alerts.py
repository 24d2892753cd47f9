"""Alerts (writes): a run's regressions, and a nightly series' changes, open alerts, grouped per run and
announced once after commit; later nights, confirmation sessions and people settle them."""

import math
from collections import defaultdict
from datetime import timedelta

import numpy as np
from django.db import transaction
from django.db.models import Count, F, OuterRef, Q, Subquery
from django.utils import timezone

from . import changepoints, nights, queue, stats
from .baselines import MATCH_NIGHTS, UNTRIAGED, is_change
from .models import (
    Alert,
    AlertGroup,
    AlertState,
    AlertStatus,
    ChangePoint,
    Comparison,
    ComparisonMethod,
    Incident,
    IncidentKind,
    Metric,
    Result,
    Run,
    RunKind,
    Verdict,
    series_nights,
)
from .decisions import (
    ALPHA,
    CHANGE_SIDES,
    NIGHTLY_ALERTS,
    PULL_REQUEST_ALERTS,
    SERIES_LEVEL,
    SUSPECTED_IMPROVEMENT,
    SUSPECTED_REGRESSION,
    contradicts,
    is_significant,
    series_verdict,
)
from .bulk import bulk_insert
from .nightly_rows import REFINE_AFTER, SHIFT_HISTORY
from .signals import alerts_opened


def open_alerts(run: Run, *, carried: dict[int, int]) -> None:
    """Open the run's alerts, one group per run, notified once after commit; carry and settle the open ones.

    A pull request alerts on its (suspected) regressions against its base, suspected: one run against one
    run is not evidence enough to confirm. A nightly alerts per series on
    a (suspected) change of its shift row, which names the first night; a suspected verdict opens a
    *suspected* alert, an interval beyond the band a confirmed one. Tonight's row against the last K nights
    is shown, and alerts nobody: with K = 10 nights it cries wolf on a series with two modes, where the
    shift test's 10 to 30 nights do not. Where the shift row pooled the nights since an alert's first night
    (``carried``: alert by metric; see :mod:`results.baselines`), tonight's evidence is added to that alert,
    which it confirms or dismisses once decisive; where instead the row found a new shift inside those nights,
    the new shift gets its own alert and the earlier one is settled on its own nights (``inputs["closes"]``).
    """
    compared = Comparison.objects.filter(candidate__run=run).order_by(
        "candidate__metric__benchmark__name", "candidate__metric__name", "method")
    if run.kind == RunKind.PR:
        # One run against one run: a regression there is suspected until more than one run backs it (an
        # interleaved A/B confirmation session, :mod:`results.confirmations`), as a nightly's is until nights do.
        opened = [Alert(comparison_id=pk, first_run=run, state=AlertState.SUSPECTED)
                  for pk, verdict, pvalue, qvalue in compared.filter(
                      method=ComparisonMethod.PAIRWISE, verdict__in=PULL_REQUEST_ALERTS).values_list(
                      "pk", "verdict", "pvalue", "qvalue")
                  if is_significant(pvalue, qvalue)]
    else:
        opened, evidence, splits = [], {}, {}
        # Only alerting verdicts and carried series matter: reading every shift row's inputs costs 0.3 s a run.
        shifts = compared.filter(Q(verdict__in=NIGHTLY_ALERTS) | Q(candidate__metric_id__in=list(carried)),
                                 method=ComparisonMethod.SHIFT)
        closed = {}
        for pk, metric_id, verdict, inputs, pvalue, qvalue in shifts.values_list(
                "pk", "candidate__metric_id", "verdict", "inputs", "pvalue", "qvalue"):
            # An interval beyond the band is a change only when the run's false-discovery control agrees
            # (spec §7): a shift's interval is that of the start it chose among several.
            alerting = verdict in NIGHTLY_ALERTS and is_significant(pvalue, qvalue) and pvalue < SERIES_LEVEL
            if metric_id in carried and inputs.get("carried"):
                if verdict != Verdict.INSUFFICIENT_HISTORY:
                    evidence[carried[metric_id]] = (pk, verdict, inputs, alerting)
            elif alerting:
                if inputs.get("closes", {}).get("transient"):
                    # The series came back: the change it closes was an excursion, and this is no change of its own.
                    closed[inputs["closes"]["alert"]] = (inputs["closes"], inputs["first_run"])
                elif "closes" in inputs:
                    splits[inputs["closes"]["alert"]] = (pk, verdict, inputs)
                else:
                    opened.append(Alert(comparison_id=pk, first_run_id=inputs["first_run"], evidence_id=pk,
                                        state=_state(verdict, inputs)))
        moved = _move_or_split(splits, opened, closed)
        carried_ids, refined = _carry(evidence)
        settled = carried_ids + _settle_closed(closed) + moved
        _record_change_points(Alert.objects.filter(pk__in=settled, state=AlertState.CONFIRMED))
        changepoints.retract_for_alerts(alerts=Alert.objects.filter(pk__in=settled, state=AlertState.DISMISSED))
        if moved or refined:
            gather_incidents(run, also=moved + refined)
    if not opened:
        return
    group, _ = AlertGroup.objects.get_or_create(run=run)
    for alert in opened:
        alert.group = group
    bulk_insert(opened)
    if run.kind != RunKind.PR:
        gather_incidents(run)
        _record_change_points(Alert.objects.filter(group=group, state=AlertState.CONFIRMED))
    alert_ids = list(Alert.objects.filter(group=group).values_list("pk", flat=True))
    transaction.on_commit(lambda: _announce(group.pk, alert_ids))


MACHINE_WIDE_SERIES = 5
MACHINE_WIDE_SHARE = 0.10
"""A night on which at least this many series of a project's machine, and this share of the series its run
compared, begin a change is one event, a machine-wide shift. Independent false alerts (0.5% per series-night at
the most) put 5 on one night of 60 series with a chance below 1 in 10,000; the real machine-wide nights of the
django-asv histories moved 10 to 25 of 60 series (benchmarks/injected_steps.py prints them)."""


def _move_or_split(splits: dict[int, tuple], opened: list[Alert], closed: dict[int, tuple[dict, int]]) -> list[int]:
    """Each new shift found inside a carried change's nights (by the change's alert id: the shift's comparison,
    verdict and inputs) either re-places that change or splits it. Where the change's own nights, up to the new
    shift, show no change of their own, the alert is untriaged and the shift goes its way, the alert was one
    step named a few nights early (noise before it, spec §8 "an alert names the night its shift began"): its first
    night moves to the shift's, tonight's row becomes its evidence, and no alert is opened. A first night moves
    at most ``REFINE_AFTER`` nights, as its nightly re-estimation does: an alert of more nights before the shift
    is an earlier change, or none, and not the shift told late (measured: a second step 18 and 22 nights after a
    spurious alert re-placed it, and was never told; benchmarks/nightly_detection.py --scenario two-steps, 1.5%,
    seed 14). Otherwise the shift gets an alert of its own (`opened`) and the change is settled on its own nights
    (`closed`). Returns the ids of the alerts re-placed."""
    alerts = {alert.pk: alert for alert in Alert.objects.filter(pk__in=list(splits)).select_related(
        "comparison__candidate__metric")}
    moved = []
    now = timezone.now()
    for alert_id, (pk, verdict, inputs) in splits.items():
        alert = alerts.get(alert_id)
        side = CHANGE_SIDES.get(alert.comparison.verdict) if alert else None
        if (alert is not None and alert.status in UNTRIAGED and alert.state != AlertState.DISMISSED
                and CHANGE_SIDES.get(verdict) == side and inputs["closes"].get("nights", 0) <= REFINE_AFTER
                and not _stands_alone(alert, inputs["closes"])):
            alert.first_run_id, alert.evidence_id, alert.updated_at = inputs["first_run"], pk, now
            alert.state = _state(verdict, inputs)
            alert.state_note = (f"{alert.state}: re-placed at run #{inputs['first_run']}, the nights before it "
                                f"show no change of their own")
            moved.append(alert)
        else:
            opened.append(Alert(comparison_id=pk, first_run_id=inputs["first_run"], evidence_id=pk,
                                state=_state(verdict, inputs)))
            closed[alert_id] = (inputs["closes"], inputs["first_run"])
    Alert.objects.bulk_update(moved, ["first_run", "evidence", "state", "state_note", "updated_at"])
    # A confirmed alert's change point moves with its first night (retracted, a later scan finding it again would
    # take it back, and the alert would have two); a suspected alert has none.
    changepoints.follow_first_nights([alert for alert in moved if alert.state == AlertState.CONFIRMED])
    changepoints.retract_for_alerts(alerts=[alert for alert in moved if alert.state != AlertState.CONFIRMED])
    return [alert.pk for alert in moved]


def _own_verdict(alert: Alert, numbers: dict) -> str | None:
    """The verdict of a change's own nights, an inconclusive one split as everywhere (spec §7), with the series'
    level as its significance."""
    verdict = numbers.get("verdict")
    if verdict is None:
        return None
    return series_verdict(verdict, ratio=numbers.get("ratio"), pvalue=numbers.get("pvalue"),
                          threshold=alert.comparison.threshold, direction=alert.comparison.candidate.metric.direction)


def _stands_alone(alert: Alert, numbers: dict) -> bool:
    """Whether a change's own nights (`numbers`: its evidence up to the next change) are a change on its side:
    beyond the band, or significant at the series' level with the estimate beyond it, and with their own spread.
    The first night was the best of the starts its scan tried, so its own p-value is multiplied by their number
    (Bonferroni): measured, a step whose scan chose three noisy nights before it as its first stood on them at
    p = 0.006 (benchmarks/nightly_detection.py --scenario machine-wide, 1.5%, seed 29)."""
    starts = max(1, int((alert.comparison.inputs or {}).get("starts_tried") or 1))
    numbers = {**numbers, "pvalue": min(1.0, (numbers.get("pvalue") or 1.0) * starts)}
    return (CHANGE_SIDES.get(_own_verdict(alert, numbers)) == CHANGE_SIDES.get(alert.comparison.verdict)
            and numbers["pvalue"] < SERIES_LEVEL and _consistent(numbers))


def gather_incidents(run: Run, *, also: list[int] = ()) -> list[Incident]:
    """Make the alerts of ``run``'s project and machine that name one night as their first one incident: a
    *commit range* where two or more (Perfherder's alert summaries: one night, one machine, one range of commits,
    triaged and bisected once), a *machine-wide shift* where many (:data:`MACHINE_WIDE_SERIES`,
    :data:`MACHINE_WIDE_SHARE`; a range incident that grows to that many becomes one). Alerts opened since join
    the incident of their night, and a machine-wide shift's also those of the night before or after it (a series
    may place a shift a night off); returns the incidents made or added to. Dismissed alerts and alerts marked
    invalid join none. ``also``: alerts of earlier groups whose first night moved tonight: they first leave an
    incident that no longer names their night (:func:`_leave_incidents`), then are gathered as if opened."""
    if also:
        _leave_incidents(list(also))
    opened = Alert.objects.filter(Q(group__run=run) | Q(pk__in=list(also)), incident__isnull=True).values_list(
        "first_run__started_at", flat=True)
    machine_wide = max(MACHINE_WIDE_SERIES, math.ceil(MACHINE_WIDE_SHARE * run.results.count()))
    changed = []
    for night in sorted({nights.night_of(first) for first in opened}):
        same_machine = Alert.objects.filter(
            series_nights("first_run__"), first_run__project_id=run.project_id, first_run__machine_id=run.machine_id,
            incident__isnull=True).exclude(state=AlertState.DISMISSED).exclude(status=AlertStatus.INVALID)
        nearby = Incident.objects.filter(project_id=run.project_id, machine_id=run.machine_id,
                                         night__range=(night - timedelta(days=1), night + timedelta(days=1)))
        incident = min((found for found in nearby if found.kind == IncidentKind.MACHINE or found.night == night),
                       key=lambda found: (found.kind != IncidentKind.MACHINE, abs((found.night - night).days)),
                       default=None)
        start, end = _incident_bounds(night if incident is None else incident.night,
                                      IncidentKind.RANGE if incident is None else incident.kind)
        members = same_machine.filter(first_run__started_at__gte=start, first_run__started_at__lt=end)
        if incident is None:
            count = _series_count(members)
            if count < 2:
                continue
            first = members.order_by("first_run__started_at", "first_run_id").values_list("first_run_id",
                                                                                          flat=True).first()
            incident = Incident.objects.create(
                kind=IncidentKind.MACHINE if count >= machine_wide else IncidentKind.RANGE, project_id=run.project_id,
                machine_id=run.machine_id, night=night, first_run_id=first)
        members.update(incident=incident)
        if incident.kind == IncidentKind.RANGE and _series_count(incident.alerts.all()) >= machine_wide:
            Incident.objects.filter(pk=incident.pk).update(kind=IncidentKind.MACHINE)
            incident.kind = IncidentKind.MACHINE
        changed.append(incident)
    return changed


def _state(verdict: str, inputs: dict) -> str:
    """Confirmed: the interval lies beyond the band, and the nights since differ from those before with their
    own spread too (Welch, two nights at least): one night, or a spike and a normal night, is not a level.

    A scan's first night is chosen among several, and its interval is not adjusted for the choice (its p-value is).
    Opening such alerts suspected was measured and not kept: at 3% noise it left 2 fewer false alerts confirmed on
    their first night, and on TCPD's annotated series it cost recall (0.881 → 0.878, below Otava's)."""
    return AlertState.CONFIRMED if verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT) and _consistent(inputs) \
        else AlertState.SUSPECTED


def _consistent(inputs: dict) -> bool:
    welch = inputs.get("welch_pvalue")
    return welch is not None and welch < ALPHA


def _carry(evidence: dict[int, tuple]) -> tuple[list[int], list[int]]:
    """Add tonight's pooled evidence to each alert (by alert id), in two queries: a significant interval beyond
    the band on its side confirms it, one inside the band (or beyond it on the other side) dismisses it (a
    confirmed change that the nights since do not bear out was a transient, not a new level). Returns the ids of
    the alerts, and of those whose first night it moved."""
    alerts = list(Alert.objects.filter(pk__in=list(evidence)).select_related("comparison"))
    now = timezone.now()
    refined = []
    for alert in alerts:
        pk, verdict, inputs, significant = evidence[alert.pk]
        side = CHANGE_SIDES.get(alert.comparison.verdict)
        nights = len(inputs.get("pooled_runs", []))
        alert.evidence_id, alert.updated_at = pk, now
        if inputs.get("first_run") and inputs["first_run"] != alert.first_run_id:
            # Re-estimated among the nights around it (results.nightly_rows.REFINE_BEFORE/AFTER).
            alert.first_run_id = inputs["first_run"]
            refined.append(alert.pk)
        if verdict == side and significant and _consistent(inputs):
            alert.state, alert.state_note = AlertState.CONFIRMED, f"confirmed: {nights} nights pooled, {verdict}"
        elif contradicts(verdict, side):
            alert.state, alert.state_note = AlertState.DISMISSED, f"dismissed: {nights} nights pooled, {verdict}"
        elif alert.state == AlertState.SUSPECTED and nights >= MAX_PENDING_NIGHTS:
            if CHANGE_SIDES.get(verdict) == side and significant and _consistent(inputs):
                alert.state, alert.state_note = AlertState.CONFIRMED, (
                    f"confirmed: {nights} nights pooled, {verdict}, the most a change stays suspected")
            else:
                alert.state, alert.state_note = AlertState.DISMISSED, (
                    f"dismissed: {nights} nights pooled and still undecided ({verdict}): no change to act on")
    Alert.objects.bulk_update(alerts, ["evidence", "state", "state_note", "updated_at", "first_run"])
    return [alert.pk for alert in alerts], refined


def _incident_bounds(night, kind: str) -> tuple:
    """The first nights an incident of `kind` on `night` admits, as moments (start, end): a commit range its
    night, a machine-wide shift also the night before and after it (a series may place a shift a night off)."""
    reach = timedelta(days=1 if kind == IncidentKind.MACHINE else 0)
    return nights.night_bounds(night - reach)[0], nights.night_bounds(night + reach)[1]


def _leave_incidents(alert_ids: list[int]) -> None:
    """Alerts whose first night moved leave an incident that no longer admits it (:func:`_incident_bounds`): an
    incident tells one range of commits, to triage and bisect once, and an alert re-estimated nights earlier is
    another range (seen on real histories: a commit range of five alerts whose first nights had moved to four
    different nights). An incident left with fewer than two series and not yet triaged is no incident any more;
    the others begin at their earliest alert's first night. A fixed number of queries, whatever the number of
    incidents."""
    left = {}
    for pk, first, incident, night, kind in Alert.objects.filter(pk__in=alert_ids, incident__isnull=False).values_list(
            "pk", "first_run__started_at", "incident_id", "incident__night", "incident__kind"):
        start, end = _incident_bounds(night, kind)
        if not start <= first < end:
            left[pk] = incident
    if not left:
        return
    Alert.objects.filter(pk__in=list(left)).update(incident=None)
    incidents = list(Incident.objects.filter(pk__in=set(left.values())).annotate(
        series=_series_of("alerts__"),
        earliest=Subquery(Alert.objects.filter(incident=OuterRef("pk")).order_by(
            "first_run__started_at", "first_run_id").values("first_run_id")[:1])))
    gone = {incident.pk for incident in incidents if incident.series < 2 and incident.status == AlertStatus.NEW
            and not incident.bug_url and incident.assignee_id is None}
    Incident.objects.filter(pk__in=gone).delete()  # their last alerts, if any, are set free (SET_NULL)
    kept = [incident for incident in incidents if incident.pk not in gone]
    for incident in kept:
        incident.first_run_id = incident.earliest or incident.first_run_id
    Incident.objects.bulk_update(kept, ["first_run"])


def _series_of(alerts: str = "") -> Count:
    """How many series alerts are of (a series may have two alerts in one incident), as an aggregate over the
    alerts reached by the lookup `alerts` (empty: a queryset of alerts itself)."""
    return Count(f"{alerts}comparison__candidate__metric_id", distinct=True)


def _series_count(alerts) -> int:
    """How many series a queryset of alerts is of (:func:`_series_of`)."""
    return alerts.aggregate(series=_series_of())["series"]


MAX_PENDING_NIGHTS = 30
"""A suspected change still undecided after this many nights pooled is settled on them: confirmed when its nights
differ from those before it (significant at the series' level), else dismissed. It no longer holds its series
meanwhile (a new shift is looked for inside its nights), but an alert nobody can act on should not stay open."""


def _record_change_points(alerts) -> None:
    """A confirmed alert is a change point (spec §8): recorded, or the scan's taken as its own where the scan
    found it first (:func:`results.changepoints.record_confirmed`)."""
    changepoints.record_confirmed(list(alerts.select_related("first_run", "evidence", "comparison__candidate")))


def _settle_closed(closed: dict[int, tuple[dict, int]]) -> list[int]:
    """Settle each change whose nights a new shift ended (by alert id: the closed change's own numbers, and the
    new shift's first run), on its own nights: a change beyond the band on its side, significant at the series'
    level and with its own spread (Welch), is confirmed; anything else was no level of its own, and is
    dismissed. A change already dismissed stays so; one already confirmed is dismissed only by numbers that
    contradict it, or when the series came back to its level before it within a few nights (``transient``:
    :data:`results.nightly_rows.TRANSIENT_NIGHTS`). Returns the ids of the alerts it confirmed or dismissed."""
    alerts = list(Alert.objects.filter(pk__in=list(closed)).select_related("comparison__candidate__metric"))
    now = timezone.now()
    changed = []
    for alert in alerts:
        numbers, until = closed[alert.pk]
        side = CHANGE_SIDES.get(alert.comparison.verdict)
        nights = numbers.get("nights")
        verdict = _own_verdict(alert, numbers)
        own = f"{nights} night{'s' if nights != 1 else ''} before the next change" if nights else "no night"
        if numbers.get("transient"):
            if alert.state != AlertState.DISMISSED:
                alert.state = AlertState.DISMISSED
                alert.state_note = (f"dismissed: a transient, back to its earlier level after "
                                    f"{nights or 'its'} night{'s' if nights != 1 else ''}")
                changed.append(alert)
        elif _stands_alone(alert, numbers):
            if alert.state != AlertState.CONFIRMED:
                alert.state, alert.state_note = AlertState.CONFIRMED, f"confirmed on its own {own}, {verdict}"
                changed.append(alert)
        elif alert.state == AlertState.SUSPECTED or contradicts(verdict, side):
            alert.state = AlertState.DISMISSED
            alert.state_note = f"dismissed: its {own} show no change of their own ({verdict or 'untested'})"
            changed.append(alert)
    for alert in changed:
        alert.updated_at = now
    Alert.objects.bulk_update(changed, ["state", "state_note", "updated_at"])
    return [alert.pk for alert in changed]


CHANGE_POINT_NIGHTS = 30
"""A change point of the daily scan opens an alert only while its first night is among its series' newest this
many nights: older ones are history to read, not news to act on (the first scan of an imported history would
otherwise raise every change it ever had)."""


def scan_change_points(*, chunk_size: int = changepoints.CHUNK_SIZE) -> int:
    """The daily scan: every default-branch series' change points found, sized and stored
    (:func:`results.changepoints.detect_change_points`), `chunk_size` metrics of one machine at a time, each chunk
    with its alerts in one transaction (a failure keeps the chunks done); returns the change points stored."""
    stored = 0
    for machine_id, metric_ids in changepoints.series_chunks(chunk_size=chunk_size):
        with transaction.atomic():
            points = changepoints.detect_change_points(metric_ids=metric_ids, machine_id=machine_id)
            alert_change_points(points)
        stored += len(points)
    return stored


@transaction.atomic
def scan_run_series(*, run_id: int) -> list[Alert]:
    """After a run was compared: the series it flagged re-scanned on its machine
    (:func:`results.changepoints.detect_change_points_for_run`), and the change points to act on alerted."""
    return alert_change_points(changepoints.detect_change_points_for_run(run_id=run_id))


def alert_change_points(points: list[ChangePoint]) -> list[Alert]:
    """Open an alert for each change point the user should act on (spec §8: stored change points and alerts
    agree): one not yet an alert's, among its series' newest :data:`CHANGE_POINT_NIGHTS` nights (and, as the scan
    stores them, with at least :data:`results.changepoints.SETTLED_NIGHTS` since it), significant at the series'
    level, whose interval lies beyond the band (a regression or an improvement, spec §7: a confirmed alert) or
    reaches into it (a suspected one), with no alert of its series within ``MATCH_NIGHTS`` nights of it (that alert
    is the same change), and a change of its own between the series' changes (:func:`_between_changes`). The alert
    names the change point's run as its first night, belongs to the alert group of its series' newest run, and is
    the change point's alert. A suspected, untriaged alert of the series before it is dismissed: the scan of the
    whole history places the change elsewhere. Returns the alerts opened. A fixed number of queries, whatever the
    number of change points."""
    points = [point for point in points if point.alert_id is None and point.retracted_at is None
              and point.ci_low is not None and point.ci_high is not None and point.pvalue is not None
              and point.pvalue < SERIES_LEVEL]
    if not points:
        return []
    points = list(ChangePoint.objects.filter(pk__in=[point.pk for point in points]).select_related(
        "metric__benchmark__project", "run"))
    keys = {(point.metric_id, point.machine_id) for point in points}
    on_series = Q()
    for metric_id, machine_id in keys:
        on_series |= Q(metric_id=metric_id, run__machine_id=machine_id)
    # Every series' nights (its results, oldest first) and its alerts' first nights: two queries.
    nights: dict[tuple[int, int], list[tuple[int, int, float]]] = defaultdict(list)  # → (run, result, mean)
    for metric_id, machine_id, run_id, result_id, mean, offset in Result.objects.filter(
            on_series, series_nights("run__"), run__project_id=F("metric__benchmark__project_id"),
    ).order_by("run__started_at", "run_id").values_list("metric_id", "run__machine_id", "run_id", "pk", "mean",
                                                        "environment_offset"):
        # The means as the shift tests and the scan read them: the night's machine environment divided out.
        nights[metric_id, machine_id].append((run_id, result_id, mean * stats.without_environment(offset)))
    alerted: dict[tuple[int, int], list[int]] = defaultdict(list)
    # The alerts that stand as changes (baselines.is_change), by first night and whether still suspected and
    # untriaged: a change point after such an alert settles it (below), so it bounds none of its segments.
    changes: dict[tuple[int, int], list[tuple[int, bool]]] = defaultdict(list)
    for metric_id, machine_id, first, state, status in Alert.objects.filter(
            series_nights("first_run__"), comparison__candidate__metric_id__in={metric_id for metric_id, _ in keys},
            ).values_list(
            "comparison__candidate__metric_id", "first_run__machine_id", "first_run_id", "state", "status"):
        alerted[metric_id, machine_id].append(first)
        if is_change(state, status):
            changes[metric_id, machine_id].append(
                (first, state == AlertState.SUSPECTED and status in UNTRIAGED))
    opened: list[tuple[ChangePoint, Comparison, Alert, int]] = []  # with the newest run of its series
    superseded = Q(pk__in=[])
    for point in points:
        metric = point.metric
        verdict = _change_point_verdict(point.ci_low, point.ci_high, point.ratio, point.pvalue, metric)
        series = [run_id for run_id, _, _ in nights[point.metric_id, point.machine_id]]
        position = {run_id: index for index, run_id in enumerate(series)}  # a run's index among the series' nights
        if verdict not in NIGHTLY_ALERTS or point.run_id not in position:
            continue
        at = position[point.run_id]
        known = [position[first] for first in alerted[point.metric_id, point.machine_id] if first in position]
        # Only the series' newest change is alerted as suspected: before an alerted one, the nightly test already
        # watches the newest segment, and the scan's placement of an earlier change is not news (measured: a
        # machine-wide move at 3% placed 6 nights early by the scan, a second alert of the series).
        if verdict in (SUSPECTED_REGRESSION, SUSPECTED_IMPROVEMENT) and any(index > at for index in known):
            continue
        # The segments either side: up to the next change, from the one before that this change point does not
        # settle. Measured: bounded at a false suspected alert 6 nights before a real step, the step's interval
        # reached into the band and it was never alerted (benchmarks/nightly_detection.py --scenario two-steps, 3%,
        # seed 15); on the 30 nights since the change before, a regression.
        bounds = [position[first] for first, suspected in changes[point.metric_id, point.machine_id]
                  if first in position and not (suspected and position[first] < at)]
        if len(series) - at > CHANGE_POINT_NIGHTS or any(abs(index - at) <= MATCH_NIGHTS for index in known) or \
                not _between_changes(point, [mean for _, _, mean in nights[point.metric_id, point.machine_id]],
                                     at, bounds, verdict):
            continue
        newest, result_id, _ = nights[point.metric_id, point.machine_id][-1]
        comparison = Comparison(
            candidate_id=result_id, method=ComparisonMethod.CHANGE_POINT, ratio=point.ratio, ci_low=point.ci_low,
            ci_high=point.ci_high, bounded=True, pvalue=point.pvalue, verdict=verdict, threshold=metric.threshold,
            confidence_level=metric.confidence_level,
            inputs={"change_point": point.pk, "first_run": point.run_id, "nights_since": len(series) - at})
        confirmed = verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT)
        alert = Alert(first_run_id=point.run_id, state=AlertState.CONFIRMED if confirmed else AlertState.SUSPECTED,
                      state_note=f"a change point of the daily scan: {verdict}, p = {point.pvalue:.2g} "
                                 "(permutation test)")
        opened.append((point, comparison, alert, newest))
        alerted[point.metric_id, point.machine_id].append(point.run_id)
        # Standing, whatever its state: the settling below reads the alerts stored before this call.
        changes[point.metric_id, point.machine_id].append((point.run_id, False))
        superseded |= Q(comparison__candidate__metric_id=point.metric_id, first_run__machine_id=point.machine_id,
                        first_run__started_at__lt=point.run.started_at)
    # Likewise among those opened here: a later one settles an earlier suspected one, as it settles one stored
    # before.
    newest = {}
    for point, _, _, _ in opened:
        key = (point.metric_id, point.machine_id)
        newest[key] = max(newest.get(key, point.run.started_at), point.run.started_at)
    opened = [(point, comparison, alert, run_id) for point, comparison, alert, run_id in opened
              if alert.state != AlertState.SUSPECTED
              or point.run.started_at == newest[point.metric_id, point.machine_id]]
    if not opened:
        return []
    # A suspected, untriaged alert before a change point the scan places elsewhere is settled by it.
    now = timezone.now()
    placed = {(point.metric_id, point.machine_id): point.run_id for point, _, _, _ in opened}
    settled = []
    for alert in Alert.objects.filter(superseded, series_nights("first_run__"), state=AlertState.SUSPECTED,
                                      status__in=UNTRIAGED).annotate(
            metric_id=F("comparison__candidate__metric_id"), machine_id=F("first_run__machine_id")):
        alert.state, alert.updated_at = AlertState.DISMISSED, now
        alert.state_note = (f"dismissed: the daily scan places the series' change at run "
                            f"#{placed[alert.metric_id, alert.machine_id]}, an alert of its own")
        settled.append(alert)
    Alert.objects.bulk_update(settled, ["state", "state_note", "updated_at"])
    groups = {newest: AlertGroup.objects.get_or_create(run_id=newest)[0]
              for newest in {newest for _, _, _, newest in opened}}
    comparisons = Comparison.objects.bulk_create([comparison for _, comparison, _, _ in opened])
    for (_, _, alert, newest), comparison in zip(opened, comparisons):
        alert.comparison, alert.evidence, alert.group = comparison, comparison, groups[newest]
    created = Alert.objects.bulk_create([alert for _, _, alert, _ in opened])
    for (point, _, _, _), alert in zip(opened, created):
        point.alert = alert
    ChangePoint.objects.bulk_update([point for point, _, _, _ in opened], ["alert"])
    for group in groups.values():
        gather_incidents(group.run)
        ids = [alert.pk for alert in created if alert.group_id == group.pk]
        transaction.on_commit(lambda group_id=group.pk, ids=ids: _announce(group_id, ids))
    return created


def _between_changes(point: ChangePoint, means: list[float], at: int, bounds: list[int], verdict: str) -> bool:
    """Whether a change point is a change of its own between the series' changes (``bounds``: indexes of their
    first nights in ``means``, the series' night means oldest first): its nights up to the next change, pooled
    against those since the one before (spec §8's comparison of the two adjacent segments), still give ``verdict``
    at the series' level. The scan's segments end at its own change points only; one that straddles an alerted step
    carries that step's size (measured: a scan placed a machine-wide step 6 nights early, at +6.5% where its own
    nights held +3.0%, and opened a second alert; benchmarks/nightly_detection.py --scenario machine-wide, 3%,
    seed 29)."""
    after = min((index for index in bounds if index > at), default=len(means))
    before = max((index for index in bounds if index < at), default=0)
    if after == len(means) and before == 0:
        return True
    if at - before < 2 or after - at < 1:
        return False
    window = stats.align_modes(np.array(means[before:after], dtype=float), tested=after - at).values  # within modes
    found = stats.shift_since(window, after - at, history=SHIFT_HISTORY, confidence=point.metric.confidence_level)
    if found.start < 0 or not found.pvalue < SERIES_LEVEL:
        return False
    return _change_point_verdict(found.low, found.high, found.ratio, found.pvalue, point.metric) == verdict


def _change_point_verdict(low: float, high: float, ratio: float, pvalue: float, metric: Metric) -> str:
    """A change's verdict in its series (spec §7, §8): beyond the band, or suspected where its interval reaches
    into it and it is significant at the series' level."""
    verdict = str(stats.verdict(low, high, threshold=metric.threshold, direction=metric.direction))
    return series_verdict(verdict, ratio=ratio, pvalue=pvalue, threshold=metric.threshold,
                          direction=metric.direction)


def _announce(group_id: int, alert_ids: list[int]) -> None:
    """After commit: notify the project, and tell the apps built on results (the runner confirms)."""
    queue.enqueue(queue.NOTIFY_ALERT_GROUP, group_id)
    alerts_opened.send(sender=AlertGroup, group_id=group_id, alert_ids=alert_ids)
