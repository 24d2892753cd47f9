"""The jobs pages: list with schedules and live progress, the staff-only form, run now, cancel, a session."""

import re
from html import unescape
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from results.models import Machine
from runner import services
from runner.models import Job, Round, Session, SessionStatus
from tests.factories import MachineFactory, ProjectFactory, RunFactory, UserFactory

pytestmark = pytest.mark.django_db

PROGRESS = {"rounds_done": 7, "elapsed": 30.0, "estimated_remaining": 10.0,
            "metrics": [{"workload": "A", "metric": "time", "relative_width": 0.14, "target_width": 0.1,
                         "converged": False}]}


class Undelivered:
    def apply_async(self, *args, **kwargs):
        return None


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    """Sessions are queued, never delivered: there is no broker in these tests."""
    monkeypatch.setattr("runner.tasks.run_session", Undelivered())


@pytest.fixture
def project():
    return ProjectFactory(name="Demo", slug="demo")


@pytest.fixture
def machine():
    return MachineFactory(name="bench-1")


@pytest.fixture
def job(staff, project, machine):
    return services.create_job(user=staff, cron="0 2 * * *", project=project, name="nightly sort",
                               benchmark="sort 100k", machine=machine, workload_kind="builtin", builtin="sort")


def logged_in(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def form_data(project, machine, **overrides) -> dict:
    data = {
        "project": project.pk, "name": "hash", "benchmark": "sha256 64 MiB", "machine": machine.pk, "enabled": "on",
        "workload_kind": "builtin", "builtin": "sha256", "parameters": "", "command": "", "setup_command": "",
        "working_directory": "", "environment": "", "reading_mode": "wall_time", "metrics": "", "component": "",
        "confidence_level": "0.95", "target_width": "10", "max_autocorrelation": "0.1", "work_min": "1",
        "work_max": "64", "min_round_duration": "0.05", "round_timeout": "300", "budget_seconds": "600",
        "budget_rounds": "1000", "warmup": "edm", "overhead_rounds": "0", "cron": "30 3 * * 1-5",
        "comparison_rule": "anytime", "comparison_alpha": "0.01", "comparison_threshold": "0.02",
        "require_width_in_comparison": "on",
    }
    return {**data, **overrides}


def field_errors(html: str, field: str) -> str:
    """The error list rendered next to one field of the job form."""
    match = re.search(rf'<div class="field has-error[^"]*" id="field-{field}">(.*?)</div>\s*'
                      r'(?=<div class="field|</fieldset)', html, re.DOTALL)
    assert match, f"no error shown next to {field}"
    return match.group(1)


# --- the list ------------------------------------------------------------------------------------


def test_the_jobs_page_lists_machine_workload_schedule_and_last_session(job, staff):
    session = services.start_session(job=job, user=staff)
    Session.objects.filter(pk=session.pk).update(status=SessionStatus.CONVERGED)

    html = Client().get("/jobs/").content.decode()

    row = html[html.index(f'id="job-{job.pk}"'):]
    assert "nightly sort" in row and "sort 100k" in row and "bench-1" in row and "<code>sort</code>" in row
    assert '<span class="cron" title="cron: 0 2 * * *">At 02:00 AM UTC</span>' in row
    assert f'href="/jobs/sessions/{session.pk}/"' in row and "converged (CI within target)" in row
    assert "No session is queued or running." in html


def test_a_running_session_shows_its_progress_bar_polling_the_api(job, staff):
    session = services.start_session(job=job, user=staff)
    Session.objects.filter(pk=session.pk).update(status=SessionStatus.RUNNING, progress=PROGRESS)

    html = Client().get("/jobs/").content.decode()

    assert f'data-url="/api/v1/sessions/{session.pk}"' in html and 'data-status="running"' in html
    assert 'aria-valuenow="75"' in html and "width: 75%" in html
    assert "7 rounds · 30 s elapsed · ~10 s left" in html
    assert ">14.0%<" in html and ">10.0%<" in html and "… narrowing" in html
    assert "runner/progress.js" in html


def test_a_queued_session_shows_an_indeterminate_bar(job, staff):
    services.start_session(job=job, user=staff)

    html = Client().get("/jobs/").content.decode()

    assert 'data-status="queued"' in html and "bar indeterminate" in html
    assert "0 rounds · waiting for a worker" in html


def test_only_staff_see_the_create_run_and_cancel_buttons(job, user, staff):
    services.start_session(job=job, user=staff)
    for client, expected in ((Client(), False), (logged_in(user), False), (logged_in(staff), True)):
        html = client.get("/jobs/").content.decode()
        assert ("New job" in html) is expected
        assert ("Run now" in html) is expected
        assert (">Cancel<" in html) is expected
        assert (f"/jobs/{job.pk}/edit/" in html) is expected


def test_reading_follows_the_public_read_setting(settings, job, user):
    settings.PILOTWEB_PUBLIC_READ = False
    session = services.start_session(job=job, user=job.created_by)

    for path in ("/jobs/", f"/jobs/sessions/{session.pk}/"):
        response = Client().get(path)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
        assert logged_in(user).get(path).status_code == 200

    settings.PILOTWEB_PUBLIC_READ = True
    assert Client().get("/jobs/").status_code == 200


def test_the_jobs_page_issues_a_fixed_number_of_queries(staff, project, machine):
    def add_jobs(start, stop):
        for index in range(start, stop):
            job = services.create_job(user=staff, cron=f"{index} 2 * * *", project=project, name=f"job {index}",
                                      benchmark="sort", machine=machine, workload_kind="builtin", builtin="sort")
            session = services.start_session(job=job, user=staff)
            Session.objects.filter(pk=session.pk).update(status=SessionStatus.RUNNING, progress=PROGRESS)

    add_jobs(0, 2)
    with CaptureQueriesContext(connection) as few:
        assert Client().get("/jobs/").status_code == 200
    add_jobs(2, 8)
    with CaptureQueriesContext(connection) as many:
        html = Client().get("/jobs/").content.decode()

    assert html.count("data-session-progress") == 8
    assert len(many) == len(few)


# --- create and edit -----------------------------------------------------------------------------


def test_anonymous_visitors_are_sent_to_log_in_and_users_get_403_on_the_form(job, user):
    for path in ("/jobs/new/", f"/jobs/{job.pk}/edit/"):
        response = Client().get(path)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
        assert logged_in(user).get(path).status_code == 403


def test_staff_create_a_scheduled_job_through_the_form(staff, project, machine):
    client = logged_in(staff)
    assert client.get("/jobs/new/").status_code == 200

    response = client.post("/jobs/new/", form_data(project, machine, environment="A=1\nB = two=2\n"))

    assert response.status_code == 302 and response["Location"] == "/jobs/"
    job = Job.objects.get(name="hash")
    assert (job.builtin, job.work_max, job.created_by, job.environment) == ("sha256", 64, staff,
                                                                           {"A": "1", "B": " two=2"})
    crontab = job.schedule.crontab
    assert (crontab.minute, crontab.hour, crontab.day_of_week) == ("30", "3", "1-5")
    assert "created and scheduled" in client.get("/jobs/").content.decode()


def test_staff_create_a_command_job_with_lines(staff, project, machine):
    response = logged_in(staff).post("/jobs/new/", form_data(
        project, machine, workload_kind="command", builtin="sha256", cron="",
        command="python3\nbench.py\n--n={work_amount}\n", setup_command="git\ncheckout\n{revision}",
        environment="PYTHONHASHSEED=0", reading_mode="json_lines",
        metrics="time,s,lower_is_better\nops, 1/s, higher_is_better"))

    assert response.status_code == 302
    job = Job.objects.get(name="hash")
    assert job.command == ["python3", "bench.py", "--n={work_amount}"]
    assert job.setup_command == ["git", "checkout", "{revision}"]
    assert job.builtin == "" and job.schedule is None
    assert job.metrics == [{"name": "time", "unit": "s", "direction": "lower_is_better"},
                           {"name": "ops", "unit": "1/s", "direction": "higher_is_better"}]


@pytest.mark.parametrize(("overrides", "field", "message"), [
    ({"cron": "0 2 * *"}, "cron", "five fields"),
    ({"cron": "61 2 * * *"}, "cron", "Invalid schedule: the minute “61” is not valid; the minute takes 0-59,"),
    ({"cron": "0 2 * * foo"}, "cron", "the day of week “foo” is not valid; the day of week takes 0-6 or sun-sat"),
    ({"builtin": "no-such-workload"}, "builtin", "Select a valid choice"),
    ({"workload_kind": "command", "command": "echo\n{home}"}, "command", "home"),
    ({"environment": "A=1\nJUST_A_NAME"}, "environment", "Line 2 (&quot;JUST_A_NAME&quot;) has no &quot;=&quot;"),
    ({"environment": "1X=1"}, "environment", "is not a variable name"),
    ({"workload_kind": "command", "command": "bench", "reading_mode": "json_lines", "metrics": "time"}, "metrics",
     "write name,unit"),
    ({"workload_kind": "command", "command": "bench", "reading_mode": "json_lines",
      "metrics": '[{"name": "t", "unit": "s", "direction": "up"}]'}, "metrics", "direction must be one of"),
    ({"parameters": '{"speed": 2}'}, "parameters", "Unknown parameter"),
    ({"target_width": "500"}, "target_width", "Give at most 50%."),
    ({"target_width": "0.01"}, "target_width", "Give at least 0.1%."),
    ({"confidence_level": "1"}, "confidence_level", "between 0 and 1"),
    ({"comparison_threshold": "2"}, "comparison_threshold", "between 0 and 1"),
    ({"budget_seconds": "0"}, "budget_seconds", "positive number of seconds"),
    ({"overhead_rounds": "1"}, "overhead_rounds", "at least 2 rounds"),
    ({"workload_kind": "command", "command": "python3 bench.py | tee out.txt"}, "command",
     "“|” is a shell operator, but the command is never run through a shell"),
    ({"workload_kind": "command", "command": "bench > out.txt"}, "command", "“&gt;” is a shell operator"),
    ({"workload_kind": "command", "command": "OMP_NUM_THREADS=1 bench"}, "command", "put it in Environment"),
    ({"workload_kind": "command", "command": "bench 'unclosed"}, "command", "no closing quotation"),
    ({"workload_kind": "command", "command": "bench", "setup_command": "git checkout {revision} && make"},
     "setup_command", "“&amp;&amp;” is a shell operator"),
])
def test_invalid_input_is_shown_next_to_its_field_and_nothing_is_written(staff, project, machine, overrides, field,
                                                                         message):
    response = logged_in(staff).post("/jobs/new/", form_data(project, machine, **overrides))

    assert response.status_code == 200
    html = response.content.decode()
    assert "The job was not saved" in html
    assert message in field_errors(html, field)
    assert not Job.objects.exists() and not PeriodicTask.objects.filter(name__startswith="Benchmark job").exists()


def test_an_inverted_work_range_is_shown_next_to_both_work_fields(staff, project, machine):
    html = logged_in(staff).post("/jobs/new/", form_data(project, machine, work_min="100", work_max="10")) \
        .content.decode()

    assert "The job was not saved: see the fields marked below." in html
    for field in ("work_min", "work_max"):
        assert "Work min (100) must be smaller than work max (10)." in field_errors(html, field)
    assert "job_work_range_valid" not in html and "Constraint" not in html
    assert not Job.objects.exists()


def test_a_work_min_of_zero_is_shown_next_to_it(staff, project, machine):
    html = logged_in(staff).post("/jobs/new/", form_data(project, machine, work_min="0")).content.decode()

    assert "Work min must be positive" in field_errors(html, "work_min") and "Constraint" not in html
    assert not Job.objects.exists()


def test_the_target_width_is_typed_and_shown_in_percent(staff, project, machine):
    client = logged_in(staff)
    assert 'name="target_width" value="10"' in client.get("/jobs/new/").content.decode()
    assert "Target CI width (%)" in client.get("/jobs/new/").content.decode()

    assert client.post("/jobs/new/", form_data(project, machine, target_width="2.5")).status_code == 302

    job = Job.objects.get(name="hash")
    assert job.target_width == pytest.approx(0.025)
    assert 'name="target_width" value="2.5"' in client.get(f"/jobs/{job.pk}/edit/").content.decode()


def test_a_command_typed_as_a_shell_line_is_split_into_arguments(staff, project, machine):
    client = logged_in(staff)
    response = client.post("/jobs/new/", form_data(
        project, machine, workload_kind="command", builtin="", cron="",
        command="""python3 /srv/bench.py --label 'two words' --n={work_amount} -- {revision}""", warmup="wps",
        setup_command="git -C /srv/checkout fetch --end-of-options origin {revision}"))

    assert response.status_code == 302
    job = Job.objects.get(name="hash")
    arguments = ["python3", "/srv/bench.py", "--label", "two words", "--n={work_amount}", "--", "{revision}"]
    assert job.command == arguments
    assert job.setup_command == ["git", "-C", "/srv/checkout", "fetch", "--end-of-options", "origin", "{revision}"]
    # Shown back one argument per line, quoted where it must be, so saving it again changes nothing.
    html = client.get(f"/jobs/{job.pk}/edit/").content.decode()
    shown = unescape(re.search(r'<textarea name="command"[^>]*>\n?(.*?)</textarea>', html, re.S).group(1))
    assert shown == "python3\n/srv/bench.py\n--label\n'two words'\n--n={work_amount}\n--\n{revision}"
    client.post(f"/jobs/{job.pk}/edit/", form_data(project, machine, workload_kind="command", builtin="", cron="",
                                                   command=shown))
    job.refresh_from_db()
    assert job.command == arguments


def test_after_an_error_the_form_shows_the_arguments_the_command_splits_into(staff, project, machine):
    html = logged_in(staff).post("/jobs/new/", form_data(
        project, machine, workload_kind="command", builtin="", cron="",
        command="bench --size 'a b' {work_amount}", work_min="5", work_max="1")).content.decode()

    assert not Job.objects.exists()
    preview = html[html.index('id="field-command"'):html.index('id="field-setup_command"')]
    assert "Runs as 4 arguments, without a shell:" in preview
    assert re.findall(r"<li><code>(.*?)</code></li>", preview) == ["bench", "--size", "a b", "{work_amount}"]


def test_the_live_command_preview_is_rendered_by_the_server_for_staff(staff, user):
    url = "/jobs/command-preview/?" + urlencode({"command": "bench --x 'a b' \"\""})

    html = logged_in(staff).get(url).content.decode()

    assert re.findall(r"<li>(.*?)</li>", html) == ["<code>bench</code>", "<code>--x</code>", "<code>a b</code>",
                                                   '<span class="meta">(an empty argument)</span>']
    refused = logged_in(staff).get("/jobs/command-preview/?" + urlencode({"command": "a | b"})).content.decode()
    assert "“|” is a shell operator" in refused and "<li>" not in refused
    assert logged_in(user).get(url).status_code == 403


def test_staff_edit_a_job_and_its_schedule(job, staff, project, machine):
    client = logged_in(staff)
    html = client.get(f"/jobs/{job.pk}/edit/").content.decode()
    assert 'value="0 2 * * *"' in html and 'value="nightly sort"' in html

    response = client.post(f"/jobs/{job.pk}/edit/", form_data(project, machine, name="nightly sort",
                                                                builtin="sort", cron="15 4 * * *"))
    assert response.status_code == 302
    job.refresh_from_db()
    assert (job.builtin, job.schedule.crontab.minute, job.schedule.crontab.hour) == ("sort", "15", "4")

    client.post(f"/jobs/{job.pk}/edit/", form_data(project, machine, name="nightly sort", builtin="sort", cron=""))
    job.refresh_from_db()
    assert job.schedule is None
    assert not PeriodicTask.objects.filter(name__startswith="Benchmark job").exists()


def test_a_failed_edit_changes_neither_the_job_nor_its_schedule(job, staff, project, machine):
    response = logged_in(staff).post(f"/jobs/{job.pk}/edit/", form_data(
        project, machine, name="renamed", builtin="sort", cron="99 * * * *"))

    assert response.status_code == 200 and "the minute “99” is not valid" in field_errors(response.content.decode(),
                                                                                          "cron")
    job.refresh_from_db()
    assert job.name == "nightly sort" and job.schedule.crontab.minute == "0"


def test_users_cannot_create_edit_or_schedule(job, user, project, machine):
    client = logged_in(user)

    assert client.post("/jobs/new/", form_data(project, machine)).status_code == 403
    assert client.post(f"/jobs/{job.pk}/edit/", form_data(project, machine, name="mine", cron="")).status_code == 403
    anonymous = Client().post("/jobs/new/", form_data(project, machine))
    assert anonymous.status_code == 302

    assert list(Job.objects.values_list("name", flat=True)) == ["nightly sort"]
    job.refresh_from_db()
    assert job.schedule.crontab.minute == "0"


# --- run now and cancel --------------------------------------------------------------------------


def test_staff_run_a_job_now_and_land_on_its_session(job, staff, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as enqueued:
        response = logged_in(staff).post(f"/jobs/{job.pk}/run/")

    session = Session.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/sessions/{session.pk}/"
    assert (session.status, session.trigger, session.requested_by) == ("queued", "manual", staff)
    assert len(enqueued) == 1


def test_run_now_is_a_post(job, staff):
    assert logged_in(staff).get(f"/jobs/{job.pk}/run/").status_code == 405
    assert not Session.objects.exists()


def test_users_and_anonymous_visitors_cannot_run_or_cancel(job, user, staff):
    session = services.start_session(job=job, user=staff)

    assert logged_in(user).post(f"/jobs/{job.pk}/run/").status_code == 403
    assert logged_in(user).post(f"/jobs/sessions/{session.pk}/cancel/").status_code == 403
    assert Client().post(f"/jobs/{job.pk}/run/").status_code == 302
    assert Client().post(f"/jobs/sessions/{session.pk}/cancel/").status_code == 302

    assert list(Session.objects.values_list("status", flat=True)) == ["queued"]


def test_staff_cancel_a_queued_session_once_confirmed(job, staff):
    session = services.start_session(job=job, user=staff)

    response = logged_in(staff).post(f"/jobs/sessions/{session.pk}/cancel/", {"confirm": "yes"})

    assert response.status_code == 302
    session.refresh_from_db()
    assert session.status == SessionStatus.CANCELLED


@pytest.mark.parametrize("method", ["get", "post"])
def test_cancelling_without_confirmation_asks_first_and_changes_nothing(job, staff, method):
    session = services.start_session(job=job, user=staff)
    Session.objects.filter(pk=session.pk).update(status=SessionStatus.RUNNING, progress=PROGRESS)

    response = getattr(logged_in(staff), method)(f"/jobs/sessions/{session.pk}/cancel/")

    html = response.content.decode()
    assert response.status_code == 200
    assert f"Cancel session #{session.pk} of “nightly sort”?" in html and "Its running round is stopped now" in html
    assert 'name="confirm" value="yes"' in html and f"Yes, cancel session #{session.pk}" in html
    session.refresh_from_db()
    assert session.status == SessionStatus.RUNNING and not session.cancel_requested


def test_the_cancel_buttons_ask_for_confirmation(job, staff):
    session = services.start_session(job=job, user=staff)
    client = logged_in(staff)

    for path in ("/jobs/", f"/jobs/sessions/{session.pk}/"):
        html = client.get(path).content.decode()
        assert f'data-confirm="Cancel session #{session.pk} of “nightly sort”?' in html
        assert "runner/confirm.js" in html


@pytest.mark.parametrize("path", ["/jobs/new/", "/jobs/{job}/edit/", "/jobs/{job}/run/",
                                  "/jobs/sessions/{session}/cancel/"])
def test_every_write_needs_the_csrf_token(job, staff, project, machine, path):
    session = services.start_session(job=job, user=staff)
    client = logged_in(staff, enforce_csrf_checks=True)

    response = client.post(path.format(job=job.pk, session=session.pk), form_data(project, machine, cron=""))

    assert response.status_code == 403 and b"CSRF" in response.content
    assert Job.objects.count() == 1 and Session.objects.count() == 1
    session.refresh_from_db()
    job.refresh_from_db()
    assert session.status == "queued" and job.schedule is not None


def test_the_form_carries_its_csrf_token(staff):
    html = logged_in(staff, enforce_csrf_checks=True).get("/jobs/new/").content.decode()
    assert 'name="csrfmiddlewaretoken"' in html


# --- a session -----------------------------------------------------------------------------------


def test_the_session_page_shows_progress_rounds_outcome_and_runs(job, staff):
    session = services.start_session(job=job, user=staff)
    for index in range(3):
        Round.objects.create(session=session, index=index, workload="A", work_amount=10 * (index + 1),
                             duration=0.01 if index == 0 else 0.5, readings={"time": 0.002}, analysed=index > 0,
                             monitor={"warnings": ["memory busy (91%)"] if index == 2 else []})
    run = RunFactory(project=job.project, machine=job.machine, kind="manual", revision=None,
                     started_at=session.queued_at)
    session.runs.add(run)
    Session.objects.filter(pk=session.pk).update(
        status=SessionStatus.CONVERGED, progress={**PROGRESS, "rounds_done": 3, "estimated_remaining": 0},
        outcome={"message": "Every metric reached its target width.", "comparisons": []})

    html = Client().get(f"/jobs/sessions/{session.pk}/").content.decode()

    assert "converged (CI within target)" in html and 'aria-valuenow="100"' in html
    assert "Every metric reached its target width." in html
    assert f'href="/runs/{run.pk}/"' in html
    assert html.count("<tr data-index=") == 3 and "no (too short)" in html and "⚠ memory busy (91%)" in html
    assert "0.5000 s" in html
    assert "Cancel session" not in logged_in(staff).get(f"/jobs/sessions/{session.pk}/").content.decode()


def test_a_running_session_offers_cancel_to_staff_only(job, staff, user):
    session = services.start_session(job=job, user=staff)
    Session.objects.filter(pk=session.pk).update(status=SessionStatus.RUNNING, progress=PROGRESS)

    assert "Cancel session" in logged_in(staff).get(f"/jobs/sessions/{session.pk}/").content.decode()
    assert "Cancel session" not in logged_in(user).get(f"/jobs/sessions/{session.pk}/").content.decode()


@pytest.mark.parametrize(("progress", "percent", "figures"), [
    # The estimate alone would say 48% and ~1 min left; the 60 s budget is spent: the session ends with this round.
    ({"rounds_done": 9, "elapsed": 61.0, "estimated_remaining": 66.0}, 100,
     "9 rounds · 1 min 01 s elapsed · budget spent · finishing the round"),
    # Half the budget spent, the estimate says 90 s more: the bar shows the budget, the time left what it leaves.
    ({"rounds_done": 5, "elapsed": 30.0, "estimated_remaining": 90.0}, 50,
     "5 rounds · 30 s elapsed · at most ~30 s left (budget)"),
    # The estimate ends first: it is shown as it is.
    ({"rounds_done": 5, "elapsed": 30.0, "estimated_remaining": 10.0}, 75, "5 rounds · 30 s elapsed · ~10 s left"),
    # No estimate yet: the budget still bounds the bar and the time left.
    ({"rounds_done": 2, "elapsed": 15.0, "estimated_remaining": None}, 25,
     "2 rounds · 15 s elapsed · at most ~45 s left (budget)"),
    # The round budget (10) runs out before the time budget: 8 rounds in 16 s leave 2 rounds, ~4 s.
    ({"rounds_done": 8, "elapsed": 16.0, "estimated_remaining": 30.0}, 80,
     "8 rounds · 16 s elapsed · at most ~4 s left (budget)"),
])
def test_the_progress_bar_counts_the_budget(job, staff, progress, percent, figures):
    services.update_job(job=job, user=staff, budget_seconds=60, budget_rounds=10)
    session = services.start_session(job=job, user=staff)
    Session.objects.filter(pk=session.pk).update(status=SessionStatus.RUNNING, progress={**progress, "metrics": []})

    html = Client().get(f"/jobs/sessions/{session.pk}/").content.decode()
    display = Client().get(f"/api/v1/sessions/{session.pk}").json()["display"]

    assert f'aria-valuenow="{percent}"' in html and figures in html
    assert (display["percent"], display["figures"]) == (percent, figures)


def test_the_rounds_table_is_polled_for_the_rounds_after_the_last_shown(job, staff):
    session = services.start_session(job=job, user=staff)
    for index in range(3):
        Round.objects.create(session=session, index=index, workload="nightly sort", work_amount=10 * (index + 1),
                             duration=0.25, readings={"time": 0.002})

    page = Client().get(f"/jobs/sessions/{session.pk}/").content.decode()
    rows = Client().get(f"/jobs/sessions/{session.pk}/rounds/?after=0").content.decode()

    assert f'data-rounds data-session="{session.pk}" data-url="/jobs/sessions/{session.pk}/rounds/"' in page
    assert re.findall(r'<tr data-index="(\d+)">', rows) == ["1", "2"]
    assert "nightly sort" in rows and "0.2500 s" in rows
    assert Client().get(f"/jobs/sessions/{session.pk}/rounds/?after=2").content.decode().strip() == ""
    assert Client().get(f"/jobs/sessions/{session.pk}/rounds/?after=x").status_code == 400
    assert Client().get(f"/jobs/sessions/{session.pk}/rounds/?after={2**63}").status_code == 400
    assert Client().get(f"/jobs/sessions/{session.pk + 1}/rounds/?after=0").status_code == 404


def test_a_sessions_readings_are_shown_and_downloaded_in_one_unit_per_metric(job, staff):
    session = services.start_session(job=job, user=staff)
    for index, reading in enumerate((76e-6, 1.2e-3, 80e-6)):
        Round.objects.create(session=session, index=index, workload="nightly sort", work_amount=10, duration=0.25,
                             readings={"time": reading})

    html = Client().get(f"/jobs/sessions/{session.pk}/").content.decode()
    rows = Client().get(f"/jobs/sessions/{session.pk}/", {"format": "json"}).json()

    # The first reading chose µs: the 1.2 ms outlier reads 1200 µs, never "0.0001".
    assert ["time 76.0 µs", "time 1200 µs", "time 80.0 µs"] == re.findall(r"time [\d.]+ µs", html)
    assert [row["time (µs)"] for row in rows] == pytest.approx([76.0, 1200.0, 80.0])
    assert rows[0]["duration_seconds"] == 0.25 and rows[0]["analysed"] is True


def test_a_session_without_rounds_has_its_table_ready_and_hidden(job, staff):
    session = services.start_session(job=job, user=staff)

    html = Client().get(f"/jobs/sessions/{session.pk}/").content.decode()

    assert '<p class="empty" data-rounds-empty>No round has finished yet.</p>' in html
    assert '<table class="results rounds" hidden>' in html


def test_the_machines_page_shows_hardware_as_readable_facts(staff):
    MachineFactory(name="bench-7", hardware={
        "physical_cores": 8, "architecture": "x86_64", "cpu_max_mhz": 0.0, "python": "3.12.1",
        "disks": [{"device": "/dev/nvme0n1p2", "mountpoint": "/", "fstype": "ext4"}],
        "l3_cache_bytes": 32 * 2**20, "governor": "", "numa": {"nodes": 2}, "turbo_ghz": 4.5})

    html = Client().get("/machines/").content.decode()

    facts = re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", html[html.index("Hardware details"):])
    # The known details first, the others by name, whatever order the database keeps the JSON in.
    assert facts == [("Physical cores", "8"), ("Python", "3.12.1"), ("Architecture", "x86_64"),
                     ("Disks", "/dev/nvme0n1p2 on / (ext4)"), ("L3 cache", "32.0\xa0MB"), ("Numa", "nodes 2"),
                     ("Turbo", "4.5 GHz")]
    assert "cpu_max_mhz" not in html and "{" not in html[html.index("Hardware details"):html.index("</dl>",
                                                          html.index("Hardware details"))]
    MachineFactory(name="bench-8", hardware={"cpu_max_mhz": 3600.0})
    assert "<dt>CPU max frequency</dt><dd>3.60 GHz</dd>" in Client().get("/machines/").content.decode()


def test_an_unknown_session_is_404():
    assert Client().get("/jobs/sessions/999/").status_code == 404


def test_job_and_session_text_is_escaped(staff, project, machine):
    job = services.create_job(user=staff, project=project, name="<script>x()</script>", benchmark="<b>b</b>",
                              machine=machine, workload_kind="builtin", builtin="sort")
    session = services.start_session(job=job, user=staff)

    for path in ("/jobs/", f"/jobs/sessions/{session.pk}/"):
        html = Client().get(path).content.decode()
        assert "<script>x()</script>" not in html and "&lt;script&gt;x()&lt;/script&gt;" in html


def test_a_second_staff_member_is_recorded_as_requester(job):
    other = UserFactory(is_staff=True)
    logged_in(other).post(f"/jobs/{job.pk}/run/")
    assert Session.objects.get().requested_by == other


def test_a_machine_only_uploaded_to_says_it_has_no_worker_and_its_jobs_are_warned_of(staff, project, machine):
    Machine.objects.filter(pk=machine.pk).update(last_seen_at=timezone.now())
    client = logged_in(staff)

    response = client.post("/jobs/new/", form_data(project, machine, cron=""), follow=True)

    html = response.content.decode()
    assert f"No benchmark worker is consuming queue {machine.queue} of machine {machine.name}" in html
    page = client.get("/machines/").content.decode()
    assert "none has consumed its queue" in page and "Last upload" in page
    Machine.objects.filter(pk=machine.pk).update(worker_seen_at=timezone.now())
    page = client.get("/machines/").content.decode()
    assert "consuming its queue, last seen" in page


def test_a_finished_session_short_of_its_target_says_so_not_narrowing(job, staff):
    session = services.start_session(job=job, user=staff)
    Session.objects.filter(pk=session.pk).update(status=SessionStatus.BUDGET_EXHAUSTED, progress=PROGRESS,
                                                 finished_at=timezone.now())

    html = Client().get(f"/jobs/sessions/{session.pk}/").content.decode()

    assert "✗ not within target" in html and "… narrowing" not in html
