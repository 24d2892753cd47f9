"""Alert triage: alerts in sections per project and night, the same shift on several machines together,
filtered by status, project and "assigned to me" (GET, so every view is a permalink), each with its commit
range, history and confirmation sessions; logged-in users change a status with a note, the bug link and the
assignee."""


from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from .. import exports, selectors
from ..access import readable
from ..triage import triage_alert, triage_incident
from ..models import AlertStatus

ASSIGNED_TO_ME_LOGIN = "Log in to see the alerts assigned to you."


class AlertFilterForm(forms.Form):
    status = forms.ChoiceField(required=False, choices=[("", "any status"), *AlertStatus.choices])
    project = forms.SlugField(required=False, max_length=100)
    mine = forms.BooleanField(required=False, label="assigned to me")


class _TriageForm(forms.Form):
    """What a triage sets: the status with a note, and where given, the bug link and the assignee."""

    status = forms.ChoiceField(choices=AlertStatus.choices)
    note = forms.CharField(required=False, max_length=2000)
    bug_url = forms.URLField(required=False, max_length=500, assume_scheme="https", label="bug link")
    assignee = forms.ModelChoiceField(required=False, queryset=get_user_model().objects.filter(is_active=True))


class IncidentTriageForm(_TriageForm):
    field_order = ["incident"]
    incident = forms.IntegerField(widget=forms.HiddenInput, min_value=1, max_value=2**63 - 1)


class AlertTriageForm(_TriageForm):
    field_order = ["alert"]
    alert = forms.IntegerField(widget=forms.HiddenInput, min_value=1, max_value=2**63 - 1)


def alerts(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _triage(request)
    return _alert_list(request)


@readable
@exports.downloadable
def _alert_list(request: HttpRequest, *, export: str | None) -> HttpResponse:
    filters = AlertFilterForm(request.GET or None)
    status = project = assignee = None
    if filters.is_valid():
        status = filters.cleaned_data["status"] or None
        project = filters.cleaned_data["project"] or None
        if filters.cleaned_data["mine"]:
            if request.user.is_authenticated:
                assignee = request.user
            else:
                filters.add_error("mine", ASSIGNED_TO_ME_LOGIN)
    listing = selectors.alert_page(viewer=request.user, status=status, project=project, assignee=assignee,
                                   page=request.GET.get("page"))
    if export:
        return exports.response(exports.alert_records(listing), name="alerts", format_name=export)
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "results/alerts.html", {
        "filters": filters, "listing": listing, "page": listing.page, "query": query.urlencode(),
        "statuses": AlertStatus.choices,
    })


_TRIAGED = {
    # What a triage form names: its form, the rows the viewer may triage, and the service that triages one.
    "alert": (AlertTriageForm, selectors.alerts, triage_alert),
    "incident": (IncidentTriageForm, selectors.incidents, triage_incident),
}


def _triage(request: HttpRequest) -> HttpResponse:
    """POST: change one alert's status (with a note), bug link and assignee, or an incident's and with it its
    alerts', then back to the same filtered list. A bug link or assignee left out of the form is kept as it is."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    kind = "incident" if "incident" in request.POST else "alert"
    form_class, rows, service = _TRIAGED[kind]
    form = form_class(request.POST)
    if not form.is_valid():
        return _refused(request, form)
    chosen = form.cleaned_data
    target = get_object_or_404(rows(viewer=request.user), pk=chosen[kind])
    # A field the form leaves out is not given: the service keeps it as it is.
    given = {field: chosen[field] for field in ("bug_url", "assignee") if field in request.POST}
    try:
        target = service(**{kind: target}, status=chosen["status"], note=chosen["note"], user=request.user, **given)
    except ValidationError as error:
        messages.error(request, "Not changed: " + " ".join(error.messages))
    else:
        messages.success(request, _triaged(kind, target))
    return redirect(f"{request.get_full_path()}#{kind}-{target.pk}")


def _triaged(kind: str, target) -> str:
    if kind == "incident":
        return f"Incident #{target.pk} and its alerts are now {target.get_status_display()}."
    return (f"Alert #{target.pk} is now {target.get_status_display()}"
            + (f", assigned to {target.assignee.get_username()}" if target.assignee else "") + ".")


def _refused(request: HttpRequest, form) -> HttpResponse:
    """An invalid triage form: nothing changed, each field's errors said, back to the same filtered list."""
    messages.error(request, "Not changed: " + "; ".join(
        f"{_label(form, field)}: {' '.join(errors)}" for field, errors in form.errors.items()))
    return redirect(request.get_full_path())


def _label(form: forms.Form, field: str) -> str:
    return (form.fields[field].label or field.replace("_", " ")) if field in form.fields else field
