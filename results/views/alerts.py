"""Alert triage: alerts grouped per run, filtered by status and project (GET, so every view is a
permalink), each with its history and confirmation sessions; logged-in users change a status with a note."""


from django import forms
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from .. import comparisons, selectors
from ..models import Alert, AlertStatus, Project
from .nightly import readable

PAGE_SIZE = 100
VERDICT_LABELS = {
    "regression": "▲ regression", "improvement": "▼ improvement", "inconclusive": "? inconclusive",
    "no change": "≈ no change", "insufficient history": "· insufficient history",
}


class AlertFilterForm(forms.Form):
    status = forms.ChoiceField(required=False, choices=[("", "any status"), *AlertStatus.choices])
    project = forms.ModelChoiceField(required=False, queryset=Project.objects.order_by("name"),
                                     to_field_name="slug", empty_label="every project")


class AlertStatusForm(forms.Form):
    alert = forms.IntegerField(widget=forms.HiddenInput)
    status = forms.ChoiceField(choices=AlertStatus.choices)
    note = forms.CharField(required=False, max_length=2000)


def alerts(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _set_status(request)
    if not readable(request):
        return redirect_to_login(request.get_full_path())
    filters = AlertFilterForm(request.GET or None)
    status = project = None
    if filters.is_valid():
        status = filters.cleaned_data["status"] or None
        project = filters.cleaned_data["project"].slug if filters.cleaned_data["project"] else None
    page = Paginator(selectors.alerts(status=status, project=project), PAGE_SIZE).get_page(request.GET.get("page"))
    for alert in page:
        alert.display = _display(alert)
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "results/alerts.html", {
        "filters": filters, "page": page, "query": query.urlencode(), "statuses": AlertStatus.choices,
    })


def _set_status(request: HttpRequest) -> HttpResponse:
    """POST: change one alert's status with a note, then back to the same filtered list."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    form = AlertStatusForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a status: " + "; ".join(
            f"{field}: {' '.join(errors)}" for field, errors in form.errors.items()))
        return redirect(request.get_full_path())
    alert = get_object_or_404(Alert, pk=form.cleaned_data["alert"])
    try:
        alert = comparisons.set_alert_status(alert=alert, status=form.cleaned_data["status"],
                                             note=form.cleaned_data["note"], user=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, f"Alert #{alert.pk} is now {alert.get_status_display()}.")
    return redirect(f"{request.get_full_path()}#alert-{alert.pk}")


def _display(alert: Alert) -> dict:
    """What a row shows of the alert's comparison, formatted once here."""
    comparison = alert.comparison
    return {
        "change": comparison.change or "—", "pvalue": _p(comparison.pvalue), "qvalue": _p(comparison.qvalue),
        "high_p": comparison.high_p,
        "verdict": VERDICT_LABELS.get(comparison.verdict, comparison.verdict),
        "verdict_class": "verdict-" + comparison.verdict.replace(" ", "-"),
    }


def _p(value: float | None) -> str:
    if value is None:
        return "—"
    if value < 1e-4:
        return "<0.0001"
    return f"{value:.2g}"
