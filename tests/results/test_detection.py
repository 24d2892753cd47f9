"""Accumulating detection (spec §7, §8), end to end through ingestion and the comparison service: seeded
nightly histories for every path a shift can take, from its first night to its settlement."""

from datetime import timedelta

import numpy as np
import pytest
from scipy import stats

from results import comparisons, confirmations
from results.triage import set_alert_status
from results.stored_rows import stored_rows
from results.models import Alert, AlertState, ChangePoint, Comparison, Run
from results.presentation import evidence
from results.stats import recent_shift
from tests.factories import NIGHT_ZERO, post_results

pytestmark = pytest.mark.django_db

WITHIN_SD = 0.03
READINGS = 30


def nightly(levels: dict[str, np.ndarray], *, seed: int, first: int = 0, last: int | None = None,
            readings: int = READINGS) -> list[Run]:
    """Post and compare nights ``first … last − 1`` of each series: its night's level (run-to-run noise and any
    shift included) times readings with a within-run sd of 3% (`readings` 1: one value per night)."""
    rng = np.random.default_rng(seed)
    runs = []
    for night in range(first, last if last is not None else len(next(iter(levels.values())))):
        results = []
        for name, level in levels.items():
            values = level[night] * (1.0 + rng.normal(0.0, WITHIN_SD, readings))
            variance = float(values.var(ddof=1)) if readings > 1 else 0.0
            results.append({"benchmark": name, "summary": {"mean": float(values.mean()), "subsession_size": 1,
                                                           "variance": variance, "n": readings}})
        run = post_results(results, night=night)
        comparisons.compare_run(run_id=run.pk)
        runs.append(run)
    return runs


def levels(nights: int, *, sd: float, seed: int, shift: np.ndarray | None = None) -> np.ndarray:
    level = 1.0 + np.random.default_rng(seed).normal(0.0, sd, nights)
    return level if shift is None else level + shift


def alerts_of(name: str) -> list[Alert]:
    return list(Alert.objects.filter(comparison__candidate__metric__benchmark__name=name)
                .select_related("first_run__revision", "comparison__candidate__run__revision").order_by("pk"))


def opened_on(alert: Alert) -> int:
    return int(alert.comparison.candidate.run.revision.commit, 16)


def first_night(alert: Alert) -> int:
    return int(alert.first_run.revision.commit, 16)


def step(nights: int, at: int, size: float) -> np.ndarray:
    return np.where(np.arange(nights) >= at, size, 0.0)


def flat_series(count: int, nights: int, *, sd: float, seed: int) -> dict[str, np.ndarray]:
    return {f"flat {i}": levels(nights, sd=sd, seed=seed + i) for i in range(count)}


def test_a_step_is_alerted_within_nights_naming_its_first_night_and_never_absorbed():
    """A 5% step at a run-to-run sd of 1.5%, which one night's interval (±3.8%) cannot see for sure: the
    nights since are pooled, the alert names the step's night, and the nights after it never become the
    baseline of the old level (once confirmed, they are the new level)."""
    series = {"step": levels(34, sd=0.015, seed=4, shift=step(34, 24, 0.05)), **flat_series(5, 34, sd=0.015, seed=40)}
    nightly(series, seed=104)

    (alert,) = alerts_of("step")
    assert 24 <= opened_on(alert) <= 26 and abs(first_night(alert) - 24) <= 1
    assert alert.comparison.method == "shift" and alert.comparison.qvalue < 0.05
    # The flat series (120 series-nights): none confirmed; tonight's own test (a Shewhart limit, at half the
    # series' level) opens one on a night of flat 1, which the nights after it dismiss.
    flat = Alert.objects.exclude(pk=alert.pk)
    assert [(a.comparison.candidate.metric.benchmark.name, a.state) for a in flat] == [("flat 1", "dismissed")]
    assert alert.state == AlertState.CONFIRMED
    history = latest("step", "history")
    assert min(nights_of(history.inputs["history_runs"])) >= first_night(alert)
    assert history.verdict in ("no change", "inconclusive", "insufficient history")


def test_a_suspected_shift_pools_evidence_until_it_is_confirmed():
    """A 4% step at a run-to-run sd of 1.5% is first only suspected: significant, its interval crossing
    1 + θ. Its nights stay out of the baseline while each later night adds to the nights pooled, until the
    interval lies beyond the band."""
    series = {"step": levels(45, sd=0.015, seed=5, shift=step(45, 26, 0.04)), **flat_series(3, 45, sd=0.015, seed=50)}
    runs = nightly(series, seed=205, last=30)

    (alert,) = alerts_of("step")
    assert alert.comparison.verdict == "suspected regression" and first_night(alert) == 26 and opened_on(alert) == 28
    assert Comparison.objects.get(pk=alert.evidence_id).candidate.run == runs[-1]  # night 29's evidence added
    assert max(nights_of(latest("step", "history").inputs["history_runs"])) < 26  # night 29: kept out

    nightly(series, seed=205, first=30, last=38)
    alert.refresh_from_db()
    assert alert.state == AlertState.CONFIRMED and alert.state_note.startswith("confirmed: ")
    pooled = [len(c.inputs["pooled_runs"]) for c in Comparison.objects.filter(
        candidate__metric__benchmark__name="step", method="shift", inputs__carried=True,
        candidate__run__started_at__gt=runs[-1].started_at).order_by("candidate__run__started_at")]
    assert pooled == list(range(pooled[0], pooled[0] + len(pooled)))  # one more night each night
    assert alerts_of("step") == [alert]  # carried, never opened again


def test_a_slow_drift_over_several_nights_is_alerted():
    drift = np.clip(np.arange(40) - 22, 0, 8) * 0.008  # +0.8% a night for 8 nights: +6.4%
    series = {"drift": levels(40, sd=0.01, seed=2, shift=drift), **flat_series(3, 40, sd=0.01, seed=20)}
    nightly(series, seed=402)

    alert, *later = alerts_of("drift")
    # A drift has no one first night: the night its change is named by (re-estimated as the nights come) lies
    # within it, a night or so after it began (23).
    assert opened_on(alert) == 26 and first_night(alert) in (24, 25, 26) and alert.state == AlertState.CONFIRMED
    # The level goes on moving for four nights after: that may be a change of its own, never one the other way.
    assert all(first_night(more) > first_night(alert) and more.comparison.verdict == alert.comparison.verdict
               for more in later)


def test_a_bimodal_flat_series_raises_no_alert():
    """Each night lands in one of two modes 4% apart (a flat series with bimodal noise): no shift, although
    a level's first nights often all fall in one mode (why a shift is tested against 10 nights at least)."""
    rng = np.random.default_rng(2)
    series = {f"bimodal {i}": 1.0 + 0.04 * rng.integers(0, 2, 40) + rng.normal(0, 0.003, 40) for i in range(4)}
    nightly(series, seed=302)

    assert Alert.objects.count() == 0
    early = Comparison.objects.filter(method="shift", candidate__run__started_at__lt=NIGHT_ZERO + timedelta(days=10))
    assert set(early.values_list("verdict", flat=True)) == {"insufficient history"}


def test_one_value_per_night_is_compared_on_the_run_to_run_spread_alone():
    series = {"single": levels(30, sd=0.01, seed=1, shift=step(30, 20, 0.06)), **flat_series(3, 30, sd=0.01, seed=10)}
    nightly(series, seed=501, readings=1)

    history = latest("single", "history")
    assert history.ratio is not None and history.pvalue is not None
    row = stored_rows([(history.candidate, history)])[0]
    assert "one value per night, so the run-to-run spread alone" in row.note
    alert, *later = alerts_of("single")
    assert (first_night(alert), opened_on(alert), alert.state) == (20, 21, AlertState.CONFIRMED)
    # Night 23 lies 3.5 nightly sd above the new level: its own suspected alert at most (0.5% a series-night
    # may be), never a second confirmed change, nor one whose first night drifts past the night it was raised.
    assert all(more.state == AlertState.SUSPECTED and first_night(more) <= opened_on(more) for more in later)


def test_a_large_step_is_alerted_on_its_first_night_by_tonights_own_test():
    """A 3% step at a night-to-night sd of about 0.8% (a browser's CI series): the scan of fourteen first nights
    adjusts tonight's p-value out of reach, tonight alone at half the series' level (scipy's t test of it
    against the 30 nights before, p × 2 = 0.0047) finds it: alerted the morning after."""
    series = {"step": levels(40, sd=0.006, seed=4, shift=step(40, 30, 0.03))}
    nightly(series, seed=104, last=31)

    (alert,) = alerts_of("step")
    assert (first_night(alert), opened_on(alert)) == (30, 30)
    inputs = alert.comparison.inputs
    assert inputs["newest_weight"] == 0.5 and inputs["nights_since"] == 1 and len(inputs["history_runs"]) == 30
    means = [run.results.get().mean for run in Run.objects.order_by("started_at")]
    own = stats.ttest_ind(means[30:], means[:30]).pvalue
    assert alert.comparison.pvalue == pytest.approx(own / 0.5, rel=1e-9) and alert.comparison.pvalue < 0.01
    assert recent_shift(means, history=30, recent=14, min_history=10, clip=3.5).pvalue > 0.01  # the scan alone
    row = stored_rows([(alert.comparison.candidate, alert.comparison)])[0]
    assert "tonight alone, tested at 0.5 of the series' level: p ×2" in row.note
    (test,) = [text for label, text in evidence(row) if label == "Test"]
    assert ("tonight alone against the nights before it, beside the scan of the 13 first nights before tonight: "
            "its own p ×2") in test
    nightly(series, seed=104, first=31)
    assert alerts_of("step")[0].state == AlertState.CONFIRMED


def test_a_shift_dismissed_in_triage_gives_its_nights_back_and_is_not_raised_again(maintainer):
    """A one-night spike of 10% opens a suspected alert (a single night, or a spike and a normal night, is
    never a confirmed level). A person marks it invalid: the nights since its first one rejoin the baseline,
    and no shift starting at or before its first night is tried again (a real shift beginning the night after
    it still can be: the one-night outlier must not become a later step's first night, issue 29)."""
    spike = np.where(np.arange(36) == 25, 0.10, 0.0)
    series = {"spike": levels(36, sd=0.01, seed=1, shift=spike), **flat_series(4, 36, sd=0.01, seed=10)}
    nightly(series, seed=301, last=28)
    (alert,) = alerts_of("spike")
    assert (first_night(alert), alert.state) == (25, AlertState.SUSPECTED)
    assert max(nights_of(latest("spike", "history").inputs["history_runs"])) < 25
    set_alert_status(alert=alert, status="invalid", note="a noisy machine",
                     user=maintainer)
    nightly(series, seed=312, first=28)

    assert alerts_of("spike") == [alert]
    assert {25, 26, 27} <= set(nights_of(latest("spike", "history").inputs["history_runs"]))
    assert all(int(Run.objects.get(pk=c.inputs["first_run"]).revision.commit, 16) > 25
               for c in Comparison.objects.filter(candidate__metric__benchmark__name="spike", method="shift",
                                                  candidate__run__started_at__gte=NIGHT_ZERO + timedelta(days=28))
               if c.inputs.get("first_run"))


def suspected_step_with_change_point(size: float, *, until: int, change_point: int) -> tuple[dict, list[Run], Alert]:
    """A series that steps by `size` at night 26 among three flat ones, its nights before `until` compared: its
    alert (suspected, naming night 26), after which a scan's change point is stored at `change_point`."""
    series = {"step": levels(45, sd=0.015, seed=5, shift=step(45, 26, size)), **flat_series(3, 45, sd=0.015, seed=50)}
    runs = nightly(series, seed=205, last=until)
    (alert,) = alerts_of("step")
    assert alert.state == AlertState.SUSPECTED and first_night(alert) == 26
    ChangePoint.objects.create(metric=alert.comparison.candidate.metric, machine=runs[change_point].machine,
                               run=runs[change_point], ratio=1.0 + size, pvalue=0.001)
    return series, runs, alert


def test_a_change_point_at_a_suspected_shift_accepts_it_as_the_new_level():
    """Spec §8: a suspected shift is resolved by a confirmed change point too; the nights since it are then the
    series' level, no longer kept out."""
    series, runs, alert = suspected_step_with_change_point(0.04, until=29, change_point=26)
    nightly(series, seed=205, first=29, last=30)

    assert min(nights_of(latest("step", "history").inputs["history_runs"])) == 26  # the new level
    shift = latest("step", "shift")  # the alert's evidence still pools since its first night
    assert shift.inputs["carried"] and shift.inputs["first_run"] == runs[26].pk


def test_a_change_point_a_few_nights_off_settles_a_suspected_shift_without_splitting_it():
    """The scan's segments are 5 nights at least, so its night can lie a few nights before the alert's: the
    change is settled, keeps the alert's first night, and is not found again inside its own nights (which
    closed the alert as "no change of its own" and opened a second one for the same step: four alerts, three
    dismissed, for one step, before the fix)."""
    series, _, alert = suspected_step_with_change_point(0.10, until=27, change_point=23)
    nightly(series, seed=205, first=27, last=36)

    (settled,) = alerts_of("step")
    assert (settled.pk, first_night(settled), settled.state) == (alert.pk, 26, AlertState.CONFIRMED)


def latest(name: str, method: str) -> Comparison:
    return Comparison.objects.filter(candidate__metric__benchmark__name=name, method=method).latest(
        "candidate__run__started_at")


def nights_of(run_ids: list[int]) -> list[int]:
    return [int(commit, 16) for commit in Run.objects.filter(pk__in=run_ids).values_list("revision__commit", flat=True)]


def confirmation_runs(baseline_level: float, candidate_level: float, *, night: int, seed: int) -> tuple[Run, Run]:
    """An interleaved A/B session's two runs of one benchmark: 40 readings each, within-run sd 1%."""
    rng = np.random.default_rng(seed)
    runs = []
    for label, level in (("baseline", baseline_level), ("candidate", candidate_level)):
        runs.append(post_results([{"benchmark": "step", "samples": (level * (1 + rng.normal(0, 0.01, 40))).tolist()}],
                                 night=night, kind="confirmation", commit=f"{night:040x}"[:-1] + label[0]))
    return runs[0], runs[1]


@pytest.mark.parametrize(("candidate_level", "decision", "state", "note"), [
    (1.06, confirmations.PairDecision("different", 1.06, 1.04, 1.08, 0.001, "anytime"), AlertState.CONFIRMED,
     "confirmed by session #77: +6.0% [+4.0%, +8.0%], p = 0.001 (anytime), a regression"),
    (1.0, confirmations.PairDecision("equivalent", 1.001, 0.99, 1.012, 1.0, "anytime"), AlertState.DISMISSED,
     "dismissed by session #77: +0.1% [-1.0%, +1.2%]"),
    (0.95, confirmations.PairDecision("different", 0.95, 0.93, 0.97, 0.002, "anytime"), AlertState.DISMISSED,
     "dismissed by session #77: -5.0% [-7.0%, -3.0%], p = 0.002 (anytime), an improvement"),
    (1.01, confirmations.PairDecision("undecided", 1.01, 0.97, 1.05, 0.4, "anytime"), AlertState.SUSPECTED,
     "not settled by session #77"),
])
def test_a_confirmation_session_confirms_or_dismisses_a_suspected_alert(candidate_level, decision, state, note):
    series = {"step": levels(45, sd=0.015, seed=4, shift=step(45, 26, 0.04)), **flat_series(3, 45, sd=0.015, seed=40)}
    nightly(series, seed=204, last=32)
    (alert,) = alerts_of("step")
    assert alert.state == AlertState.SUSPECTED

    baseline, candidate = confirmation_runs(1.0, candidate_level, night=29, seed=4)
    confirmations.settle_alert(alert_id=alert.pk, session_id=77, decision=decision)

    alert.refresh_from_db()
    assert alert.state == state and alert.state_note.startswith(note)
    assert not Comparison.objects.filter(candidate__run__in=[baseline, candidate]).exists()  # not nights


def test_a_confirmation_session_without_a_run_of_a_revision_leaves_the_alert_and_says_why():
    series = {"step": levels(45, sd=0.015, seed=4, shift=step(45, 26, 0.04)), **flat_series(3, 45, sd=0.015, seed=40)}
    nightly(series, seed=204, last=32)
    (alert,) = alerts_of("step")
    confirmation_runs(1.0, 1.06, night=32, seed=5)

    confirmations.settle_alert(alert_id=alert.pk, session_id=78, decision=None)

    alert.refresh_from_db()
    assert alert.state == AlertState.SUSPECTED
    assert alert.state_note == "not settled by session #78: no valid measurement of both revisions of time of step"
