"""Posted data never chooses what a benchmark machine runs (issue 28, item 2), shown with a real git repository,
a real bench worker and Redis: a nightly posted by a CI token (which does not vouch for its revisions) opens an
alert, the alert's A/B confirmation session reaches the machine, and the machine builds the posted commit only if
it is on the job's trusted branch of its repository's origin. The attack: a commit that is not on the branch
(a pushed branch, a pull request's head) whose build step leaves a marker file on the machine."""

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from django.test import Client

from results import services as result_services
from results.models import Alert, AlertGroup, Membership, Role, Run, RunKind, TokenScope
from runner import execution, services, trust
from runner.models import Session, SessionStatus, SessionTrigger
from tests.factories import (
    ComparisonFactory,
    ProjectFactory,
    ResultFactory,
    RevisionFactory,
    RunFactory,
    UserFactory,
    post_nights,
    run_document,
)
from tests.processes import wait_for
from tests.runner.test_integration import bench_worker, finished, machine  # noqa: F401 (fixture)

BUILD = Path(__file__).with_name("git_build.py")
GIT = ["git", "-c", "user.name=Pilot Web tests", "-c", "user.email=tests@example.org", "-c", "init.defaultBranch=main"]


def git(*arguments: str, cwd: Path) -> str:
    return subprocess.run([*GIT, *arguments], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def commit(repository: Path, message: str, *, build: str = "") -> str:
    (repository / "build.py").write_text(build or "pass\n")
    (repository / "bench.py").write_text("import sys, time\ntime.sleep(0.001 * float(sys.argv[1]))\n")
    (repository / "CHANGES").write_text(message)
    git("add", "build.py", "bench.py", "CHANGES", cwd=repository)
    git("commit", "--quiet", "-m", message, cwd=repository)
    return git("rev-parse", "HEAD", cwd=repository)


@pytest.fixture
def repositories(tmp_path):
    """An upstream with ten commits on main, a branch ``evil`` whose build leaves a marker, and a pull request's
    head holding the same; the job's checkout on the machine is a clone of it (its origin)."""
    upstream, marker = tmp_path / "upstream", tmp_path / "pwned"
    upstream.mkdir()
    git("init", "--quiet", cwd=upstream)
    main = [commit(upstream, f"night {night}") for night in range(11)]
    git("checkout", "--quiet", "-b", "evil", cwd=upstream)
    evil = commit(upstream, "faster, trust me", build=f"open({str(marker)!r}, 'w').write('pwned')\n")
    git("update-ref", "refs/pull/1/head", evil, cwd=upstream)
    git("checkout", "--quiet", "main", cwd=upstream)
    checkout = tmp_path / "checkout"
    git("clone", "--quiet", str(upstream), str(checkout), cwd=tmp_path)
    # The night the regression lands on main is pushed after the clone: the machine fetches it.
    main.append(commit(upstream, "night 11"))
    return {"upstream": upstream, "checkout": checkout, "main": main, "evil": evil, "marker": marker,
            "built": tmp_path / "built.log"}


def command_job(staff, machine, repositories, **overrides):  # noqa: F811 (the fixture's value)
    checkout = str(repositories["checkout"])
    fields = {"project": ProjectFactory(name="Trusted", slug="trusted"), "name": "bench", "benchmark": "bench",
              "machine": machine, "workload_kind": "command",
              "command": [sys.executable, f"{checkout}/bench.py", "{work_amount}"], "warmup": "wps",
              "setup_command": [sys.executable, str(BUILD), checkout, "{revision}", str(repositories["built"])],
              "repository": checkout, "trusted_branch": "main", "work_min": 1, "work_max": 20,
              "min_round_duration": 0.0, "budget_seconds": 8, "budget_rounds": 40, "target_width": 0.5}
    return services.create_job(user=staff, **{**fields, **overrides})


def ci_client(project) -> Client:
    """A CI job's token: an uploader's, which posts runs and vouches for nothing."""
    user = UserFactory()
    Membership.objects.create(project=project, user=user, role=Role.UPLOADER)
    _, token = result_services.create_api_token(user=user, name="ci")
    return Client(headers={"Authorization": f"Bearer {token}"})


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_an_untrusted_commit_is_never_checked_out_or_run(staff, machine, broker, tmp_path, repositories):  # noqa: F811
    job = command_job(staff, machine, repositories)
    with bench_worker(broker, machine, tmp_path):
        run_id = post_nights(ci_client(job.project), job.project, job.machine,
                             repositories["main"][:10] + [repositories["evil"]])
        alert = wait_for(lambda: Alert.objects.filter(group__run_id=run_id).first(), what="the alert")
        session = wait_for(lambda: Session.objects.filter(confirms=alert).first(), what="the confirmation session")
        assert [entry["trust"] for entry in session.revisions] == [{"check": True}, {"check": True}]
        session = wait_for(lambda: finished(session.pk), timeout=120, what="the session to be refused")

    assert session.status == SessionStatus.FAILED
    assert "is not on the trusted branch main of origin" in session.error, session.error
    assert "Nothing was checked out or run" in session.error
    # Neither revision was built: the trusted one is checked and refused with the other, before any setup.
    assert not repositories["marker"].exists()
    assert not repositories["built"].exists() and not session.rounds.exists()
    alert.refresh_from_db()
    assert "is not on the trusted branch main" in alert.confirmation_note
    page = Client().get("/alerts/").content.decode()
    assert "is not on the trusted branch main of origin" in page


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_pull_requests_ref_is_refused_before_a_session_is_started(staff, machine, broker, tmp_path,  # noqa: F811
                                                                     repositories):
    job = command_job(staff, machine, repositories)
    with bench_worker(broker, machine, tmp_path):
        run_id = post_nights(ci_client(job.project), job.project, job.machine,
                             repositories["main"][:10] + ["refs/pull/1/head"])
        alert = wait_for(lambda: Alert.objects.filter(group__run_id=run_id).first(), what="the alert")
        wait_for(lambda: Alert.objects.filter(pk=alert.pk).exclude(confirmation_note="").exists(),
                 what="the alert to say why it is not re-measured")

    alert.refresh_from_db()
    assert "refs/pull/1/ is a pull request's revision, which job “bench” does not build" in alert.confirmation_note
    assert not Session.objects.exists() and not repositories["marker"].exists()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_commit_on_the_trusted_branch_is_built_and_measured(staff, machine, broker, tmp_path,  # noqa: F811
                                                               repositories):
    job = command_job(staff, machine, repositories)
    main = repositories["main"]
    with bench_worker(broker, machine, tmp_path):
        run_id = post_nights(ci_client(job.project), job.project, job.machine, main[:10] + [main[11]])
        alert = wait_for(lambda: Alert.objects.filter(group__run_id=run_id).first(), what="the alert")
        session = wait_for(lambda: Session.objects.filter(confirms=alert).first(), what="the confirmation session")
        session = wait_for(lambda: finished(session.pk), timeout=120, what="the confirmation session to finish")

    assert session.status in (SessionStatus.RESOLVED, SessionStatus.UNRESOLVED), session.error
    # Both revisions were checked on the machine (the newest after fetching origin) and built by their hashes.
    assert repositories["built"].read_text().split() == [main[9], main[11]]
    assert session.rounds.exists() and not repositories["marker"].exists()


def posted_run(project, *, kind=RunKind.NIGHTLY, commit=None, vouched=False, pull_request=None):
    revision = RevisionFactory(project=project, pull_request=pull_request, **({"commit": commit} if commit else {}))
    return RunFactory(project=project, kind=kind, vouched=vouched, revision=revision)


@pytest.mark.django_db
def test_the_rule_vouches_refuses_or_leaves_a_revision_to_the_machine(staff, machine):  # noqa: F811
    project = ProjectFactory()
    command = {"workload_kind": "command", "command": ["./bench", "{work_amount}"], "warmup": "wps",
               "setup_command": ["./build", "{revision}"], "repository": "/srv/checkout"}
    job = services.create_job(user=staff, project=project, name="c", benchmark="c", machine=machine, **command)
    builtin = services.create_job(user=staff, project=project, name="b", benchmark="b", machine=machine,
                                  workload_kind="builtin", builtin="sort")
    prs = services.create_job(user=staff, project=project, name="p", benchmark="p", machine=machine,
                              allow_pull_requests=True, **command)
    elsewhere = services.create_job(user=staff, project=project, name="n", benchmark="n", machine=machine,
                                    **{**command, "repository": ""})

    assert trust.judge_posted(job=job, run=posted_run(project)).check_on_machine
    assert trust.judge_posted(job=job, run=posted_run(project, vouched=True)).vouched
    assert "pull request" in trust.judge_posted(job=job, run=posted_run(project, commit="refs/pull/7/head")).refused
    assert "pull request" in trust.judge_posted(job=job, run=posted_run(project, kind=RunKind.PR)).refused
    assert "pull request" in trust.judge_posted(job=job, run=posted_run(project, pull_request=7)).refused
    assert trust.judge_posted(job=prs, run=posted_run(project, kind=RunKind.PR)).vouched
    assert trust.judge_posted(job=builtin, run=posted_run(project)).vouched
    assert "names no repository" in trust.judge_posted(job=elsewhere, run=posted_run(project)).refused


@pytest.mark.django_db
@pytest.mark.parametrize(("role", "scopes", "vouched"), [
    (Role.UPLOADER, TokenScope.values, False), (Role.MAINTAINER, [TokenScope.UPLOAD], False),
    (Role.MAINTAINER, [TokenScope.UPLOAD, TokenScope.JOBS], True), ("staff", [TokenScope.UPLOAD], False),
    ("staff", [TokenScope.UPLOAD, TokenScope.JOBS], True),
])
def test_a_post_vouches_for_its_revision_only_by_a_maintainer_or_staff_with_the_jobs_scope(role, scopes, vouched):
    project = ProjectFactory(name="Vouch", slug="vouch")
    user = UserFactory(is_staff=role == "staff")
    if role != "staff":
        Membership.objects.create(project=project, user=user, role=role)
    _, token = result_services.create_api_token(user=user, name="t", scopes=scopes)
    document = run_document(project="Vouch")
    document["project"]["slug"] = "vouch"

    response = Client(headers={"Authorization": f"Bearer {token}"}).post(
        "/api/v1/runs", data=json.dumps(document), content_type="application/json")

    assert response.status_code == 201, response.content
    assert Run.objects.get(pk=response.json()["id"]).vouched is vouched


@pytest.mark.django_db
def test_an_alert_says_why_no_confirmation_started(staff, machine):  # noqa: F811
    project = ProjectFactory()
    services.create_job(user=staff, project=project, name="c", benchmark="sort", machine=machine,
                        workload_kind="command", command=["./bench"], setup_command=["./build", "{revision}"])
    head = ResultFactory(run=posted_run(project, kind=RunKind.PR, commit="refs/pull/3/head"),
                         metric__benchmark__name="sort")
    base = ResultFactory(run=posted_run(project, commit="b" * 40), metric=head.metric)
    alert = Alert.objects.create(group=AlertGroup.objects.create(run=head.run), first_run=head.run,
                                 comparison=ComparisonFactory(candidate=head, baseline=base, method="pairwise",
                                                              verdict="regression"))

    assert services.confirm_alerts(alert_ids=[alert.pk]) == []
    alert.refresh_from_db()
    assert "candidate: refs/pull/3/ is a pull request's revision" in alert.confirmation_note
    assert not Session.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_scheduled_session_records_the_commit_its_checkout_measured_as_a_night_of_its_branch(
        staff, machine, repositories):  # noqa: F811
    # The budget is generous in rounds as in time: on a loaded machine round durations correlate, and WPS then
    # needs more rounds (larger subsessions) before its interval exists (a CI run spent the default 40 on it).
    job = command_job(staff, machine, repositories, setup_command=[], work_min=50, work_max=500, budget_seconds=120,
                      budget_rounds=1000)
    session = Session.objects.create(job=job, trigger=SessionTrigger.SCHEDULE, run_kind=RunKind.NIGHTLY)

    execution.execute_session(session_id=session.pk, attempt=0)

    session.refresh_from_db()
    # What is tested is the commit recorded, not the session's speed: a loaded machine may spend the budget first.
    assert session.status in (SessionStatus.CONVERGED, SessionStatus.BUDGET_EXHAUSTED), (session.error, session.outcome)
    assert session.runs.count() == 1, session.outcome
    run = session.runs.get()
    checked_out = git("log", "-1", "--format=%H %cI", cwd=repositories["checkout"]).split()
    assert checked_out[0] == repositories["main"][10]  # the clone's HEAD: night 11 was pushed after it
    assert (run.kind, run.revision.commit, run.revision.branch) == (RunKind.NIGHTLY, checked_out[0], "main")
    assert run.revision.timestamp.isoformat() == datetime.fromisoformat(checked_out[1]).astimezone(
        run.revision.timestamp.tzinfo).isoformat()
    assert session.revisions[0]["commit"] == checked_out[0]


@pytest.mark.django_db
def test_a_bisections_range_is_the_trusted_branchs_first_parent_line_between_its_ends(staff, machine, repositories):  # noqa: F811
    job = command_job(staff, machine, repositories)
    main = repositories["main"]

    assert trust.commit_range(job, main[3], main[11]) == main[3:12]  # night 11 was pushed after the clone: fetched
    with pytest.raises(trust.UntrustedRevision, match="not on the trusted branch"):
        trust.commit_range(job, main[3], repositories["evil"])
    with pytest.raises(trust.UntrustedRevision, match="not an ancestor"):
        trust.commit_range(job, main[8], main[3])
