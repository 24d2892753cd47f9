"""A project's sheriff numbers: the alerts and incidents opened week by week, the share later found false, the
regressions confirmed, and the hours to the alert and to its triage, as a table, a chart and downloads."""

from django import forms
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from .. import charts, exports, selectors
from ..access import readable
from ..models import Project


class SheriffForm(forms.Form):
    weeks = forms.IntegerField(required=False, min_value=1, max_value=260)


@readable
@exports.downloadable
def sheriff(request: HttpRequest, slug: str, *, export: str | None) -> HttpResponse:
    form = SheriffForm(request.GET or None)
    weeks = (form.cleaned_data["weeks"] if form.is_valid() else None) or selectors.SHERIFF_WEEKS
    try:
        numbers = selectors.sheriff_numbers(viewer=request.user, project=slug, weeks=weeks)
    except Project.DoesNotExist:
        raise Http404("No such project.") from None
    if export:
        return exports.response(exports.sheriff_records(numbers), name=f"sheriff-{slug}", format_name=export)
    figure = charts.sheriff_figure([charts.SheriffPoint(week.start, week.alerts, week.false_alerts,
                                                        week.hours_to_alert, week.hours_to_triage)
                                    for week in numbers.weeks])
    return render(request, "results/sheriff.html", {
        "numbers": numbers, "form": form, "weeks": weeks, "figures": {"sheriff": figure},
        "newest_first": list(reversed(numbers.weeks)),
    }, status=200 if form.is_valid() or not request.GET.get("weeks") else 400)
