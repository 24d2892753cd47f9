"""Pages of the runner: jobs and their schedules, a session's progress, and the staff-only writes.

Reading follows ``PILOTWEB_PUBLIC_READ``; defining, scheduling, running and cancelling are for staff
(the services refuse anyone else too). Each view parses input, calls one selector or service, renders.
"""

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from results.views.nightly import readable

from . import selectors, services
from .forms import JobForm
from .models import Job, Session, SessionStatus


def duration(seconds: float | None) -> str:
    """Seconds as "42 s", "3 min 05 s" or "1 h 02 min" (progress.js formats the same way)."""
    if seconds is None:
        return "—"
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds // 60 % 60:02d} min"


def progress_view(session: Session) -> dict:
    """What the progress bar shows (progress.js computes the same from the API's JSON)."""
    progress = session.progress or {}
    rounds, elapsed, remaining = progress.get("rounds_done", 0), progress.get("elapsed"), \
        progress.get("estimated_remaining")
    if session.finished:
        fraction = 1.0
    elif session.status == SessionStatus.RUNNING and elapsed is not None and remaining is not None:
        fraction = elapsed / (elapsed + remaining) if elapsed + remaining > 0 else 0.0
    else:
        fraction = None
    figures = [f"{rounds} round{'s' if rounds != 1 else ''}"]
    if session.status == SessionStatus.QUEUED:
        figures.append("waiting for a worker")
    else:
        figures.append(f"{duration(elapsed or 0)} elapsed")
        if not session.finished:
            figures.append(f"~{duration(remaining)} left" if remaining is not None else "time left unknown")
    metrics = []
    for item in progress.get("metrics", []):
        width, target = item.get("relative_width"), item.get("target_width")
        if item.get("converged"):
            percent = 100
        elif width and target:
            percent = min(100, round(100 * target / width))
        else:
            percent = 0
        metrics.append({
            "workload": item.get("workload", ""), "metric": item.get("metric", ""),
            "width": "—" if width is None else f"{100 * width:.1f}%",
            "target": "—" if target is None else f"{100 * target:.1f}%", "percent": percent,
            "state": "✓ within target" if item.get("converged") else "… narrowing",
        })
    return {"fraction": fraction, "percent": None if fraction is None else round(100 * fraction),
            "figures": " · ".join(figures), "metrics": metrics}


def _check_readable(request: HttpRequest) -> HttpResponse | None:
    if not readable(request):
        return redirect_to_login(request.get_full_path())
    return None


def _check_staff(request: HttpRequest) -> HttpResponse | None:
    """Anonymous visitors are sent to log in; a logged-in non-staff user gets 403."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    if not request.user.is_staff:
        raise PermissionDenied(services.STAFF_ONLY)
    return None


def job_list(request: HttpRequest) -> HttpResponse:
    """Every job with its schedule and last session; sessions under way with their progress."""
    if (refused := _check_readable(request)) is not None:
        return refused
    jobs = selectors.jobs_with_last_session()
    active = [job.last_session for job in jobs if job.last_session is not None and not job.last_session.finished]
    for session in active:
        session.view = progress_view(session)
    return render(request, "runner/jobs.html", {"jobs": jobs, "active_sessions": active})


def job_create(request: HttpRequest) -> HttpResponse:
    if (refused := _check_staff(request)) is not None:
        return refused
    form = JobForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            job = services.create_job(user=request.user, cron=form.cleaned_data["cron"], **form.job_fields())
        except ValidationError as error:
            form.add_service_errors(error)
        else:
            messages.success(request, f"Job “{job.name}” created" + (" and scheduled." if job.schedule_id else "."))
            return redirect("runner:jobs")
    return render(request, "runner/job_form.html", {"form": form, "job": None})


def job_edit(request: HttpRequest, job_id: int) -> HttpResponse:
    if (refused := _check_staff(request)) is not None:
        return refused
    job = get_object_or_404(Job.objects.select_related("schedule__crontab"), pk=job_id)
    form = JobForm(request.POST or None, instance=job)
    if request.method == "POST" and form.is_valid():
        try:
            # The job and its schedule change together or not at all.
            with transaction.atomic():
                services.update_job(job=job, user=request.user, **form.job_fields())
                services.set_schedule(job=job, cron=form.cleaned_data["cron"], user=request.user)
        except ValidationError as error:
            form.add_service_errors(error)
        else:
            messages.success(request, f"Job “{job.name}” saved.")
            return redirect("runner:jobs")
    return render(request, "runner/job_form.html", {"form": form, "job": job})


@require_POST
def job_run(request: HttpRequest, job_id: int) -> HttpResponse:
    """"Run now": queue a session on the job's machine and show it."""
    if (refused := _check_staff(request)) is not None:
        return refused
    job = get_object_or_404(Job.objects.select_related("machine"), pk=job_id)
    session = services.start_session(job=job, user=request.user)
    session.refresh_from_db(fields=["sent_at"])
    if session.sent_at is None:
        messages.warning(request, f"Session #{session.pk}: {services.NOT_SENT}")
    else:
        messages.success(request, f"Session #{session.pk} of “{job.name}” queued on {job.machine.name}.")
    return redirect("runner:session", session_id=session.pk)


@require_POST
def session_cancel(request: HttpRequest, session_id: int) -> HttpResponse:
    if (refused := _check_staff(request)) is not None:
        return refused
    session = get_object_or_404(Session, pk=session_id)
    session = services.cancel_session(session=session, user=request.user)
    if session.cancel_requested and not session.finished:
        messages.info(request, f"Cancelling session #{session.pk}: its running round is being stopped.")
    else:
        messages.info(request, f"Session #{session.pk} is {session.get_status_display()}.")
    return redirect("runner:session", session_id=session.pk)


def session_detail(request: HttpRequest, session_id: int) -> HttpResponse:
    """A session's status, live progress, rounds and resulting runs."""
    if (refused := _check_readable(request)) is not None:
        return refused
    try:
        session = selectors.session(session_id=session_id)
    except Session.DoesNotExist:
        raise Http404(f"No session {session_id}.") from None
    return render(request, "runner/session.html", {
        "session": session, "view": progress_view(session), "rounds": session.rounds.all(),
    })
