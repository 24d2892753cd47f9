"""A session executed on its bench worker (:func:`execute_session`, the task ``runner.tasks.run_session``): its
workloads built and monitored, Pilot's loop run with every round stored as it ends, then what it measured stored:
its runs, its outcome and its run pages' analysis.

Its sessions are queued, cancelled and recovered by :mod:`runner.services`.
"""

import dataclasses
import logging
import socket
import threading
from collections.abc import Callable
from datetime import timedelta

import numpy as np

from django.db import connection, transaction
from django.db.models import Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from results import confirmations
from results import services as result_services
from results.identifiers import check_commit
from results.machine_state import NEIGHBOUR_CORES
from results.models import Run
from results.result_schema import SAMPLE_DTYPE
from results.schemas import RunIn

from . import monitor, replay, trust, workloads
from .bisection import service as bisections
from . import session as session_loop
from .models import Job, Round, Session, SessionAnalysis, SessionStatus, SessionTrigger, WorkloadKind

logger = logging.getLogger(__name__)
STAFF_TRIGGERS = (SessionTrigger.MANUAL, SessionTrigger.SCHEDULE)
"""Sessions whose revisions staff chose (started by hand, or the job's own checkout on a schedule)."""
HEARTBEAT_INTERVAL = timedelta(seconds=20)


class _Heartbeat(threading.Thread):
    """Refreshes a running session's heartbeat while a long round runs, so it is not taken for dead."""

    def __init__(self, session_id: int, interval: float) -> None:
        super().__init__(name=f"heartbeat-{session_id}", daemon=True)
        self.session_id, self.interval, self.stopped = session_id, interval, threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(self.interval):
                Session.objects.filter(pk=self.session_id, status=SessionStatus.RUNNING).update(
                    heartbeat_at=timezone.now())
        finally:
            connection.close()


def execute_session(*, session_id: int, attempt: int) -> Session | None:
    """Run a queued session to its end on this worker: Pilot's loop (:mod:`runner.session`) with
    every finished round committed before the next starts, then the runs written in one transaction.

    A delivery whose ``attempt`` is not the session's current one (a redelivered message of a
    session that was since resumed, finished or cancelled) does nothing and returns None.
    """
    now = timezone.now()
    claimed = Session.objects.filter(pk=session_id, attempt=attempt, status=SessionStatus.QUEUED).update(
        status=SessionStatus.RUNNING, worker=socket.gethostname(), heartbeat_at=now,
        started_at=Coalesce("started_at", Value(now)),
    )
    if not claimed:
        logger.info("Session %s, attempt %s: not queued for this attempt; this delivery is skipped.",
                    session_id, attempt)
        return None
    logger.info("Session %s, attempt %s: claimed by this worker.", session_id, attempt)
    session = Session.objects.select_related("job__project", "job__machine").get(pk=session_id)
    job = session.job
    heartbeat = _Heartbeat(session.pk, HEARTBEAT_INTERVAL.total_seconds())
    heartbeat.start()
    monitored: dict[str, monitor.MonitorSummary] = {}
    try:
        plain = _workloads(session)
        built = {label: _monitored(workload, label, job.component_under_test(), monitored)
                 for label, workload in plain.items()}
        previous = [row.record() for row in session.rounds.order_by("index")]
        if job.overhead_rounds and not previous and "overhead" not in session.outcome:
            _measure_overhead(session, plain)
        outcome = session_loop.run_session(
            built,
            job.metric_specs(),
            dataclasses.replace(job.session_targets(), level_check=bisections.level_check(session)),
            previous_rounds=previous,
            on_round=lambda record, progress: _store_round(session, record, progress,
                                                           monitored.pop(record.workload, None)),
            should_stop=lambda: Session.objects.filter(pk=session.pk, cancel_requested=True).exists(),
        )
    except trust.UntrustedRevision as error:
        message = f"Refused to build a revision: {error}. Nothing was checked out or run."
        if session.confirms_id is not None:
            confirmations.note_unconfirmed(alert_ids=[session.confirms_id], note=f"session #{session.pk}: {message}")
        return _fail(session, message)
    except workloads.WorkloadError as error:
        if Session.objects.filter(pk=session.pk, cancel_requested=True).exists():
            return _fail(session, "Cancelled while a round ran; the rounds measured before are kept.",
                         status=SessionStatus.CANCELLED)
        return _fail(session, f"The workload failed: {error}")
    except Exception as error:
        _fail(session, f"Unexpected error: {type(error).__name__}: {error}")
        raise
    finally:
        heartbeat.stopped.set()
        heartbeat.join()
    return _finish(session, outcome)


def _revisions(session: Session) -> list[dict]:
    """The workloads a session measures: the revisions it names, or, for a plain session, one labelled by its
    job's name (or by the label its stored rounds carry, so a resumed session continues under it)."""
    if session.revisions:
        return session.revisions
    stored = session.rounds.values_list("workload", flat=True).first()
    return [{"label": stored or session.job.name[:Round._meta.get_field("workload").max_length], "commit": ""}]


def _workloads(session: Session) -> dict[str, Callable]:
    """The session's workload for each of its revisions, built here on the benchmark machine. Every revision is
    checked before any is built: a revision an automatic session was not vouched for must be on the job's trusted
    branch, and its setup is given the hash found (:func:`runner.trust.verified_commit`); one refused
    (:class:`runner.trust.UntrustedRevision`) leaves the machine as it was."""
    job = session.job
    revisions = _revisions(session)
    for revision in revisions:
        _check_identifier(revision.get("commit", ""))
    commits = {revision["label"]: _trusted_commit(session, revision) for revision in revisions}

    def remember_process_group(pid: int) -> None:
        Session.objects.filter(pk=session.pk).update(process_group=pid)

    built = {}
    measured = {}
    for revision in revisions:
        label = revision["label"]
        if job.workload_kind == WorkloadKind.BUILTIN:
            # A revision of a built-in workload can only differ by its parameters (e.g. the demo's slowdown).
            parameters = {**job.parameters, **revision.get("parameters", {})}
            built[label] = workloads.builtin_workload(job.builtin, parameters)
            continue
        options = {"cwd": job.working_directory or None, "env": job.environment, "timeout": job.round_timeout,
                   "revision": commits[label], "on_start": remember_process_group}
        if job.setup_command:
            workloads.setup_command(job.setup_command, **options)
        if not revision.get("commit"):
            # A session that named no revision (a scheduled nightly) records the one its checkout holds, so
            # its run is a night of its branch and its alerts can name their commits.
            found = trust.checked_out_revision(job)
            if found is not None:
                measured[label] = found
        built[label] = workloads.command_workload(job.command, reading_mode=job.reading_mode, **options)
    if measured:
        session.revisions = [{**revision, **measured.get(revision["label"], {})} for revision in revisions]
        Session.objects.filter(pk=session.pk).update(revisions=session.revisions)
    return built


def _check_identifier(commit: str) -> None:
    """Checked again where a stored revision becomes a command's argument: rows stored before identifiers were
    checked on entry, or sessions queued before, must not reach git as a refspec or a path."""
    if not commit:
        return
    try:
        check_commit(commit)
    except ValueError as error:
        raise workloads.UnsafeArgument(f"Refused to run the command: the revision {commit[:80]!r} {error}.") from None


def _trusted_commit(session: Session, revision: dict) -> str:
    """The commit a revision of the session is built as: as chosen by staff or vouched for, else the hash the
    machine found on the job's trusted branch (:mod:`runner.trust`)."""
    commit = revision.get("commit", "")
    if not commit or session.trigger in STAFF_TRIGGERS or revision.get("trust", {}).get("vouched") \
            or not trust.builds_revisions(session.job):
        return commit
    return trust.verified_commit(session.job, commit)


def _monitored(workload: Callable, label: str, under_test: str | None,
               sink: dict[str, monitor.MonitorSummary]) -> Callable:
    """The workload with psutil sampling around each round (Pilot §III-B); the summary lands in `sink`."""

    def monitored_round(work_amount: float) -> session_loop.RoundOutcome:
        with monitor.Monitor(under_test=under_test) as sampler:
            outcome = workload(work_amount)
        sink[label] = sampler.summary
        return outcome

    return monitored_round


def _measure_overhead(session: Session, built: dict[str, Callable]) -> None:
    """Pilot §III-C: rounds with and without monitoring, the overhead as a ratio with its Fieller CI."""
    job = session.job
    result = monitor.measure_overhead(
        next(iter(built.values())), job.work_min, rounds=job.overhead_rounds,
        monitor_factory=lambda: monitor.Monitor(under_test=job.component_under_test()),
        confidence=job.confidence_level,
    )
    session.outcome = {**session.outcome, "overhead": {
        "ratio": result.ratio, "low": result.low, "high": result.high, "bounded": result.bounded,
        "confidence_level": result.confidence_level, "rounds": job.overhead_rounds,
    }}
    Session.objects.filter(pk=session.pk).update(outcome=session.outcome)


def _monitor_summary(summary: monitor.MonitorSummary | None) -> dict:
    if summary is None:
        return {}
    return {
        "usage": {name: {"label": usage.label, "unit": usage.unit, "mean": usage.mean, "max": usage.max}
                  for name, usage in summary.usage.items()},
        "warnings": list(summary.warnings), "bottlenecks": list(summary.bottlenecks), "samples": summary.samples,
        "neighbour_cores": summary.neighbour_cores,
    }


def _store_round(session: Session, record: session_loop.RoundRecord, progress: session_loop.Progress,
                 summary: monitor.MonitorSummary | None) -> None:
    units = {metric: np.asarray(values, dtype=SAMPLE_DTYPE) for metric, values in record.outcome.unit_readings.items()}
    with transaction.atomic():
        Round.objects.create(
            session=session, index=record.index, workload=record.workload, work_amount=record.work_amount,
            duration=record.outcome.duration, readings=dict(record.outcome.readings),
            unit_readings=b"".join(values.tobytes() for values in units.values()) or None,
            unit_counts={metric: len(values) for metric, values in units.items()}, analysed=record.analysed,
            monitor=_monitor_summary(summary),
        )
        Session.objects.filter(pk=session.pk).update(
            progress=progress_summary(progress), heartbeat_at=timezone.now(), process_group=None)


def progress_summary(progress: session_loop.Progress) -> dict:
    """A session's progress as stored and served by the API (rounds, CI width vs target, time)."""
    return {
        "rounds_done": progress.rounds_done,
        "elapsed": progress.elapsed,
        "estimated_remaining": progress.estimated_remaining,
        "metrics": [
            {"workload": item.workload, "metric": item.metric, "relative_width": item.relative_width,
             "target_width": item.target_width, "converged": item.converged}
            for item in progress.metrics
        ],
    }


def _fail(session: Session, message: str, *, status: str = SessionStatus.FAILED) -> Session:
    Session.objects.filter(pk=session.pk).update(status=status, error=message,
                                                 finished_at=timezone.now(), process_group=None)
    session.refresh_from_db()
    bisections.after_session(session)
    return session


def _finish(session: Session, outcome: session_loop.SessionOutcome) -> Session:
    """Store the session's runs, outcome and analysis (what its runs' pages show of each metric). The
    analysis (stable phases of every round, by EDM) runs first, outside any transaction; the writes follow
    in one short transaction, so the database's write lock (all of it, on SQLite) is never held while the
    statistics run."""
    documents = _run_documents(session, outcome)
    try:
        analysis = _page_analysis(session, outcome, documents)
    except Exception:  # the measured runs matter more; the run page replays what is missing once
        logger.exception("session %s: its run pages' analysis failed; they will replay it", session.pk)
        analysis = {}
    with transaction.atomic():
        runs = {}
        for document in documents:
            # The runner stores what it measured itself (the system, user None): a revision it ran was vouched
            # for when its session was started (runner.trust).
            run = result_services.ingest_run(document=document, user=None).run
            session.runs.add(run)
            runs[document.environment["workload"]] = run.pk
        if outcome.status is session_loop.SessionStatus.CANCELLED:
            # What a cancelled session measured is kept, titled as cancelled (and out of its series' history).
            Run.objects.filter(pk__in=runs.values()).update(status=Run.Status.CANCELLED)
        if session.confirms_id is not None:
            confirmations.settle_alert(alert_id=session.confirms_id, session_id=session.pk,
                                       decision=_alert_decision(session, outcome, runs))
            bisections.after_settling(session)
        session.status = outcome.status.value
        session.finished_at = timezone.now()
        session.process_group = None
        session.outcome = {
            **session.outcome,
            "message": outcome.message,
            "elapsed": outcome.elapsed,
            "additional_seconds_needed": outcome.additional_seconds_needed,
            "estimates": {label: {name: _estimate_summary(estimate) for name, estimate in estimates.items()}
                          for label, estimates in outcome.estimates.items()},
            "comparisons": [dataclasses.asdict(pair) for pair in outcome.comparisons],
            **({"level": outcome.level.stored()} if outcome.level is not None else {}),
        }
        session.save(update_fields=["status", "finished_at", "process_group", "outcome"])
        bisections.after_session(session)
        SessionAnalysis.objects.update_or_create(session=session, defaults={"workloads": analysis})
    return session


def _page_analysis(session: Session, outcome: session_loop.SessionOutcome, documents: list[RunIn]) -> dict:
    """Every stored result's :func:`runner.replay.analyse_metric`, as JSON by workload and metric, from the
    rounds' stable phases the session found (no EDM runs again: the budget is the session's machine time,
    its analysis included)."""
    targets = session.job.session_targets()
    specs = {spec.name: spec for spec in session.job.metric_specs()}
    analysis = {}
    for document in documents:
        label = document.environment["workload"]
        records = [record for record in outcome.rounds if record.workload == label]
        analysis[label] = {result.metric: replay.analyse_metric(records, specs[result.metric], targets,
                                                                stored=result.samples, found=outcome.phases).as_json()
                           for result in document.results}
    return analysis


def _alert_decision(session: Session, outcome: session_loop.SessionOutcome,
                    runs: dict[str, int]) -> confirmations.PairDecision | None:
    """The session's decision about its alert's metric, candidate over baseline; None when it stored no run
    of a revision or decided nothing about the metric."""
    metric = session.confirms.comparison.candidate.metric.name
    pair = next((pair for pair in outcome.comparisons if pair.metric == metric), None)
    if pair is None or not {"baseline", "candidate"} <= runs.keys():
        return None
    ratio, low, high = pair.ratio, pair.ratio_low, pair.ratio_high
    if pair.first == "candidate" and ratio:
        # The pair is second over first: invert it to candidate over baseline (positive means).
        ratio, low, high = 1.0 / ratio, (1.0 / high if high else None), (1.0 / low if low else None)
    return confirmations.PairDecision(decision=pair.decision, ratio=ratio, low=low, high=high, pvalue=pair.pvalue,
                                      rule=pair.rule)


def _run_documents(session: Session, outcome: session_loop.SessionOutcome) -> list[RunIn]:
    """One run document per workload (revision) with a valid estimate, with the samples analysed."""
    job = session.job
    specs = {spec.name: spec for spec in job.metric_specs()}
    revisions = {entry["label"]: entry for entry in _revisions(session)}
    state = monitor.machine_state()
    documents = []
    for label, estimates in outcome.estimates.items():
        rounds = list(session.rounds.filter(workload=label).values_list("monitor", flat=True))
        neighbours = [summary["neighbour_cores"] for summary in rounds if summary.get("neighbour_cores") is not None]
        # A round's noisy neighbour is said once for the run, with the most cores it took.
        bottlenecks = sorted({warning for summary in rounds
                              for warning in summary.get("bottlenecks", summary.get("warnings", []))})
        noisy = [cores for cores in neighbours if cores >= NEIGHBOUR_CORES]
        if noisy:
            bottlenecks.append(f"{monitor.NEIGHBOUR_WARNING} up to {max(noisy):.1f} cores busy in {len(noisy)} of "
                               f"{len(rounds)} rounds: a noisy neighbour")
        results = [
            _result_document(spec=specs[name], estimate=estimate, job=job, bottlenecks=bottlenecks,
                             samples=session_loop.analysed_samples(outcome.rounds, name, label,
                                                                   job.session_targets(), phases=outcome.phases))
            for name, estimate in estimates.items() if estimate.valid
        ]
        if not results:
            continue
        revision = revisions.get(label, {})
        documents.append(RunIn.model_validate({
            "project": {"name": job.project.name, "slug": job.project.slug},
            "machine": {"name": job.machine.name},
            "revision": {"commit": revision["commit"], "branch": revision.get("branch", ""),
                         **({"timestamp": revision["timestamp"]} if revision.get("timestamp") else {})}
            if revision.get("commit") else None,
            "kind": session.run_kind,
            "started_at": session.started_at,
            "finished_at": timezone.now(),
            "source": f"pilotweb session #{session.pk}",
            "environment": {"session": session.pk, "workload": label, "job": job.name, **state,
                            **({"neighbour_cores": round(max(neighbours), 2)} if neighbours else {})},
            "results": results,
        }))
    return documents


def _estimate_summary(estimate: session_loop.MetricEstimate) -> dict:
    return {key: value for key, value in dataclasses.asdict(estimate).items() if key != "confidence"}


def _result_document(*, spec: session_loop.MetricSpec, estimate: session_loop.MetricEstimate, job: Job,
                     samples: np.ndarray | None, bottlenecks: list[str]) -> dict:
    return {
        "benchmark": job.benchmark, "metric": spec.name, "unit": spec.unit, "direction": str(spec.direction),
        "confidence_level": job.confidence_level, "warmup_removed": estimate.warmup_removed,
        "converged": estimate.converged,
        "summary": {"mean": estimate.mean, "subsession_size": estimate.subsession_size,
                    "variance": estimate.variance, "n": estimate.n,
                    "variance_method": "wps" if estimate.method == "wps" else estimate.variance_method},
        "samples": None if samples is None or samples.size == 0 else samples.tolist(),
        "metadata": {"method": estimate.method, "message": estimate.message, "bottlenecks": bottlenecks},
    }
