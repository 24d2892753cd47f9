"""The alert triage page: alerts grouped per run, filters as permalinks, status changes with a note,
their history, and the confirmation sessions that re-measured them."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from results import alerts, comparisons
from results.models import Alert, AlertEvent, Run
from runner import services as runner_services
from runner.models import Session, SessionStatus
from tests.factories import ProjectFactory
from tests.factories import posted_run

pytestmark = pytest.mark.django_db


class Undelivered:
    def apply_async(self, *args, **kwargs):
        return None


def regressed_run(benchmarks=("sort",), factor: float = 1.2) -> Run:
    """Ten steady nights, then one where every benchmark is `factor` slower: one alert each."""
    for night in range(10):
        posted_run(night, dict.fromkeys(benchmarks, 1.0), sd=0.002)
    run = posted_run(10, dict.fromkeys(benchmarks, factor), sd=0.002)
    comparisons.compare_run(run_id=run.pk)
    return run


def logged_in(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def test_alerts_are_listed_per_run_with_change_p_q_status_and_links():
    run = regressed_run(("sort", "hash"))
    alert = Alert.objects.select_related("comparison__candidate").get(comparison__candidate__metric__benchmark__name="sort")

    html = Client().get("/alerts/").content.decode()

    assert html.count('class="alert-group"') == 1 and html.count('class="alert-row"') == 2
    assert f'<a href="/runs/{run.pk}/">Run #{run.pk}</a>' in html
    row = html[html.index(f'id="alert-{alert.pk}"'):]
    row = row[:row.index("</tr>")]
    assert "sort" in row and "▲ regression" in row and "verdict-regression" in row
    assert "+20." in row and "% [+" in row
    assert f'href="/history/{alert.comparison.candidate.metric_id}/?machine=bench-1"' in row
    assert "New" in row and "Log in</a> to triage" in row


def test_filters_are_get_parameters_so_every_view_is_a_permalink(user):
    regressed_run()
    alert = Alert.objects.get()
    alerts.set_alert_status(alert=alert, status="fixed", user=user)
    ProjectFactory(name="Other", slug="other")

    assert 'class="alert-row"' in Client().get("/alerts/?status=fixed").content.decode()
    assert "No alerts match these filters." in Client().get("/alerts/?status=new").content.decode()
    assert 'class="alert-row"' in Client().get("/alerts/?project=demo&status=fixed").content.decode()
    html = Client().get("/alerts/?project=other").content.decode()
    assert "No alerts match these filters." in html
    assert '<option value="other" selected>' in html


def test_a_user_changes_a_status_with_a_note_and_sees_its_history(user):
    regressed_run()
    alert = Alert.objects.get()
    client = logged_in(user)

    response = client.post("/alerts/?status=new", {"alert": alert.pk, "status": "acknowledged", "note": "bisecting"})

    assert response.status_code == 302 and response["Location"] == f"/alerts/?status=new#alert-{alert.pk}"
    alert.refresh_from_db()
    assert (alert.status, alert.updated_by) == ("acknowledged", user)
    html = client.get("/alerts/").content.decode()
    assert f"Alert #{alert.pk} is now Acknowledged." in html
    history = html[html.index('class="alert-history"'):]
    assert user.username in history and "New → <strong>Acknowledged</strong>: “bisecting”" in history


def test_anonymous_visitors_cannot_triage_and_a_bad_status_changes_nothing(user):
    regressed_run()
    alert = Alert.objects.get()

    response = Client().post("/alerts/", {"alert": alert.pk, "status": "fixed"})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    response = logged_in(user).post("/alerts/", {"alert": alert.pk, "status": "gone"}, follow=True)
    assert "Choose a status" in response.content.decode()

    assert Alert.objects.get().status == "new" and not AlertEvent.objects.exists()


def test_an_unknown_alert_is_404(user):
    assert logged_in(user).post("/alerts/", {"alert": 999, "status": "fixed"}).status_code == 404


def test_triage_needs_the_csrf_token(user):
    regressed_run()
    alert = Alert.objects.get()
    client = logged_in(user, enforce_csrf_checks=True)
    assert 'name="csrfmiddlewaretoken"' in client.get("/alerts/").content.decode()

    response = client.post("/alerts/", {"alert": alert.pk, "status": "fixed"})

    assert response.status_code == 403
    assert Alert.objects.get().status == "new"


def test_reading_follows_the_public_read_setting(settings, user):
    regressed_run()
    settings.PILOTWEB_PUBLIC_READ = False

    response = Client().get("/alerts/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert 'class="alert-row"' in logged_in(user).get("/alerts/").content.decode()


def test_confirmation_sessions_are_shown_with_their_outcome(staff, monkeypatch):
    monkeypatch.setattr("runner.tasks.run_session", Undelivered())
    run = regressed_run()
    runner_services.create_job(user=staff, project=run.project, name="sort", benchmark="sort", machine=run.machine,
                               workload_kind="builtin", builtin="sort")
    alert = Alert.objects.get()
    [session] = runner_services.confirm_alerts(alert_ids=[alert.pk])
    Session.objects.filter(pk=session.pk).update(status=SessionStatus.RESOLVED, outcome={
        "message": "The difference is resolved.",
        "comparisons": [{"metric": "time", "better": "baseline", "worse": "candidate", "better_mean": 1.0,
                         "worse_mean": 1.2, "pvalue": 0.0001, "overlap": False, "resolved": True}]})

    html = Client().get("/alerts/").content.decode()

    confirmations = html[html.index('class="alert-confirmations"'):]
    assert f'href="/jobs/sessions/{session.pk}/">Session #{session.pk}</a>' in confirmations
    assert "difference resolved" in confirmations and "The difference is resolved." in confirmations
    # A session stored before the anytime rule reads as decided by Pilot's rule.
    assert "baseline vs candidate +20.0% [unbounded]: <strong>baseline better than candidate</strong>" in confirmations
    assert "Pilot&#x27;s rule" in confirmations


def test_undecided_confirmations_claim_no_direction(staff, monkeypatch):
    monkeypatch.setattr("runner.tasks.run_session", Undelivered())
    run = regressed_run()
    runner_services.create_job(user=staff, project=run.project, name="sort", benchmark="sort", machine=run.machine,
                               workload_kind="builtin", builtin="sort")
    [session] = runner_services.confirm_alerts(alert_ids=[Alert.objects.get().pk])
    pair = {"metric": "time", "first": "candidate", "second": "baseline", "first_mean": 1.0, "second_mean": 1.01,
            "ratio": 1.01, "ratio_low": 0.97, "ratio_high": 1.05, "pvalue": 0.41, "overlap": True,
            "decision": "undecided", "rule": "anytime"}
    Session.objects.filter(pk=session.pk).update(status=SessionStatus.UNRESOLVED, outcome={
        "message": "No difference resolved within budget.", "comparisons": [pair]})

    html = Client().get("/alerts/").content.decode()

    confirmations = html[html.index('class="alert-confirmations"'):]
    assert "candidate vs baseline +1.0% [-3.0%, +5.0%]: <strong>no difference resolved</strong>" in confirmations
    assert "better than" not in confirmations and "anytime-valid" in confirmations


def test_the_alerts_page_issues_a_fixed_number_of_queries(user, staff):
    def triaged_page(benchmarks):
        Run.objects.all().delete()
        regressed_run(benchmarks)
        for alert in Alert.objects.all():
            alerts.set_alert_status(alert=alert, status="acknowledged", note="looking", user=user)
        with CaptureQueriesContext(connection) as queries:
            html = logged_in(staff).get("/alerts/").content.decode()
        assert html.count('class="alert-row"') == len(benchmarks)
        return len(queries)

    assert triaged_page(["a", "b"]) == triaged_page(["a", "b", "c", "d", "e", "f"])


def test_benchmark_names_and_notes_are_escaped(user):
    regressed_run(("<img src=x onerror=alert(1)>",))
    alerts.set_alert_status(alert=Alert.objects.get(), status="invalid", note="<script>bad()</script>",
                                 user=user)

    html = Client().get("/alerts/").content.decode()

    assert "<img src=x" not in html and "<script>bad()" not in html
    assert "&lt;script&gt;bad()&lt;/script&gt;" in html


def test_the_alerts_api_issues_a_fixed_number_of_queries_with_the_confirmation_sessions(api, staff, monkeypatch):
    monkeypatch.setattr("runner.tasks.run_session", Undelivered())

    def listed(benchmarks):
        Run.objects.all().delete()
        run = regressed_run(benchmarks)
        for benchmark in benchmarks:
            runner_services.create_job(user=staff, project=run.project, name=f"{benchmark} of {len(benchmarks)}",
                                       benchmark=benchmark,
                                       machine=run.machine, workload_kind="builtin", builtin="sort")
        sessions = runner_services.confirm_alerts(alert_ids=list(Alert.objects.values_list("pk", flat=True)))
        api.get("/api/v1/alerts")  # the token's use is recorded once a minute: not by the request measured
        with CaptureQueriesContext(connection) as queries:
            body = api.get("/api/v1/alerts").json()
        assert len(body["items"]) == len(benchmarks) == len(sessions)
        assert sorted(session for item in body["items"] for session in item["confirmation_sessions"]) == sorted(
            session.pk for session in sessions)
        return len(queries)

    assert listed(["a", "b"]) == listed(["a", "b", "c", "d", "e", "f"])
