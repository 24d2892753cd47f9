"""A bisection's service with a real git repository and the product's models: who may start one, the range listed
on the machine's checkout, one session a step, each step resumed from the stored sessions, the culprit recorded.
The sessions' outcomes are written here as a bench worker would store them, from a known culprit (the worker's part
is Pilot's loop with a level check: tests/runner/test_bisection_session.py)."""

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from results.models import Alert, AlertState, AlertStatus, Membership, Project, Role
from results.stats import AT_LEVEL, MOVED
from runner.bisection import notify, service
from runner.models import Bisection, BisectionStatus, Session, SessionStatus, SessionTrigger
from runner.session.levels import CANDIDATE, MOVED_END, REFERENCE
from tests.factories import ComparisonFactory, UserFactory, posted_run
from tests.processes import RecordingServer
from tests.runner.test_integration import machine  # noqa: F401 (fixture)
from tests.runner.test_trusted_revisions import command_job, repositories  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

CULPRIT = 9
"""The commit (of the repository's main) that made the benchmark slower."""


@pytest.fixture
def regression(staff, machine, repositories):  # noqa: F811
    """A confirmed regression of the job's benchmark, first seen on the night of main[11], whose nights before
    measured main[0] … main[6] (the last four nights main[6]): the commits between were never measured (the
    range to bisect: main[6] … main[11])."""
    job = command_job(staff, machine, repositories)
    main = repositories["main"]
    for night in range(10):
        posted_run(night, {"bench": 1.0}, sd=0.002, commit=main[min(night, 6)], project=job.project.name,
                   machine=machine.name)
    posted_run(10, {"bench": 1.3}, sd=0.002, commit=main[11], project=job.project.name, machine=machine.name)
    from results import comparisons
    from results.models import Run

    comparisons.compare_run(run_id=Run.objects.order_by("-started_at").first().pk)
    alert = Alert.objects.get()
    Alert.objects.filter(pk=alert.pk).update(state=AlertState.CONFIRMED)
    maintainer = UserFactory()
    Membership.objects.create(project=job.project, user=maintainer, role=Role.MAINTAINER)
    return {"job": job, "alert": alert, "main": main, "maintainer": maintainer}


def finish(session: Session, main: list[str], *, culprit: int = CULPRIT) -> None:
    """End a bisection's session as its worker would: the candidate is at the bad level from the culprit on."""
    commits = {entry["label"]: entry["commit"] for entry in session.revisions}
    at = main.index(commits[CANDIDATE])
    decision = MOVED if at >= culprit else AT_LEVEL
    Session.objects.filter(pk=session.pk).update(status=SessionStatus.RESOLVED, outcome={"level": {
        "decision": decision, "rounds": 30, "change": 0.3 if decision == MOVED else 0.0, "low": None, "high": None}})


def test_a_maintainer_bisects_a_confirmed_regression_to_its_culprit(regression):
    main = regression["main"]
    bisection = service.start_bisection(alert=regression["alert"], user=regression["maintainer"])
    assert (bisection.status, bisection.last_good, bisection.first_bad) == (BisectionStatus.LISTING, main[6], main[11])

    bisection = service.list_range(bisection_id=bisection.pk)  # on the machine: its checkout is the repository's
    assert bisection.commits == main[6:12]
    names = []
    for _ in range(10):
        session = Session.objects.filter(trigger=SessionTrigger.BISECTION, status=SessionStatus.QUEUED).get()
        assert [entry["label"] for entry in session.revisions] == [REFERENCE, CANDIDATE, MOVED_END]
        assert all("vouched" in entry["trust"] for entry in session.revisions)
        names.append(main.index(session.revisions[1]["commit"]))
        # Its targets carry the level check, with what the earlier sessions read of its two ends.
        assert service.level_check(session).metric == "time"
        finish(session, main)
        bisection = service.advance(bisection_id=bisection.pk)
        service.advance(bisection_id=bisection.pk)  # a second advance (the catch-up) starts nothing twice
        if bisection.status != BisectionStatus.RUNNING:
            break
    assert bisection.status == BisectionStatus.FOUND and bisection.culprit == main[CULPRIT]
    assert names[-1] == CULPRIT and len(names) <= 4  # ⌈log₂ 5⌉ halvings and the verification
    assert [step.decision for step in bisection.steps.order_by("position")][-1] == MOVED


def test_a_failed_build_is_stepped_over(regression):
    main = regression["main"]
    bisection = service.list_range(bisection_id=service.start_bisection(
        alert=regression["alert"], user=regression["maintainer"]).pk)
    first = Session.objects.get(trigger=SessionTrigger.BISECTION)
    Session.objects.filter(pk=first.pk).update(status=SessionStatus.FAILED, error="The workload failed: build")
    bisection = service.advance(bisection_id=bisection.pk)
    assert bisection.failed == [main.index(first.revisions[1]["commit"]) - 6]
    second = Session.objects.filter(trigger=SessionTrigger.BISECTION).exclude(pk=first.pk).get()
    assert second.revisions[1]["commit"] != first.revisions[1]["commit"]


def test_only_maintainers_start_one_and_only_for_a_confirmed_regression(regression):
    alert = regression["alert"]
    with pytest.raises(PermissionDenied):
        service.start_bisection(alert=alert, user=UserFactory())
    Alert.objects.filter(pk=alert.pk).update(state=AlertState.SUSPECTED)
    with pytest.raises(ValidationError, match="confirmed regression"):
        service.start_bisection(alert=alert, user=regression["maintainer"])
    Alert.objects.filter(pk=alert.pk).update(state=AlertState.CONFIRMED)
    service.start_bisection(alert=alert, user=regression["maintainer"])
    with pytest.raises(ValidationError, match="being bisected already"):
        service.start_bisection(alert=alert, user=regression["maintainer"])
    assert Bisection.objects.count() == 1


def test_a_project_that_asks_bisects_its_confirmed_regression_once_its_ab_session_is_done(regression):
    alert, job = regression["alert"], regression["job"]
    assert service.bisect_confirmed() == []  # the project does not ask
    Project.objects.filter(pk=job.project_id).update(bisect_regressions=True)
    measuring = Session.objects.create(job=job, trigger=SessionTrigger.CONFIRMATION, confirms=alert)
    assert service.bisect_confirmed() == []  # its A/B session may still dismiss it
    Session.objects.filter(pk=measuring.pk).update(status=SessionStatus.RESOLVED)

    started = service.bisect_confirmed()
    assert [bisection.alert_id for bisection in started] == [alert.pk] and started[0].requested_by is None
    assert service.bisect_confirmed() == []  # one a night and machine
    Alert.objects.filter(pk=alert.pk).update(status=AlertStatus.INVALID)
    Bisection.objects.all().delete()
    assert service.bisect_confirmed() == []  # marked invalid: not bisected


def test_the_series_of_one_night_share_its_bisection(regression):
    alert = regression["alert"]
    bisection = service.start_bisection(alert=alert, user=regression["maintainer"])
    other = Alert.objects.get(pk=alert.pk)
    other.pk, other.comparison = None, ComparisonFactory(verdict=alert.comparison.verdict, ratio=1.2)
    other.save()
    with pytest.raises(ValidationError, match=f"being bisected already \\(bisection #{bisection.pk}"):
        service.start_bisection(alert=other, user=regression["maintainer"])


def test_a_maintainer_cancels_a_bisection_with_its_session(regression, django_capture_on_commit_callbacks):
    bisection = service.list_range(bisection_id=service.start_bisection(
        alert=regression["alert"], user=regression["maintainer"]).pk)
    queued = Session.objects.get(trigger=SessionTrigger.BISECTION)
    with pytest.raises(PermissionDenied):
        service.cancel_bisection(bisection=bisection, user=UserFactory())

    with django_capture_on_commit_callbacks(execute=True):
        bisection = service.cancel_bisection(bisection=bisection, user=regression["maintainer"])
    assert bisection.status == BisectionStatus.CANCELLED and "cancelled by" in bisection.reason
    assert Session.objects.get(pk=queued.pk).status == SessionStatus.CANCELLED
    # Its session's end advances nothing: no other session starts.
    assert service.advance(bisection_id=bisection.pk).status == BisectionStatus.CANCELLED
    assert Session.objects.filter(trigger=SessionTrigger.BISECTION).count() == 1


def failing_then_ok(failures: int) -> RecordingServer:
    """A webhook receiver that answers its first `failures` requests with a 500, then 204."""
    answers = [500] * failures
    return RecordingServer(lambda request: (answers.pop(0) if answers else 204, {}, b""))


def bisected(regression, end=finish) -> Bisection:
    """A bisection of the regression run to its end, each session ended by ``end(session, main)`` as its worker
    would."""
    main = regression["main"]
    bisection = service.list_range(bisection_id=service.start_bisection(
        alert=regression["alert"], user=regression["maintainer"]).pk)
    for _ in range(10):
        session = Session.objects.filter(trigger=SessionTrigger.BISECTION, status=SessionStatus.QUEUED).first()
        if session is None:
            break
        end(session, main)
        bisection = service.advance(bisection_id=bisection.pk)
    return bisection


def found(regression) -> Bisection:
    """A bisection of the regression that named its culprit."""
    bisection = bisected(regression)
    assert bisection.status == BisectionStatus.FOUND
    return bisection


def test_the_project_is_told_the_culprit_on_each_channel_once(regression, settings, mailoutbox):
    settings.PILOTWEB_WEBHOOK_ALLOW_PRIVATE = True
    bisection = found(regression)
    with failing_then_ok(1) as hook:
        Project.objects.filter(pk=regression["job"].project_id).update(
            webhook_url=f"{hook.url}/hook", notify_emails="perf@example.org")
        first = notify.notify_bisection(bisection_id=bisection.pk)
        # The e-mail went; the webhook failed and waits for the catch-up, which tells it alone.
        assert first.notified_at is None and first.notified_channels == ["email"] and "500" in first.notify_error
        assert len(mailoutbox) == 1
        assert notify.notify_bisection(bisection_id=bisection.pk).notify_attempts == 1  # waits for its backoff
        assert notify.pending_notifications() == []
        Bisection.objects.filter(pk=bisection.pk).update(notify_next_at=timezone.now() - timedelta(seconds=1))
        assert notify.pending_notifications() == [bisection.pk]
        second = notify.notify_bisection(bisection_id=bisection.pk)
    assert second.notified_at is not None and second.notify_error == ""
    assert len(mailoutbox) == 1 and len(hook.requests) == 2
    culprit = regression["main"][CULPRIT]
    body = hook.json_bodies()[-1]
    assert (body["event"], body["culprit"], body["status"]) == ("bisection", culprit, "found")
    assert f"culprit {culprit[:12]}" in body["text"] and f"culprit {culprit[:12]}" in mailoutbox[0].body
    assert notify.notify_bisection(bisection_id=bisection.pk).notify_attempts == 2  # told: nothing more


def test_a_listing_lost_with_the_broker_is_sent_again(regression, monkeypatch):
    sent = []
    monkeypatch.setattr(service, "enqueue", lambda task, *args, **options: sent.append((task, args, options)))
    bisection = service.start_bisection(alert=regression["alert"], user=regression["maintainer"])
    assert service.list_again() == []  # just started: its message may be on its way
    Bisection.objects.filter(pk=bisection.pk).update(list_sent_at=timezone.now() - timedelta(minutes=10))

    assert service.list_again() == [bisection.pk]
    assert sent[-1] == (service.LIST_RANGE, (bisection.pk,), {"queue": regression["job"].machine.queue})
    assert service.list_again() == []  # sent again once, not at every tick of the catch-up
    service.list_range(bisection_id=bisection.pk)
    service.list_range(bisection_id=bisection.pk)  # the lost message arrives after all: nothing twice
    assert Session.objects.filter(trigger=SessionTrigger.BISECTION).count() == 1
    assert service.list_again() == []


def test_a_bisection_that_names_none_says_the_range_it_narrowed_to(regression):
    from runner.bisection import report

    main = regression["main"]

    def out_of_budget_at_the_culprit(session, main):
        if session.revisions[1]["commit"] != main[CULPRIT]:
            return finish(session, main)
        Session.objects.filter(pk=session.pk).update(status=SessionStatus.UNRESOLVED, outcome={"level": {
            "decision": "undecided", "rounds": 400}})

    bisection = bisected(regression, out_of_budget_at_the_culprit)

    assert bisection.status == BisectionStatus.NOT_ISOLATED and "too noisy" in bisection.reason
    good, bad = bisection.narrowed
    assert bisection.commits[good] == main[CULPRIT - 1] or bisection.commits[bad] in main[CULPRIT:]
    assert f"left: {bad - good} commits after {bisection.commits[good][:12]}" in report.summary(bisection)


def test_a_telling_that_keeps_failing_is_given_up_after_the_attempts_and_says_why(regression, settings):
    settings.PILOTWEB_WEBHOOK_ALLOW_PRIVATE = True
    bisection = found(regression)
    with failing_then_ok(10) as hook:
        Project.objects.filter(pk=regression["job"].project_id).update(webhook_url=f"{hook.url}/hook")
        for _ in range(8):
            Bisection.objects.filter(pk=bisection.pk).update(notify_next_at=timezone.now() - timedelta(seconds=1))
            bisection = notify.notify_bisection(bisection_id=bisection.pk)
    assert bisection.notify_attempts == 5 and bisection.notified_at is not None and "500" in bisection.notify_error
    assert len(hook.requests) == 5 and notify.pending_notifications() == []


def test_a_regression_without_a_change_to_look_for_is_not_bisected(regression):
    from results.models import Comparison

    Comparison.objects.filter(alert=regression["alert"]).update(ratio=None)
    with pytest.raises(ValidationError, match="no change to look for"):
        service.start_bisection(alert=regression["alert"], user=regression["maintainer"])


def test_the_catch_up_goes_on_past_a_bisection_that_fails(regression, monkeypatch, caplog):
    bisection = service.list_range(bisection_id=service.start_bisection(
        alert=regression["alert"], user=regression["maintainer"]).pk)
    calls = []

    def broken(*, bisection_id):
        raise RuntimeError("a state no code foresaw")

    monkeypatch.setattr(service, "advance", broken)
    monkeypatch.setattr(service, "bisect_confirmed", lambda: calls.append("started"))
    service.catch_up()
    assert calls == ["started"] and f"advancing bisection #{bisection.pk} failed" in caplog.text
