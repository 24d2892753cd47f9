"""A bisection's service with a real git repository and the product's models: who may start one, the range listed
on the machine's checkout, one session a step, each step resumed from the stored sessions, the culprit recorded.
The sessions' outcomes are written here as a bench worker would store them, from a known culprit (the worker's part
is Pilot's loop with a level check: tests/runner/test_bisection_session.py)."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from results.models import Alert, AlertState, Membership, Role
from results.stats import AT_LEVEL, MOVED
from runner.bisection import service
from runner.models import Bisection, BisectionStatus, Session, SessionStatus, SessionTrigger
from runner.session.levels import CANDIDATE, MOVED_END, REFERENCE
from tests.factories import UserFactory, posted_run
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
