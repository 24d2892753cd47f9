"""A posted revision must never become an option of a command a benchmark machine runs.

The attack that was found: a non-staff token posted a run whose commit was ``--upload-pack=touch pwned``;
a regression alert on it queued a confirmation session of a staff job whose setup step is
``git -C repo fetch origin {revision}``, and git ran ``touch pwned``. It is refused where the value enters
(a 422 naming the field) and again where it would be substituted (the session fails, nothing runs).
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from results.models import Alert, Result, Revision, Run
from runner import execution, services, workloads
from runner.models import Session, SessionStatus, SessionTrigger
from tests.factories import MachineFactory, ProjectFactory, RevisionFactory, run_document

ATTACK = "--upload-pack=touch pwned"
FAKE = str(Path(__file__).with_name("fake_benchmark.py"))

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(*args: str, cwd: Path) -> str:
    identity = ["-c", "user.name=tests", "-c", "user.email=tests@example.com", "-c", "protocol.file.allow=always"]
    return subprocess.run(["git", *identity, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def checkout(tmp_path) -> tuple[Path, str]:
    """A clone of a local origin with one commit: ``git fetch origin <commit>`` works in it."""
    git("init", "-q", "origin", cwd=tmp_path)
    git("commit", "-q", "--allow-empty", "-m", "first", cwd=tmp_path / "origin")
    commit = git("rev-parse", "HEAD", cwd=tmp_path / "origin").strip()
    git("clone", "-q", "origin", "repo", cwd=tmp_path)
    return tmp_path / "repo", commit


@needs_git
def test_the_payload_is_live_when_git_receives_it(checkout, tmp_path):
    # The control: without the guards, this value makes git run a command (in the repository).
    repo, _ = checkout
    subprocess.run(["git", "-C", str(repo), "fetch", "origin", ATTACK], cwd=tmp_path, capture_output=True)
    assert (repo / "pwned").exists()


@needs_git
def test_a_setup_step_refuses_a_revision_that_would_be_an_option(checkout, tmp_path):
    repo, commit = checkout
    argv = ["git", "-C", str(repo), "fetch", "origin", "{revision}"]

    with pytest.raises(workloads.UnsafeArgument, match=r"\{revision\}.*starts with '-'"):
        workloads.setup_command(argv, cwd=tmp_path, timeout=30, revision=ATTACK)
    assert not (repo / "pwned").exists()
    workloads.setup_command(argv, cwd=tmp_path, timeout=30, revision=commit)


def test_a_command_workload_refuses_it_too_and_starts_no_process(tmp_path):
    out = tmp_path / "echo.json"
    workload = workloads.command_workload([sys.executable, FAKE, "echo", str(out), "--rev={revision}"], timeout=30,
                                          revision="-x")
    with pytest.raises(workloads.UnsafeArgument):
        workload(1)
    assert not out.exists()


@pytest.mark.django_db
def test_the_attack_through_the_api_ends_with_a_422_and_nothing_stored(api):
    document = run_document(commit=ATTACK)

    response = api.post("/api/v1/runs", data=json.dumps(document), content_type="application/json")

    assert response.status_code == 422
    assert [error["field"] for error in response.json()["errors"]] == ["revision.commit"]
    assert "not starting with '-'" in response.json()["detail"]
    assert not Run.objects.exists() and not Revision.objects.exists() and not Result.objects.exists()
    assert not Alert.objects.exists() and not Session.objects.exists()


@needs_git
@pytest.mark.django_db(transaction=True)
def test_a_confirmation_session_of_a_revision_stored_before_validation_runs_nothing(staff, checkout, tmp_path):
    repo, commit = checkout
    project = ProjectFactory()
    job = services.create_job(
        user=staff, project=project, name="fetch", benchmark="fetch", machine=MachineFactory(),
        workload_kind="command", command=[sys.executable, FAKE, "echo", str(tmp_path / "ran.json")],
        setup_command=["git", "-C", str(repo), "fetch", "origin", "{revision}"], working_directory=str(tmp_path))
    # A row written before revisions were validated where they enter.
    stored = RevisionFactory(project=project, commit=ATTACK)
    session = Session.objects.create(
        job=job, trigger=SessionTrigger.CONFIRMATION,
        revisions=[{"label": "baseline", "commit": commit}, {"label": "candidate", "commit": stored.commit}])

    execution.execute_session(session_id=session.pk, attempt=0)

    session.refresh_from_db()
    assert session.status == SessionStatus.FAILED
    assert "starts with '-'" in session.error and session.rounds.count() == 0
    assert not (repo / "pwned").exists() and not (tmp_path / "ran.json").exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("revision", ["main:refs/heads/x", "+a:b", "a/../../tmp/x", "a b"])
def test_a_stored_revision_of_another_shape_fails_the_session_before_anything_runs(staff, tmp_path, revision):
    """Rows stored before identifiers were checked on entry (or sessions queued before) meet the rule where the
    session builds its commands: a refspec or a path out of the job's directory never reaches a command."""
    project = ProjectFactory()
    job = services.create_job(
        user=staff, project=project, name="echo", benchmark="echo", machine=MachineFactory(),
        workload_kind="command", command=[sys.executable, FAKE, "echo", str(tmp_path / "ran.json"), "{revision}"],
        setup_command=[sys.executable, FAKE, "echo", str(tmp_path / "setup.json"), "{revision}"],
        working_directory=str(tmp_path))
    session = Session.objects.create(job=job, trigger=SessionTrigger.CONFIRMATION,
                                     revisions=[{"label": "candidate", "commit": revision}])

    execution.execute_session(session_id=session.pk, attempt=0)

    session.refresh_from_db()
    assert session.status == SessionStatus.FAILED and "must be a commit hash" in session.error
    assert session.rounds.count() == 0
    assert not (tmp_path / "ran.json").exists() and not (tmp_path / "setup.json").exists()
