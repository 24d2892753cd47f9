"""The alert triage page: alerts grouped per run, filters as permalinks, status changes with a note,
their history, and the confirmation sessions that re-measured them."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from django.core.exceptions import ValidationError

from django.contrib.auth.models import AnonymousUser

from results import comparisons, selectors, triage
from results.models import Alert, AlertEvent, ChangeKind, ChangePoint, ComparisonMethod, Project, Run
from runner import services as runner_services
from runner.models import Session, SessionStatus
from tests.factories import ComparisonFactory, ProjectFactory, UserFactory
from tests.factories import compared_run, posted_run

pytestmark = pytest.mark.django_db


class Undelivered:
    def apply_async(self, *args, **kwargs):
        return None


def regressed_run(benchmarks=("sort",), factor: float = 1.2, *, machine: str = "bench-1", night: int = 10) -> Run:
    """`night` steady nights, then one where every benchmark is `factor` slower: one alert each."""
    for earlier in range(night):
        posted_run(earlier, dict.fromkeys(benchmarks, 1.0), sd=0.002, machine=machine)
    run = posted_run(night, dict.fromkeys(benchmarks, factor), sd=0.002, machine=machine)
    comparisons.compare_run(run_id=run.pk)
    return run


def logged_in(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def test_alerts_are_listed_per_run_with_change_p_q_status_and_links():
    run = regressed_run(("sort", "hash"))
    alert = Alert.objects.select_related("comparison__candidate").get(
        comparison__candidate__metric__benchmark__name="sort")

    html = Client().get("/alerts/").content.decode()

    assert html.count('class="alert-group"') == 1 and html.count('class="alert-row"') == 2
    assert f'<a href="/runs/{run.pk}/">Run #{run.pk}</a>' in html
    row = html[html.index(f'id="alert-{alert.pk}"'):]
    row = row[:row.index("</tr>")]
    assert "sort" in row and "▲ regression" in row and "verdict-regression" in row
    assert "+20." in row and "% [+" in row
    assert f'href="/history/{alert.comparison.candidate.metric_id}/?machine=bench-1"' in row
    assert "New" in row and "Log in</a> to triage" in row
    # The links say what they lead to; how the change was found is said in words, with the evidence.
    links = row[row.index('<td class="links">'):]
    assert f">run #{run.pk}</a>" in links and ">history</a>" in links and ">last good vs first bad</a>" in links
    assert "vs shift" not in links and "vs history" not in links
    assert "found by the nights since a recent shift against the nights before it" in html


def test_an_alert_whose_change_point_reads_as_a_drift_says_so():
    """Its own change point, or the scan's at its first night (which a confirmed alert records none beside)."""
    regressed_run(("sort", "hash", "load"))
    own, scans, stepped = (Alert.objects.select_related("first_run").get(
        comparison__candidate__metric__benchmark__name=name) for name in ("sort", "hash", "load"))
    for alert, kind, linked in ((own, ChangeKind.DRIFT, True), (scans, ChangeKind.DRIFT, False),
                                (stepped, ChangeKind.STEP, True)):
        ChangePoint.objects.create(metric_id=alert.comparison.candidate.metric_id, machine=alert.first_run.machine,
                                   run=alert.first_run, ratio=1.2, alert=alert if linked else None, kind=kind,
                                   drift_per_night=0.004 if kind == ChangeKind.DRIFT else None)

    html = Client().get("/alerts/").content.decode()

    def section(alert):  # its row and its details, up to the next alert's row
        part = html[html.index(f'id="alert-{alert.pk}"'):]
        following = part.find('id="alert-', 1)
        return part if following < 0 else part[:following]

    for alert in (own, scans):
        assert "its change point reads as a drift: the level moves +0.40% a night, no step at its night" in section(
            alert)
    assert "a drift" not in section(stepped)


def test_two_alerts_beginning_on_one_night_each_say_their_own_change_points_reading():
    """A change point at an alert's first night that another alert holds is that alert's reading, not this one's."""
    regressed_run(("sort",))
    first = Alert.objects.select_related("first_run", "comparison__candidate").get()
    candidate = first.comparison.candidate
    second = Alert.objects.create(group=first.group, first_run=first.first_run, comparison=ComparisonFactory(
        candidate=candidate, method=ComparisonMethod.CHANGE_POINT, verdict="regression"))
    later = posted_run(11, {"sort": 1.3}, sd=0.002)
    for alert, run, rate in ((first, first.first_run, 0.004), (second, later, 0.009)):
        ChangePoint.objects.create(metric_id=candidate.metric_id, machine=first.first_run.machine, run=run, ratio=1.2,
                                   alert=alert, kind=ChangeKind.DRIFT, drift_per_night=rate)

    said = {alert.pk: alert.drift_per_night for alert in selectors.alerts(viewer=AnonymousUser())}

    assert said == {first.pk: 0.004, second.pk: 0.009}


def test_the_night_that_opened_an_alert_flags_it_on_the_overview_and_in_the_history_table():
    """The rows show the night against its history; the alert comes from the shift test of the nights since, and
    each row says that its night opened one."""
    regressed_run(("sort",))
    alert = Alert.objects.select_related("comparison__candidate").get()
    metric = alert.comparison.candidate.metric_id

    overview = Client().get("/").content.decode()
    table = Client().get(f"/history/{metric}/?table=1").content.decode()

    assert f'href="/alerts/#alert-{alert.pk}"' in overview and f"alert #{alert.pk} · New" in overview
    assert f'#alert-{alert.pk}">alert #{alert.pk} · New</a>' in table


def test_alerts_are_listed_newest_night_first_whenever_their_nights_were_posted():
    regressed_run(("sort",), machine="bench-1", night=14)
    regressed_run(("sort",), machine="bench-2", night=10)  # an older night, imported after the newer one

    listed = [alert.group.run.machine.name for alert in selectors.alerts(viewer=AnonymousUser())]

    assert listed == ["bench-1", "bench-2"]


def test_filters_are_get_parameters_so_every_view_is_a_permalink(maintainer):
    regressed_run()
    alert = Alert.objects.get()
    triage.set_alert_status(alert=alert, status="fixed", user=maintainer)
    ProjectFactory(name="Other", slug="other")

    assert 'class="alert-row"' in Client().get("/alerts/?status=fixed").content.decode()
    assert "No alerts match these filters." in Client().get("/alerts/?status=new").content.decode()
    assert 'class="alert-row"' in Client().get("/alerts/?project=demo&status=fixed").content.decode()
    html = Client().get("/alerts/?project=other").content.decode()
    assert "No alerts match these filters." in html
    # The project filter is a text field suggesting projects (a select of thousands of projects took pages down).
    assert 'name="project" value="other"' in html and 'data-suggest="projects"' in html


def test_a_user_changes_a_status_with_a_note_and_sees_its_history(maintainer):
    regressed_run()
    alert = Alert.objects.get()
    client = logged_in(maintainer)

    response = client.post("/alerts/?status=new", {"alert": alert.pk, "status": "acknowledged", "note": "bisecting"})

    assert response.status_code == 302 and response["Location"] == f"/alerts/?status=new#alert-{alert.pk}"
    alert.refresh_from_db()
    assert (alert.status, alert.updated_by) == ("acknowledged", maintainer)
    html = client.get("/alerts/").content.decode()
    assert f"Alert #{alert.pk} is now Acknowledged." in html
    history = html[html.index('class="alert-history"'):]
    assert maintainer.username in history and "New → <strong>Acknowledged</strong>: “bisecting”" in history


def test_anonymous_visitors_cannot_triage_and_a_bad_status_changes_nothing(maintainer):
    regressed_run()
    alert = Alert.objects.get()

    response = Client().post("/alerts/", {"alert": alert.pk, "status": "fixed"})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    response = logged_in(maintainer).post("/alerts/", {"alert": alert.pk, "status": "gone"}, follow=True)
    assert "Not changed: status: Select a valid choice." in response.content.decode()

    assert Alert.objects.get().status == "new" and not AlertEvent.objects.exists()


def test_an_unknown_alert_is_404(maintainer):
    assert logged_in(maintainer).post("/alerts/", {"alert": 999, "status": "fixed"}).status_code == 404


@pytest.mark.parametrize("field", ["alert", "incident"])
def test_an_alert_or_incident_number_beyond_any_row_is_refused_not_looked_up(maintainer, field):
    response = logged_in(maintainer).post("/alerts/", {field: 2**63, "status": "fixed"}, follow=True)

    assert response.status_code == 200
    assert f"Not changed: {field}: Ensure this value is less than or equal to" in response.content.decode()


def test_triage_needs_the_csrf_token(maintainer):
    regressed_run()
    alert = Alert.objects.get()
    client = logged_in(maintainer, enforce_csrf_checks=True)
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


def test_the_alerts_page_issues_a_fixed_number_of_queries(maintainer, staff):
    def triaged_page(benchmarks):
        Run.objects.all().delete()
        regressed_run(benchmarks)
        for alert in Alert.objects.all():
            triage.set_alert_status(alert=alert, status="acknowledged", note="looking", user=maintainer)
        with CaptureQueriesContext(connection) as queries:
            html = logged_in(staff).get("/alerts/").content.decode()
        assert html.count('class="alert-row"') == len(benchmarks)
        return len(queries)

    assert triaged_page(["a", "b"]) == triaged_page(["a", "b", "c"])
    # Many series at once make a machine-wide incident: a few queries more for it, whatever its size.
    assert triaged_page(list("abcdef")) == triaged_page(list("abcdefghijkl"))


def test_benchmark_names_and_notes_are_escaped(maintainer):
    regressed_run(("<img src=x onerror=alert(1)>",))
    triage.set_alert_status(alert=Alert.objects.get(), status="invalid", note="<script>bad()</script>",
                                 user=maintainer)

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


# Commit ranges, bug links and assignees, the same shift on several machines.

GITHUB = "https://github.com/acme/tool"


def test_an_alert_shows_its_last_good_and_first_bad_commits_with_links_to_compare_them():
    for night in range(10):
        posted_run(night, {"sort": 1.0}, sd=0.002)
    posted_run(9, {"sort": 1.3}, sd=0.002, seed=90, branch="feature", commit="f" * 40)  # not the series
    run = posted_run(10, {"sort": 1.2}, sd=0.002)
    comparisons.compare_run(run_id=run.pk)
    Project.objects.update(repository_url=GITHUB)
    last_good = Run.objects.get(revision__commit=f"{9:040x}")
    good, bad = f"{9:040x}", f"{10:040x}"

    html = Client().get("/alerts/").content.decode()

    commits = html[html.index('class="alert-commits"'):]
    commits = commits[:commits.index("</div>")]
    assert (f'last good <a class="commit" href="{GITHUB}/commit/{good}" rel="noreferrer">'
            f'<code title="{good}">{good[:12]}</code></a>') in commits
    assert f'first bad <a class="commit" href="{GITHUB}/commit/{bad}"' in commits
    assert f'href="{GITHUB}/compare/{good}...{bad}"' in commits
    assert f'href="/compare/?baseline={last_good.pk}&amp;candidate={run.pk}"' in html


def test_a_pull_requests_alert_ranges_from_its_base_to_its_head():
    for night in range(3):
        compared_run(night, {"sort": 1.0}, sd=0.002)
    base = compared_run(3, {"sort": 1.0}, sd=0.002, commit="b" * 40)
    head = posted_run(4, {"sort": 1.2}, sd=0.002, kind="pr", branch="feature", commit="c" * 40, base_commit="b" * 40)
    comparisons.compare_run(run_id=head.pk)
    Project.objects.update(repository_url="https://gitlab.example.org/acme/tool")

    html = Client().get("/alerts/").content.decode()

    assert 'href="https://gitlab.example.org/acme/tool/-/compare/' + "b" * 40 + "..." + "c" * 40 + '"' in html
    assert f'href="/compare/?baseline={base.pk}&amp;candidate={head.pk}"' in html
    assert "pull request" in html[html.index('class="alert-group"'):]


def test_a_user_sets_the_bug_link_and_the_assignee_and_lists_the_alerts_assigned_to_them(maintainer):
    regressed_run(("sort", "hash"))
    sort, hashing = (Alert.objects.get(comparison__candidate__metric__benchmark__name=name)
                     for name in ("sort", "hash"))
    client = logged_in(maintainer)

    response = client.post("/alerts/?status=new", {"alert": sort.pk, "status": "acknowledged", "note": "",
                                                   "bug_url": "https://bugs.example.org/42", "assignee": maintainer.pk})

    assert response.status_code == 302 and response["Location"] == f"/alerts/?status=new#alert-{sort.pk}"
    sort.refresh_from_db()
    assert (sort.status, sort.bug_url, sort.assignee, sort.updated_by) == (
        "acknowledged", "https://bugs.example.org/42", maintainer, maintainer)
    html = client.get("/alerts/").content.decode()
    assert f"Alert #{sort.pk} is now Acknowledged, assigned to {maintainer.username}." in html
    row = html[html.index(f'id="alert-{sort.pk}"'):]
    row = row[:row.index("</tr>")]
    assert '<a class="bug-link" href="https://bugs.example.org/42"' in row and f"assigned to {maintainer.username}" in row
    assert 'value="https://bugs.example.org/42"' in row and f'<option value="{maintainer.pk}" selected>' in row

    mine = client.get("/alerts/?mine=on").content.decode()
    assert mine.count('class="alert-row"') == 1 and f'id="alert-{sort.pk}"' in mine
    anonymous = Client().get("/alerts/?mine=on").content.decode()
    assert "Log in to see the alerts assigned to you." in anonymous and anonymous.count('class="alert-row"') == 2
    assert 'name="mine"' not in anonymous

    # A status alone (the API's form of triage) keeps the bug link and the assignee.
    client.post("/alerts/", {"alert": sort.pk, "status": "fixed"})
    sort.refresh_from_db()
    assert (sort.status, sort.bug_url, sort.assignee) == ("fixed", "https://bugs.example.org/42", maintainer)
    # Emptied in the form: none.
    client.post("/alerts/", {"alert": sort.pk, "status": "fixed", "bug_url": "", "assignee": ""})
    sort.refresh_from_db()
    assert (sort.bug_url, sort.assignee) == ("", None)
    assert hashing.assignee is None


def test_a_bad_bug_link_or_assignee_changes_nothing(maintainer):
    regressed_run()
    alert = Alert.objects.get()
    gone = UserFactory(is_active=False)
    client = logged_in(maintainer)

    for wrong in ({"bug_url": "javascript:alert(1)"}, {"assignee": gone.pk}, {"assignee": 9999}):
        response = client.post("/alerts/", {"alert": alert.pk, "status": "fixed", **wrong}, follow=True)
        assert "Not changed:" in response.content.decode()
    with pytest.raises(ValidationError, match="active users"):
        triage.triage_alert(alert=alert, status="fixed", assignee=gone, user=maintainer)
    with pytest.raises(ValidationError, match="http"):
        triage.triage_alert(alert=alert, status="fixed", bug_url="ftp://bugs.example.org/1", user=maintainer)

    alert.refresh_from_db()
    assert (alert.status, alert.bug_url, alert.assignee) == ("new", "", None) and not AlertEvent.objects.exists()


def test_the_same_shift_on_several_machines_is_shown_together_with_the_machines_listed():
    tonight = [regressed_run(("sort", "hash") if machine == "bench-1" else ("sort",), machine=machine)
               for machine in ("bench-1", "bench-2")]
    # A night later on a third machine: the same shift ("a day or so"), raised in another night's section.
    late = regressed_run(("sort",), machine="bench-3", night=11)
    # Four nights later on a fourth: another shift.
    regressed_run(("sort",), machine="bench-4", night=14)
    sort = {alert.first_run.machine.name: alert
            for alert in Alert.objects.filter(comparison__candidate__metric__benchmark__name="sort")}

    html = Client().get("/alerts/").content.decode()

    assert html.count('class="alert-group"') == 3
    night = html[html.index('id="alerts-demo-2026-10-10"'):]
    night = night[:night.index("</section>")]
    assert all(f'<a href="/runs/{run.pk}/">Run #{run.pk}</a> on {run.machine.name}' in night for run in tonight)
    [together] = [body for body in night.split("<tbody")[1:] if "shift-head" in body]
    assert "sort · time: the same shift on 3 machines (bench-1, bench-2, bench-3)" in together
    assert f'bench-3: <a href="#alert-{sort["bench-3"].pk}">alert #{sort["bench-3"].pk}</a> (New)' in together
    assert together.count('class="alert-row"') == 2
    assert together.index(f'id="alert-{sort["bench-1"].pk}"') < together.index(f'id="alert-{sort["bench-2"].pk}"')
    assert "hash" not in together and night.count("shift-head") == 1
    later = html[html.index('id="alerts-demo-2026-10-11"'):]
    assert f'<a href="/runs/{late.pk}/">Run #{late.pk}</a>' in later[:later.index("</section>")]
    assert "the same shift on 3 machines (bench-1, bench-2, bench-3)" in later[:later.index("</section>")]
    apart = html[html.index('id="alerts-demo-2026-10-14"'):]
    assert "shift-head" not in apart[:apart.index("</section>")]
