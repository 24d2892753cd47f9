"""Which revisions a benchmark machine may build and run: one rule for every automatic session (an alert's
A/B confirmation now, a bisection's steps later).

A manual session's revisions are chosen by the staff member who starts it. An automatic session takes its
revisions from posted runs, and a job's setup step checks out and builds whatever ``{revision}`` names, so a
posted commit would choose what runs on the machine. A revision of a posted run is therefore run only if

- its poster vouched for it when posting (:attr:`results.models.Run.vouched`: the system itself, or staff or a
  project maintainer posting with the ``jobs`` scope), or
- it is on the job's trusted branch: checked on the benchmark machine itself, in the job's repository, before
  anything is built (:func:`verified_commit`), and the hash it resolved to, not the posted name, is what the
  setup step is given;

and a pull request's revision is never run unless the job says so (:attr:`runner.models.Job.allow_pull_requests`).
Every git command is an argument list (no shell), and the commit was held to the identifier rules where it
entered (:mod:`results.identifiers`), so it cannot be read as an option.
"""

import os
import re
import subprocess
from dataclasses import dataclass

from results.identifiers import check_branch, check_commit
from results.models import Run, RunKind

from .models import Job, WorkloadKind

PULL_REQUEST_REF = re.compile(r"^(?:refs/)?(?:pull|merge-requests|changes)/")
"""What GitHub, GitLab and Gerrit name a proposed change's head by; those refs pass the commit rules."""
GIT_TIMEOUT = 120.0
GIT_ENVIRONMENT = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"}
"""A git that never waits for a password and speaks one language (its refusals are shown)."""


@dataclass(frozen=True)
class Trust:
    """The dashboard's decision about one revision of an automatic session, before the machine is asked.

    Attributes
    ----------
    vouched : str
        Who vouches for it (run as it is); empty when it is not vouched for.
    refused : str
        Why it may not run at all; empty when it may.
    """

    vouched: str = ""
    refused: str = ""

    @property
    def check_on_machine(self) -> bool:
        """Neither vouched for nor refused: it runs only if the machine finds it on the trusted branch."""
        return not self.vouched and not self.refused

    def as_json(self) -> dict:
        """What a session stores of it beside the revision (``Session.revisions[i]["trust"]``)."""
        return {"vouched": self.vouched} if self.vouched else {"check": True}


class UntrustedRevision(RuntimeError):
    """A revision the machine refused to build; the message says why."""


def builds_revisions(job: Job) -> bool:
    """Whether a revision chooses what the job runs: a command job whose command or setup names ``{revision}``
    (a built-in workload and a command without the placeholder run the same code whatever the revision)."""
    if job.workload_kind == WorkloadKind.BUILTIN:
        return False
    return any("{revision}" in str(argument) for argument in [*job.command, *job.setup_command])


def judge_posted(*, job: Job, run: Run) -> Trust:
    """May an automatic session of `job` run the revision that `run` measured? A vouched or refused
    :class:`Trust`, or one that leaves it to the machine (:func:`verified_commit`)."""
    revision = run.revision
    if revision is None:
        return Trust(refused=f"run #{run.pk} names no commit")
    if not builds_revisions(job):
        return Trust(vouched=f"job “{job.name}” builds nothing from the revision")
    pull_request = (run.kind == RunKind.PR or revision.pull_request is not None
                    or PULL_REQUEST_REF.match(revision.commit) is not None)
    if pull_request:
        if job.allow_pull_requests:
            return Trust(vouched=f"job “{job.name}” builds pull requests")
        return Trust(refused=f"{_short(revision.commit)} is a pull request's revision, which job “{job.name}” "
                             "does not build (Build pull requests' revisions is off)")
    if run.vouched:
        return Trust(vouched=f"its poster (run #{run.pk})")
    if not repository(job):
        return Trust(refused=f"{_short(revision.commit)} was posted by a token that does not vouch for it, and job "
                             f"“{job.name}” names no repository to check it against its trusted branch")
    return Trust()


def repository(job: Job) -> str:
    """The job's checkout on its machine: its repository, else its working directory ("" if neither)."""
    return job.repository or job.working_directory


def trusted_branch(job: Job) -> str:
    return job.trusted_branch or job.project.default_branch


def verified_commit(job: Job, commit: str) -> str:
    """On the benchmark machine: the full hash of `commit` in the job's repository, if it is on the job's
    trusted branch of origin (after fetching origin), else :class:`UntrustedRevision` saying why.

    Run before the job's setup step, so a refused revision is never checked out, built or run.
    """
    check_commit(commit)
    branch = check_branch(trusted_branch(job))
    where = repository(job)
    if not where:
        raise UntrustedRevision(f"job “{job.name}” names no repository to check {_short(commit)} in")
    # A fetch that fails (offline) leaves the branch as the checkout last saw it: only older commits pass then.
    _git(where, "fetch", "--quiet", "--no-tags", "origin", check=False)
    found = _git(where, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}", check=False)
    if found.returncode != 0:
        raise UntrustedRevision(f"{_short(commit)} is not a commit of the job's repository ({where})")
    resolved = found.stdout.strip()
    trusted = f"refs/remotes/origin/{branch}"
    ancestor = _git(where, "merge-base", "--is-ancestor", resolved, trusted, check=False)
    if ancestor.returncode == 1:
        raise UntrustedRevision(f"{_short(commit)} is not on the trusted branch {branch} of origin")
    if ancestor.returncode != 0:
        raise UntrustedRevision(f"cannot check {_short(commit)} against {trusted}: {ancestor.stderr.strip()[:200]}")
    return resolved


def commit_range(job: Job, last_good: str, first_bad: str) -> list[str]:
    """On the benchmark machine: a bisection's range, the last good commit and every commit after it on the job's
    trusted branch up to the first bad one, oldest first (``git rev-list --first-parent``: the commits that landed
    on the branch, not those inside a merged branch). Both ends are checked as :func:`verified_commit` checks a
    revision, so every commit of the range is on the trusted branch. :class:`UntrustedRevision` says why not."""
    good, bad = verified_commit(job, last_good), verified_commit(job, first_bad)
    where = repository(job)
    if _git(where, "merge-base", "--is-ancestor", good, bad, check=False).returncode != 0:
        raise UntrustedRevision(f"{_short(last_good)} is not an ancestor of {_short(first_bad)}: no range between them")
    listed = _git(where, "rev-list", "--first-parent", "--reverse", f"{good}..{bad}", check=False)
    if listed.returncode != 0:
        raise UntrustedRevision(f"git rev-list refused the range: {listed.stderr.strip()[:200]}")
    commits = [good, *listed.stdout.split()]
    if commits[-1] != bad:
        raise UntrustedRevision(f"{_short(first_bad)} is not on the first-parent line of the trusted branch after "
                                f"{_short(last_good)}")
    for commit in commits:
        check_commit(commit)
    return commits


def checked_out_revision(job: Job) -> dict | None:
    """On the benchmark machine, after the job's setup step: the commit its checkout holds, when that commit
    was made, and the branch a plain session measures (the job's trusted branch), for a session that named no
    revision (a scheduled nightly) to record what it measured; None where there is no checkout or git cannot
    tell."""
    where = repository(job)
    if not where:
        return None
    try:
        found = _git(where, "log", "-1", "--format=%H%n%cI", "HEAD", check=False)
    except UntrustedRevision:
        return None
    lines = found.stdout.split()
    if found.returncode != 0 or len(lines) != 2:
        return None
    commit, committed = lines
    try:
        check_commit(commit)
        branch = check_branch(trusted_branch(job))
    except ValueError:
        return None
    return {"commit": commit, "branch": branch, "timestamp": committed}


def _git(where: str, *arguments: str, check: bool) -> subprocess.CompletedProcess:
    environment = {name: os.environ[name] for name in ("PATH", "HOME") if name in os.environ}
    try:
        return subprocess.run(["git", "-C", where, *arguments], capture_output=True, text=True, check=check,
                              timeout=GIT_TIMEOUT, env={**environment, **GIT_ENVIRONMENT}, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise UntrustedRevision(f"git could not be asked in {where}: {error}") from None


def _short(commit: str) -> str:
    return commit[:12]
