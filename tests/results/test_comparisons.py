"""Stored runs compared: nightly against history, pull requests against their base, alerts, notifications."""

from datetime import timedelta

import numpy as np
import pytest
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext

from results import comparisons, decisions, notifications, pairwise_rows, services, triage
from results.models import Alert, AlertGroup, Comparison, ComparisonMethod, Project, Run, Verdict
from results.schemas import RunIn
from results.stored_rows import stored_rows
from tests.factories import NIGHT_ZERO, UserFactory, compared_run, posted_run
from tests.processes import RecordingServer

pytestmark = pytest.mark.django_db



def verdicts(run: Run, method: str = "history") -> dict[str, str]:
    return {c.candidate.metric.benchmark.name: c.verdict
            for c in Comparison.objects.filter(candidate__run=run, method=method)
            .select_related("candidate__metric__benchmark")}


def test_a_nightly_is_compared_with_the_last_k_nights_and_naively_with_the_previous_one():
    history = [posted_run(night, {"steady": 1.0}) for night in range(12)]
    tonight = posted_run(12, {"steady": 1.0})

    comparisons.compare_run(run_id=tonight.pk)

    history_comparison = Comparison.objects.get(candidate__run=tonight, method="history")
    assert history_comparison.inputs["history_runs"] == [run.pk for run in history[::-1][:10]]
    assert history_comparison.qvalue is not None and history_comparison.pvalue is not None
    previous = Comparison.objects.get(candidate__run=tonight, method="previous")
    assert previous.baseline.run == history[-1]
    assert Run.objects.get(pk=tonight.pk).compared_at is not None


def test_every_verdict_path_of_a_nightly():
    for night in range(10):
        posted_run(night, {"regressed": 1.0, "improved": 1.0, "same": 1.0, "noisy": 1.0}, sd=0.002)
    posted_run(9, {"noisy": 1.0}, sd=0.3, seed=99, commit="f" * 40)
    tonight = posted_run(10, {"regressed": 1.10, "improved": 0.90, "same": 1.0, "noisy": 1.02, "new": 1.0}, sd=0.002)

    comparisons.compare_run(run_id=tonight.pk)

    assert verdicts(tonight) == {"regressed": "regression", "improved": "improvement", "same": "no change",
                                 "noisy": "inconclusive", "new": "insufficient history"}


def test_a_higher_is_better_metric_mirrors_the_verdict():
    for night in range(10):
        posted_run(night, {"throughput": 100.0}, sd=0.002, direction="higher_is_better")
    tonight = posted_run(10, {"throughput": 90.0}, sd=0.002, direction="higher_is_better")

    comparisons.compare_run(run_id=tonight.pk)

    assert verdicts(tonight) == {"throughput": "regression"}


def test_an_unbounded_ratio_is_stored_without_limits_and_its_verdict_drawn_from_significance():
    """The baseline's mean is not distinguishable from zero, so the ratio has no interval; Welch's test still
    says the means differ, and the point estimate is far beyond the band: suspected (spec §7)."""
    for night in range(-3, 1):
        compared_run(night, {"tiny": 0.001}, sd=50.0, n=3, seed=night % 4, commit=f"{night + 3:040x}")
    pull = posted_run(1, {"tiny": 1.0}, kind="pr", branch="feature", base_commit=f"{3:040x}")

    comparisons.compare_run(run_id=pull.pk)

    comparison = Comparison.objects.get(candidate__run=pull)
    assert comparison.qvalue < 0.05
    assert (comparison.method, comparison.bounded, comparison.verdict) == ("pairwise", False, "suspected regression")
    assert comparison.ci_low is None and comparison.ci_high is None


def test_a_pull_request_is_compared_with_its_base_commit_and_opens_alerts_on_regressions():
    for night in range(5):
        compared_run(night, {"sort": 1.0, "hash": 1.0}, sd=0.002)
    pull = posted_run(6, {"sort": 1.08, "hash": 1.0}, sd=0.002, kind="pr", branch="feature",
                    base_commit=f"{2:040x}")

    comparisons.compare_run(run_id=pull.pk)

    compared = Comparison.objects.filter(candidate__run=pull).select_related("baseline__run")
    assert {c.baseline.run.revision.commit for c in compared} == {f"{2:040x}"}
    assert verdicts(pull, "pairwise") == {"sort": "regression", "hash": "no change"}
    alert = Alert.objects.get()
    assert alert.group.run == pull and alert.status == "new"


def test_comparing_again_replaces_the_earlier_comparisons():
    for night in range(4):
        posted_run(night, {"a": 1.0})
    tonight = posted_run(4, {"a": 1.0})

    comparisons.compare_run(run_id=tonight.pk)
    comparisons.compare_run(run_id=tonight.pk)

    assert Comparison.objects.filter(candidate__run=tonight).count() == 3  # history, previous, shift


def test_the_number_of_queries_does_not_grow_with_the_number_of_series():
    def queries(series: int) -> int:
        names = {f"b{series}-{i}": 1.0 for i in range(series)}
        for night in range(4):
            posted_run(night, names)
        tonight = posted_run(4, names)
        with CaptureQueriesContext(connection) as captured:
            comparisons.compare_run(run_id=tonight.pk)
        Run.objects.all().delete()
        Project.objects.all().delete()
        return len(captured)

    # (Far larger runs add only the batches of the bulk insert.)
    assert queries(3) == queries(20)


def test_q_values_control_the_false_discovery_rate_across_a_run():
    names = {f"b{i}": 1.0 for i in range(50)}
    for night in range(10):
        posted_run(night, names)
    tonight = posted_run(10, names)

    comparisons.compare_run(run_id=tonight.pk)

    rows = Comparison.objects.filter(candidate__run=tonight, method="history")
    pvalues = np.array([c.pvalue for c in rows])
    qvalues = np.array([c.qvalue for c in rows])
    assert np.all(qvalues >= pvalues - 1e-12)
    # Benjamini–Hochberg by hand: q_(i) = min over j >= i of p_(j) m / j.
    order = np.argsort(pvalues)
    ranked = pvalues[order] * len(pvalues) / np.arange(1, len(pvalues) + 1)
    expected = np.minimum.accumulate(ranked[::-1])[::-1].clip(max=1)
    np.testing.assert_allclose(qvalues[order], expected)


def test_a_group_of_alerts_is_notified_once_by_email_and_webhook(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.PILOTWEB_WEBHOOK_ALLOW_PRIVATE = True  # the receiver listens on loopback
    with RecordingServer(lambda request: (204, {}, b"")) as server:
        for night in range(10):
            posted_run(night, {"sort": 1.0, "hash": 1.0}, sd=0.002)
        Project.objects.update(notify_emails="perf@example.com, lead@example.com", webhook_url=f"{server.url}/hook")
        tonight = posted_run(10, {"sort": 1.2, "hash": 1.3}, sd=0.002)
        comparisons.compare_run(run_id=tonight.pk)
        group = AlertGroup.objects.get()

        notifications.notify_alert_group(group_id=group.pk)
        notifications.notify_alert_group(group_id=group.pk)

    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["perf@example.com", "lead@example.com"]
    assert "2 regression(s)" in mail.outbox[0].subject
    [received] = server.json_bodies()
    assert {alert["benchmark"] for alert in received["alerts"]} == {"sort", "hash"}
    assert AlertGroup.objects.get().notified_at is not None


def test_runs_never_compared_are_found_by_the_catch_up_task():
    run = posted_run(0, {"a": 1.0})
    Run.objects.filter(pk=run.pk).update(created_at=NIGHT_ZERO)

    assert comparisons.pending_runs() == [run.pk]
    comparisons.compare_run(run_id=run.pk)
    assert comparisons.pending_runs() == []


def test_triaging_an_alert_records_who_when_and_why(maintainer):
    for night in range(10):
        posted_run(night, {"sort": 1.0}, sd=0.002)
    comparisons.compare_run(run_id=posted_run(10, {"sort": 1.2}, sd=0.002).pk)
    alert = Alert.objects.get()

    triage.set_alert_status(alert=alert, status="acknowledged", note="bisecting", user=maintainer)
    triage.set_alert_status(alert=alert, status="fixed", note="reverted in #42", user=maintainer)

    alert.refresh_from_db()
    assert (alert.status, alert.updated_by) == ("fixed", maintainer)
    assert [(e.old_status, e.new_status, e.note) for e in alert.events.all()] == [
        ("new", "acknowledged", "bisecting"), ("acknowledged", "fixed", "reverted in #42")]


def test_an_unknown_status_or_an_anonymous_user_changes_nothing(maintainer):
    from django.contrib.auth.models import AnonymousUser
    from django.core.exceptions import PermissionDenied, ValidationError

    for night in range(10):
        posted_run(night, {"sort": 1.0}, sd=0.002)
    comparisons.compare_run(run_id=posted_run(10, {"sort": 1.2}, sd=0.002).pk)
    alert = Alert.objects.get()

    with pytest.raises(ValidationError, match="Choose one of"):
        triage.set_alert_status(alert=alert, status="gone", user=maintainer)
    with pytest.raises(PermissionDenied):
        triage.set_alert_status(alert=alert, status="fixed", user=AnonymousUser())
    with pytest.raises(PermissionDenied, match="needs a member with the role maintainer"):
        triage.set_alert_status(alert=alert, status="fixed", user=UserFactory())
    assert Alert.objects.get().status == "new" and not alert.events.exists()


def test_a_regression_schedules_a_confirmation_session_when_a_job_exists(staff, django_capture_on_commit_callbacks):
    from runner import services as runner_services
    from runner.models import Session

    for night in range(10):
        posted_run(night, {"sort": 1.0}, sd=0.002)
    run = posted_run(10, {"sort": 1.2}, sd=0.002)
    runner_services.create_job(user=staff, project=run.project, name="sort", benchmark="sort", machine=run.machine,
                               workload_kind="builtin", builtin="sort")

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        comparisons.compare_run(run_id=run.pk)
        runner_services.confirm_alerts(alert_ids=list(Alert.objects.values_list("pk", flat=True)))
    # The alert signal and the change-point check (after commit), and the confirmation session's enqueue.
    assert len(callbacks) == 3

    session = Session.objects.get()
    assert session.trigger == "confirmation" and session.confirms == Alert.objects.get()
    assert [r["label"] for r in session.revisions] == ["baseline", "candidate"]
    assert session.revisions[1]["commit"] == run.revision.commit
    assert session.revisions[0]["commit"] == f"{9:040x}"


def test_scheduling_confirmations_reads_a_constant_number_of_times_whatever_the_number_of_alerts(staff):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from runner import services as runner_services

    def reads_for(names: list[str], project: str) -> int:
        for night in range(10):
            posted_run(night, dict.fromkeys(names, 1.0), sd=0.002, project=project)
        run = posted_run(10, dict.fromkeys(names, 1.2), sd=0.002, project=project)
        for name in names:
            runner_services.create_job(user=staff, project=run.project, name=name, benchmark=name,
                                       machine=run.machine, workload_kind="builtin", builtin="sort")
        comparisons.compare_run(run_id=run.pk)
        ids = list(Alert.objects.filter(comparison__candidate__run=run).values_list("pk", flat=True))
        with CaptureQueriesContext(connection) as queries:
            sessions = runner_services.confirm_alerts(alert_ids=ids)
        assert len(ids) == len(sessions) == len(names)
        return sum(query["sql"].lstrip().upper().startswith("SELECT") for query in queries.captured_queries)

    assert reads_for(["a", "b"], "Two") == reads_for([f"s{i}" for i in range(6)], "Six")


def test_a_pull_request_with_raw_samples_also_gets_a_seeded_hierarchical_bootstrap():
    def run_with_samples(night, scale, kind="nightly", branch="main", base_commit=""):
        samples = (scale * (1 + np.random.default_rng(night).normal(0, 0.01, (6, 10)))).tolist()
        document = RunIn.model_validate({
            "project": {"name": "Demo"}, "machine": {"name": "bench-1"}, "kind": kind,
            "revision": {"commit": f"{night:040x}", "branch": branch, "base_commit": base_commit},
            "started_at": NIGHT_ZERO + timedelta(days=night),
            "results": [{"benchmark": "sort", "samples": samples}]})
        return services.ingest_run(document=document, user=None).run

    run_with_samples(0, 1.0)
    pull = run_with_samples(1, 1.05, kind="pr", branch="feature", base_commit=f"{0:040x}")

    comparisons.compare_run(run_id=pull.pk)
    first = Comparison.objects.get(candidate__run=pull, method="bootstrap")
    comparisons.compare_run(run_id=pull.pk)
    again = Comparison.objects.get(candidate__run=pull, method="bootstrap")

    assert (first.ci_low, first.ci_high) == (again.ci_low, again.ci_high)
    assert first.ci_low < first.ratio < first.ci_high
    # Beyond the band within the two runs, but one run against one run decides nothing without the run-to-run
    # noise (spec §8): the row says what the resampling alone would have said.
    assert first.verdict == "inconclusive" and first.inputs["within_runs"] == "regression"
    (shown,) = [row for row in stored_rows([(first.candidate, first)]) if row.method == "bootstrap"]
    assert shown.note == comparisons.BOOTSTRAP_WITHIN_RUNS
    # Close to the t interval of the ratio of the process means (6 units a side).
    fieller = Comparison.objects.get(candidate__run=pull, method="pairwise")
    assert abs(first.ci_low - fieller.ci_low) < 0.02 and abs(first.ci_high - fieller.ci_high) < 0.02


@pytest.mark.parametrize(("candidate_shape", "baseline_shape"), [((1, 10), (6, 10)), ((6, 10), (1, 10)),
                                                                 ((1, 10), (1, 10)), ((6, 10), (6, 1))])
def test_a_pull_request_with_one_unit_at_a_level_is_compared_and_the_bootstrap_skip_is_stated(
        candidate_shape, baseline_shape):
    def run_with_samples(night, scale, shape, kind="nightly", branch="main", base_commit=""):
        samples = (scale * (1 + np.random.default_rng(night).normal(0, 0.01, shape))).tolist()
        document = RunIn.model_validate({
            "project": {"name": "Demo"}, "machine": {"name": "bench-1"}, "kind": kind,
            "revision": {"commit": f"{night:040x}", "branch": branch, "base_commit": base_commit},
            "started_at": NIGHT_ZERO + timedelta(days=night), "results": [{"benchmark": "sort", "samples": samples}]})
        return services.ingest_run(document=document, user=None).run

    run_with_samples(0, 1.0, baseline_shape)
    pull = run_with_samples(1, 1.05, candidate_shape, kind="pr", branch="feature", base_commit=f"{0:040x}")

    comparisons.compare_run(run_id=pull.pk)

    pull.refresh_from_db()
    assert pull.compared_at is not None and pull.pk not in comparisons.pending_runs(older_than=timedelta(0))
    skipped = Comparison.objects.get(candidate__run=pull, method="bootstrap")
    assert skipped.verdict == "inconclusive" and not skipped.bounded and skipped.ci_low is None
    assert "fewer than 2 units at a level" in skipped.inputs["skipped"]
    assert skipped.ratio == pytest.approx(1.05, rel=0.02)


def test_groups_never_notified_are_found_by_the_catch_up_task(django_capture_on_commit_callbacks):
    for night in range(10):
        posted_run(night, {"sort": 1.0}, sd=0.002)
    run = posted_run(10, {"sort": 1.2}, sd=0.002)
    with django_capture_on_commit_callbacks(execute=False):
        comparisons.compare_run(run_id=run.pk)

    group = AlertGroup.objects.get()
    AlertGroup.objects.filter(pk=group.pk).update(created_at=NIGHT_ZERO)
    assert notifications.pending_groups() == [group.pk]


def test_an_unreachable_broker_is_logged_not_raised(caplog):
    from celery import Celery

    from results.queue import enqueue

    nowhere = Celery("nowhere", broker="redis://127.0.0.1:1/0", set_as_current=False)

    @nowhere.task(name="tests.nowhere")
    def nothing() -> None:
        """A task no worker will ever see."""

    assert enqueue(nothing) is False
    assert "Broker unreachable" in caplog.text


def test_the_pure_row_builders_name_the_stored_methods_and_verdicts():
    # results.pairwise_rows and results.nightly_rows name methods and verdicts without the models: the same strings.
    assert (pairwise_rows.METHOD_HISTORY, pairwise_rows.METHOD_SHIFT, pairwise_rows.METHOD_PAIRWISE) == (
        ComparisonMethod.HISTORY, ComparisonMethod.SHIFT, ComparisonMethod.PAIRWISE)
    assert list(Verdict.values) == list(decisions.VERDICTS)
