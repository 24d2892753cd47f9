"""A project's sheriff numbers: the alerts and incidents opened week by week, the share later found false, the
regressions confirmed, and the hours to the alert and to its triage, as a table, a chart and downloads."""

from django import forms
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render

from .. import charts, exports, selectors
from ..access import readable
from ..models import Project


class SheriffForm(forms.Form):
    weeks = forms.IntegerField(required=False, min_value=1, max_value=selectors.SHERIFF_MAX_WEEKS)


@readable
@exports.downloadable
def sheriff(request: HttpRequest, slug: str, *, export: str | None) -> HttpResponse:
    form = SheriffForm(request.GET or None)
    valid = form.is_valid() or not request.GET.get("weeks")
    weeks = (form.cleaned_data.get("weeks") if form.is_valid() else None) or selectors.SHERIFF_WEEKS
    if export and not valid:
        return HttpResponseBadRequest(f"weeks: {' '.join(form.errors['weeks'])}",
                                      content_type="text/plain; charset=utf-8")
    try:
        numbers = selectors.sheriff_numbers(viewer=request.user, project=slug, weeks=weeks)
    except Project.DoesNotExist:
        raise Http404("No such project.") from None
    if export:
        return exports.response(exports.sheriff_records(numbers), name=f"sheriff-{slug}", format_name=export)
    figure = charts.sheriff_figure(
        [week.start for week in numbers.weeks], alerts=[week.alerts for week in numbers.weeks],
        false_alerts=[week.false_alerts for week in numbers.weeks],
        hours_to_alert=[week.hours_to_alert for week in numbers.weeks],
        hours_to_triage=[week.hours_to_triage for week in numbers.weeks],
        culprits=[week.culprits for week in numbers.weeks])
    return render(request, "results/sheriff.html", {
        "numbers": numbers, "form": form, "weeks": weeks, "most_weeks": selectors.SHERIFF_MAX_WEEKS,
        "figures": {"sheriff": figure},
        "newest_first": list(reversed(numbers.weeks)),
    }, status=200 if valid else 400)
