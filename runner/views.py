"""Pages of the runner: jobs and their schedules, a session's progress, and the staff-only writes.

Reading follows ``PILOTWEB_PUBLIC_READ``; defining, scheduling, running and cancelling are for staff
(the services refuse anyone else too). Each view parses input, calls one selector or service, renders.
"""

from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseForbidden
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from results import access, exports, presentation
from results import selectors as result_selectors
from results.access import readable

from . import heartbeat, selectors, services
from .bisection import service as bisection_service
from .forms import JobForm, command_preview
from .models import Bisection, Job, Session
from .pairs import session_pairs
from .progress import progress_view, round_records

staff_only = access.staff_only(services.STAFF_ONLY)
MAX_ROUND_INDEX = 2**31 - 1
"""The largest round index the database holds (a larger ``after`` is a 400, not a database error)."""


@readable
def job_list(request: HttpRequest) -> HttpResponse:
    """Every job with its schedule and last session; sessions under way with their progress."""
    jobs = selectors.jobs_with_last_session(viewer=request.user)
    active = [job.last_session for job in jobs if job.last_session is not None and not job.last_session.finished]
    for session in active:
        session.view = progress_view(session)
    return render(request, "runner/jobs.html", {"jobs": jobs, "active_sessions": active})


@staff_only
def job_create(request: HttpRequest) -> HttpResponse:
    form = JobForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            job = services.create_job(user=request.user, cron=form.cleaned_data["cron"], **form.job_fields())
        except ValidationError as error:
            form.add_service_errors(error)
        else:
            messages.success(request, f"Job “{job.name}” created" + (" and scheduled." if job.schedule_id else "."))
            _warn_without_worker(request, job)
            return redirect("runner:jobs")
    return render(request, "runner/job_form.html", {"form": form, "job": None})


@staff_only
def job_edit(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(Job.objects.select_related("schedule__crontab"), pk=job_id)
    form = JobForm(request.POST or None, instance=job)
    if request.method == "POST" and form.is_valid():
        try:
            services.update_job(job=job, user=request.user, cron=form.cleaned_data["cron"], **form.job_fields())
        except ValidationError as error:
            form.add_service_errors(error)
        else:
            messages.success(request, f"Job “{job.name}” saved.")
            _warn_without_worker(request, job)
            return redirect("runner:jobs")
    return render(request, "runner/job_form.html", {"form": form, "job": job})


@require_POST
@staff_only
def job_run(request: HttpRequest, job_id: int) -> HttpResponse:
    """"Run now": queue a session on the job's machine and show it."""
    job = get_object_or_404(Job.objects.select_related("machine"), pk=job_id)
    session = services.start_session(job=job, user=request.user)
    session.refresh_from_db(fields=["sent_at"])
    if session.sent_at is None:
        messages.warning(request, f"Session #{session.pk}: {services.NOT_SENT}")
    else:
        messages.success(request, f"Session #{session.pk} of “{job.name}” queued on {job.machine.name}.")
    _warn_without_worker(request, job)
    return redirect("runner:session", session_id=session.pk)


def _warn_without_worker(request: HttpRequest, job: Job) -> None:
    warning = heartbeat.no_worker_warning(job.machine)
    if warning:
        messages.warning(request, warning)


@require_GET
@staff_only
def command_preview_fragment(request: HttpRequest) -> HttpResponse:
    """The job form's live preview: the arguments a typed command (``?command=``) runs as, or why it does not
    split, rendered as the form renders it after a submit."""
    return render(request, "runner/_command_preview.html",
                  {"preview": command_preview(request.GET.get("command", "")), "show_error": True})


@require_http_methods(["GET", "POST"])
@staff_only
def session_cancel(request: HttpRequest, session_id: int) -> HttpResponse:
    """Cancel a session once confirmed (``confirm=yes``, which the pages' confirm dialog adds); without it, a
    page asks first, so cancelling takes a second step with or without JavaScript."""
    session = get_object_or_404(Session.objects.select_related("job__machine"), pk=session_id)
    if request.method == "GET" or request.POST.get("confirm") != "yes":
        return render(request, "runner/session_cancel.html", {"session": session})
    session = services.cancel_session(session=session, user=request.user)
    if session.cancel_requested and not session.finished:
        messages.info(request, f"Cancelling session #{session.pk}: its running round is being stopped.")
    else:
        messages.info(request, f"Session #{session.pk} is {session.get_status_display()}.")
    return redirect("runner:session", session_id=session.pk)


@readable
@exports.downloadable
def session_detail(request: HttpRequest, session_id: int, *, export: str | None) -> HttpResponse:
    """A session's status, live progress, rounds and resulting runs; ``?format=csv|json``: its rounds."""
    try:
        session = selectors.session(session_id=session_id, viewer=request.user)
    except Session.DoesNotExist:
        raise Http404(f"No session {session_id}.") from None
    rounds, scales = selectors.session_rounds(session_id=session.pk), selectors.reading_scales(session=session)
    if export:
        return exports.response(round_records(rounds, scales), name=f"session-{session.pk}-rounds",
                                format_name=export)
    return render(request, "runner/session.html", {
        "session": session, "view": progress_view(session), "rounds": rounds, "pairs": session_pairs(session),
        "scales": scales,
    })


@readable
def session_rounds(request: HttpRequest, session_id: int) -> HttpResponse:
    """The rows of a session's rounds table after round ``?after=`` (an index), which its page polls while
    the session runs so new rounds appear without a reload."""
    try:
        after = int(request.GET.get("after", "-1"))
    except ValueError:
        after = None
    if after is None or not -1 <= after <= MAX_ROUND_INDEX:
        return HttpResponseBadRequest(f"after must be a round index (an integer from -1 to {MAX_ROUND_INDEX}).")
    try:
        session = selectors.session(session_id=session_id, viewer=request.user)
    except Session.DoesNotExist:
        raise Http404(f"No session {session_id}.") from None
    return render(request, "runner/_round_rows.html", {
        "rounds": selectors.session_rounds(session_id=session_id, after=after),
        "scales": selectors.reading_scales(session=session)})


@readable
def machines(request: HttpRequest) -> HttpResponse:
    """The machines the reader may see, a page at a time (``?search=`` narrows them by name): hardware, queue,
    last seen, runs, and the sessions queued or running on it."""
    search = request.GET.get("search", "").strip()[:200]
    page = selectors.machine_page(viewer=request.user, search=search, page=request.GET.get("page"))
    entries = [(entry, presentation.hardware_facts(entry.machine.hardware)) for entry in page.object_list]
    return render(request, "runner/machines.html", {"machines": entries, "page": page, "search": search})


class BisectionStartForm(forms.Form):
    alert = forms.IntegerField(min_value=1, max_value=2**63 - 1)


@require_POST
def bisection_start(request: HttpRequest) -> HttpResponse:
    """POST by a maintainer of the alert's project (or staff): bisect the alert's night to its culprit, then back
    to the alert."""
    if not request.user.is_authenticated:
        return redirect_to_login(reverse("results:alerts"))
    form = BisectionStartForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest("Not started: " + " ".join(form.errors.get("alert", [])))
    alert = get_object_or_404(result_selectors.alerts(viewer=request.user), pk=form.cleaned_data["alert"])
    try:
        bisection = bisection_service.start_bisection(alert=alert, user=request.user)
    except PermissionDenied as refused:
        return HttpResponseForbidden(str(refused))
    except ValidationError as error:
        messages.error(request, "Not started: " + " ".join(error.messages))
    else:
        messages.success(request, f"Bisection #{bisection.pk} of alert #{alert.pk} started: its range is listed on "
                                  f"{bisection.job.machine.name}, then one A/B session a step.")
    return redirect(_alert_address(alert))


@require_POST
def bisection_cancel(request: HttpRequest, bisection_id: int) -> HttpResponse:
    """POST by a maintainer of the project (or staff): cancel a bisection under way with its session."""
    if not request.user.is_authenticated:
        return redirect_to_login(reverse("results:alerts"))
    bisection = get_object_or_404(Bisection.objects.select_related("alert").filter(
        alert__in=result_selectors.alerts(viewer=request.user)), pk=bisection_id)
    under_way = bisection.status in bisection_service.ACTIVE
    try:
        bisection = bisection_service.cancel_bisection(bisection=bisection, user=request.user)
    except PermissionDenied as refused:
        return HttpResponseForbidden(str(refused))
    if under_way:
        messages.success(request, f"Bisection #{bisection.pk}: cancelled.")
    else:
        messages.info(request, f"Bisection #{bisection.pk} had ended already: {bisection.get_status_display()}.")
    return redirect(_alert_address(bisection.alert))


def _alert_address(alert) -> str:
    """The alert on the alert list of its project."""
    return f"{reverse('results:alerts')}?{urlencode({'project': alert.group.run.project.slug})}#alert-{alert.pk}"
