"""Jobs, a session's live progress and alert triage, driven in Chromium.

There is no worker here: a session stays queued until the test writes its progress (as a worker's
rounds would), and the page's poller must pick that up.
"""

import pytest
from playwright.sync_api import expect

from results import comparisons, triage
from results.models import Alert, Membership, Role
from runner import services as runner_services
from runner.models import Job, Round, Session, SessionStatus
from tests.factories import MachineFactory, ProjectFactory, UserFactory
from tests.factories import posted_run

pytestmark = pytest.mark.django_db(transaction=True)


class Undelivered:
    """Stands in for a Celery task: sending it does nothing."""

    def apply_async(self, *args, **kwargs):
        return None

    delay = apply_async


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    """Nothing is delivered: sessions stay queued, comparisons are made by the tests themselves."""
    for task in ("runner.tasks.run_session", "results.tasks.compare_run", "results.tasks.notify_alert_group"):
        monkeypatch.setattr(task, Undelivered())


def test_staff_create_a_scheduled_job_run_it_and_watch_its_progress(page, login, screenshot):
    ProjectFactory(name="Demo", slug="demo")
    MachineFactory(name="bench-1")
    staff = UserFactory(is_staff=True)
    login(staff)

    page.goto("/jobs/")
    page.get_by_role("link", name="New job").click()
    page.select_option("#id_project", label="Demo")
    page.fill("#id_name", "nightly sort")
    page.fill("#id_benchmark", "sort 100k")
    page.select_option("#id_machine", label="bench-1")
    page.select_option("#id_builtin", value="sort")
    page.fill("#id_work_min", "10")
    page.fill("#id_work_max", "500")
    page.fill("#id_environment", "PYTHONHASHSEED=0\nOOPS")
    page.fill("#id_cron", "0 2 * *")
    page.get_by_role("button", name="Create job").click()

    expect(page.locator("#field-cron .field-errors")).to_contain_text("five fields")
    expect(page.locator("#field-environment .field-errors")).to_contain_text('has no "="')
    screenshot("job-form")
    page.fill("#id_environment", "PYTHONHASHSEED=0")
    page.fill("#id_cron", "0 2 * * *")
    page.get_by_role("button", name="Create job").click()

    expect(page.locator(".messages")).to_contain_text("created and scheduled")
    job = Job.objects.get(name="nightly sort")
    # No worker consumes the machine's queue yet: said at once, not left to a session that waits for ever.
    expect(page.locator(".messages")).to_contain_text(f"No benchmark worker is consuming queue {job.machine.queue}")
    row = page.locator(f"#job-{job.pk}")
    expect(row).to_contain_text("nightly sort")
    expect(row.locator(".cron")).to_have_text("At 02:00 AM UTC")
    expect(row.locator(".cron")).to_have_attribute("title", "cron: 0 2 * * *")
    expect(row).to_contain_text("never run")

    row.get_by_role("button", name="Run now").click()
    session = Session.objects.get()
    expect(page).to_have_url(f"{page.url.split('/jobs/')[0]}/jobs/sessions/{session.pk}/")
    bar = page.locator("[data-field=bar]")
    expect(bar).to_have_class("bar indeterminate")
    expect(page.locator("[data-field=status]")).to_have_text("Queued")
    expect(page.locator("[data-field=figures]")).to_have_text(
        f"0 rounds · waiting for a worker: none is consuming queue {job.machine.queue}")

    # A worker claims the session and stores rounds: the polled bar follows without a reload.
    Session.objects.filter(pk=session.pk).update(status=SessionStatus.RUNNING, progress={
        "rounds_done": 7, "elapsed": 30.0, "estimated_remaining": 10.0,
        "metrics": [{"workload": "A", "metric": "time", "relative_width": 0.14, "target_width": 0.1,
                     "converged": False}]})
    expect(page.locator("[data-field=status]")).to_have_text("Running", timeout=6000)
    expect(bar).to_have_attribute("aria-valuenow", "75")
    expect(page.locator("[data-field=figures]")).to_have_text("7 rounds · 30 s elapsed · ~10 s left")
    expect(page.locator("[data-field=metrics] tr")).to_have_count(1)
    expect(page.locator("[data-field=metrics]")).to_contain_text("14.0%")
    page.wait_for_timeout(700)  # the bar's width transition
    screenshot("session-progress")

    Session.objects.filter(pk=session.pk).update(progress={
        "rounds_done": 12, "elapsed": 45.0, "estimated_remaining": 5.0,
        "metrics": [{"workload": "A", "metric": "time", "relative_width": 0.09, "target_width": 0.1,
                     "converged": True}]})
    expect(bar).to_have_attribute("aria-valuenow", "90", timeout=6000)
    expect(page.locator("[data-field=metrics]")).to_contain_text("✓ within target")

    page.goto("/jobs/")
    expect(page.locator(".session-card")).to_have_count(1)
    expect(page.locator(".session-card [data-field=figures]")).to_have_text("12 rounds · 45 s elapsed · ~5 s left")
    page.wait_for_timeout(700)
    screenshot("jobs")


def test_the_job_form_shows_its_errors_by_field_and_the_arguments_a_command_runs_as(page, login, screenshot):
    ProjectFactory(name="Demo", slug="demo")
    MachineFactory(name="bench-1")
    login(UserFactory(is_staff=True))

    page.goto("/jobs/new/")
    page.select_option("#id_project", label="Demo")
    page.fill("#id_name", "bench script")
    page.fill("#id_benchmark", "bench")
    page.select_option("#id_machine", label="bench-1")
    expect(page.get_by_label("Target CI width (%)")).to_have_value("10")
    page.get_by_label("command (argument list, no shell)").check()
    page.fill("#id_command", "python3 /srv/bench.py --label 'two words' --n={work_amount} -- {revision}")
    preview = page.locator("#field-command .argv-preview li")
    expect(preview).to_have_text(["python3", "/srv/bench.py", "--label", "two words", "--n={work_amount}", "--",
                                  "{revision}"])
    expect(page.locator("#field-command .command-preview")).to_contain_text("Runs as 7 arguments, without a shell")
    page.fill("#id_setup_command", "git checkout {revision} && make")
    expect(page.locator("#field-setup_command .command-preview")).to_contain_text("“&&” is a shell operator")
    page.fill("#id_setup_command", "")
    page.fill("#id_work_min", "100")
    page.fill("#id_work_max", "10")
    page.fill("#id_target_width", "500")
    page.get_by_role("button", name="Create job").click()

    expect(page.locator(".form-errors")).to_have_text("The job was not saved: see the fields marked below.")
    expect(page.locator(".form-errors")).not_to_contain_text("Constraint")
    for field in ("work_min", "work_max"):
        expect(page.locator(f"#field-{field} .field-errors")).to_have_text(
            "Work min (100) must be smaller than work max (10).")
    expect(page.locator("#field-target_width .field-errors")).to_have_text("Give at most 50%.")
    # Timed whole with {work_amount}: the mean would mix work amounts, so the form asks for the per-unit fit.
    expect(page.locator("#field-warmup .field-errors")).to_contain_text("one reading per round")
    expect(preview).to_have_count(7)  # shown again by the server after the submit
    expect(preview.nth(3)).to_have_text("two words")
    screenshot("job-form-errors")

    page.fill("#id_work_max", "1000")
    page.fill("#id_target_width", "5")
    page.select_option("#id_warmup", "wps")
    page.get_by_role("button", name="Create job").click()

    expect(page.locator(".messages")).to_contain_text("Job “bench script” created.")
    job = Job.objects.get(name="bench script")
    assert job.target_width == pytest.approx(0.05) and (job.work_min, job.work_max) == (100, 1000)
    assert job.command == ["python3", "/srv/bench.py", "--label", "two words", "--n={work_amount}", "--",
                           "{revision}"]
    expect(page.locator(f"#job-{job.pk}")).to_contain_text("CI width target 5% of the mean")


def test_the_progress_bar_counts_the_budget_and_new_rounds_appear(page, login, screenshot):
    staff = UserFactory(is_staff=True)
    job = runner_services.create_job(user=staff, project=ProjectFactory(), name="sort", benchmark="sort",
                                     machine=MachineFactory(), workload_kind="builtin", builtin="sort",
                                     budget_seconds=60)
    session = runner_services.start_session(job=job, user=staff)
    login(staff)
    page.goto(f"/jobs/sessions/{session.pk}/")
    bar = page.locator("[data-field=bar]")
    figures = page.locator("[data-field=figures]")
    expect(page.locator(".rounds")).to_be_hidden()
    expect(page.get_by_text("No round has finished yet.")).to_be_visible()

    # Half the budget spent while the intervals' estimate wants 90 s more: the budget decides.
    for index in range(2):
        Round.objects.create(session=session, index=index, workload="sort", work_amount=10.0 * (index + 1),
                             duration=15.0, readings={"time": 15.0})
    Session.objects.filter(pk=session.pk).update(status=SessionStatus.RUNNING, progress={
        "rounds_done": 2, "elapsed": 30.0, "estimated_remaining": 90.0, "metrics": []})
    expect(bar).to_have_attribute("aria-valuenow", "50", timeout=6000)
    expect(figures).to_have_text("2 rounds · 30 s elapsed · at most ~30 s left (budget)")
    expect(page.locator(".rounds tbody tr")).to_have_count(2)
    expect(page.get_by_text("No round has finished yet.")).to_be_hidden()

    # Past the budget: the bar is full and the session is finishing its round, not "~1 min left".
    Round.objects.create(session=session, index=2, workload="sort", work_amount=30.0, duration=31.0,
                         readings={"time": 31.0})
    Session.objects.filter(pk=session.pk).update(progress={
        "rounds_done": 3, "elapsed": 61.0, "estimated_remaining": 66.0, "metrics": []})
    expect(figures).to_have_text("3 rounds · 1 min 01 s elapsed · budget spent · finishing the round",
                                 timeout=6000)
    expect(bar).to_have_attribute("aria-valuenow", "100")
    expect(page.locator(".rounds tbody tr")).to_have_count(3)
    expect(page.locator(".rounds tbody tr").last).to_contain_text("31.0000 s")
    page.wait_for_timeout(700)  # the bar's width transition
    screenshot("session-budget")


def test_cancelling_a_session_asks_first(page, login, browser, live_server):
    staff = UserFactory(is_staff=True)
    job = runner_services.create_job(user=staff, project=ProjectFactory(), name="sort", benchmark="sort",
                                     machine=MachineFactory(), workload_kind="builtin", builtin="sort")
    session = runner_services.start_session(job=job, user=staff)
    login(staff)
    page.goto(f"/jobs/sessions/{session.pk}/")
    asked = []

    def answer(accept):
        def reply(dialog):
            asked.append(dialog.message)
            dialog.accept() if accept else dialog.dismiss()
        return reply

    page.once("dialog", answer(False))
    page.get_by_role("button", name="Cancel session").click()
    page.wait_for_timeout(300)
    assert asked == [f"Cancel session #{session.pk} of “sort”? Its running round is stopped now."]
    session.refresh_from_db()
    assert session.status == SessionStatus.QUEUED

    page.once("dialog", answer(True))
    page.get_by_role("button", name="Cancel session").click()
    expect(page.locator(".messages")).to_contain_text(f"Session #{session.pk} is Cancelled.")
    expect(page.locator("[data-field=status]")).to_have_text("Cancelled")

    # Without JavaScript the button leads to a page that asks.
    second = runner_services.start_session(job=job, user=staff)
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    try:
        plain = context.new_page()
        plain.goto("/accounts/login/")
        plain.fill("input[name=username]", staff.get_username())
        plain.fill("input[name=password]", "correct horse battery staple")
        plain.click("button[type=submit]")
        plain.goto(f"/jobs/sessions/{second.pk}/")
        plain.get_by_role("button", name="Cancel session").click()
        expect(plain.get_by_role("heading", level=1)).to_have_text(f"Cancel session #{second.pk} of “sort”?")
        second.refresh_from_db()
        assert second.status == SessionStatus.QUEUED
        plain.get_by_role("button", name=f"Yes, cancel session #{second.pk}").click()
        expect(plain.locator(".messages")).to_contain_text(f"Session #{second.pk} is Cancelled.")
    finally:
        context.close()
    second.refresh_from_db()
    assert second.status == SessionStatus.CANCELLED


def test_a_user_sees_no_write_buttons_and_gets_403_on_the_form(page, login):
    staff = UserFactory(is_staff=True)
    job = runner_services.create_job(user=staff, cron="0 2 * * *", project=ProjectFactory(), name="sort",
                                     benchmark="sort", machine=MachineFactory(), workload_kind="builtin",
                                     builtin="sort")
    login(UserFactory())

    page.goto("/jobs/")
    expect(page.locator(f"#job-{job.pk}")).to_contain_text("sort")
    expect(page.get_by_role("link", name="New job")).to_have_count(0)
    expect(page.get_by_role("button", name="Run now")).to_have_count(0)
    assert page.goto("/jobs/new/").status == 403
    assert page.goto(f"/jobs/{job.pk}/edit/").status == 403


def test_a_user_triages_an_alert(page, login, screenshot, staff):
    for night in range(10):
        posted_run(night, {"sort": 1.0, "hash": 1.0, "json": 1.0}, sd=0.002)
    run = posted_run(10, {"sort": 1.2, "hash": 1.15, "json": 1.0}, sd=0.002)
    comparisons.compare_run(run_id=run.pk)
    runner_services.create_job(user=staff, project=run.project, name="sort", benchmark="sort", machine=run.machine,
                               workload_kind="builtin", builtin="sort")
    sort_alert = Alert.objects.get(comparison__candidate__metric__benchmark__name="sort")
    [session] = runner_services.confirm_alerts(alert_ids=[sort_alert.pk])
    Session.objects.filter(pk=session.pk).update(status=SessionStatus.RESOLVED, outcome={
        "message": "Every pair of workloads is resolved.",
        "comparisons": [{"metric": "time", "better": "baseline", "worse": "candidate", "better_mean": 1.0,
                         "worse_mean": 1.2, "pvalue": 0.00002, "overlap": False, "resolved": True}]})
    user = UserFactory()
    Membership.objects.create(project=run.project, user=user, role=Role.MAINTAINER)
    triage.set_alert_status(alert=sort_alert, status="acknowledged", note="bisecting", user=user)
    login(user)

    page.goto("/alerts/")
    hash_alert = Alert.objects.get(comparison__candidate__metric__benchmark__name="hash")
    row = page.locator(f"#alert-{hash_alert.pk}")
    expect(row).to_contain_text("▲ regression")
    row.locator("select[name=status]").select_option("invalid")
    row.locator("input[name=note]").fill("noisy neighbour on bench-1")
    row.get_by_role("button", name="Update").click()

    expect(page.locator(".messages")).to_contain_text(f"Alert #{hash_alert.pk} is now Invalid.")
    expect(page.locator(f"#alert-{hash_alert.pk} .badge")).to_have_text("Invalid")
    expect(page.locator(f"#alert-{hash_alert.pk} + tr.alert-details .alert-history")).to_contain_text(
        "noisy neighbour on bench-1")
    expect(page.locator(".alert-confirmations")).to_contain_text(f"Session #{session.pk}")
    screenshot("alerts")

    page.goto("/alerts/?status=invalid")
    expect(page.locator(".alert-row")).to_have_count(1)
    expect(page.locator("#id_status")).to_have_value("invalid")
