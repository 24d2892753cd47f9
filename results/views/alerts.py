"""Alert triage: alerts grouped per run, filtered by status and project (GET, so every view is a
permalink), each with its history and confirmation sessions; logged-in users change a status with a note."""


from django import forms
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from .. import selectors
from ..access import readable
from ..alerts import set_alert_status
from ..models import Alert, AlertStatus, Project


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
    return _alert_list(request)


@readable
def _alert_list(request: HttpRequest) -> HttpResponse:
    filters = AlertFilterForm(request.GET or None)
    status = project = None
    if filters.is_valid():
        status = filters.cleaned_data["status"] or None
        project = filters.cleaned_data["project"].slug if filters.cleaned_data["project"] else None
    page = selectors.alert_page(status=status, project=project, page=request.GET.get("page"))
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
        alert = set_alert_status(alert=alert, status=form.cleaned_data["status"],
                                             note=form.cleaned_data["note"], user=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, f"Alert #{alert.pk} is now {alert.get_status_display()}.")
    return redirect(f"{request.get_full_path()}#alert-{alert.pk}")
