"""``/runs/``: every run, newest first, filtered by GET parameters (the permalink) and paginated."""

from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from django import forms
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .. import exports, nights, selectors
from ..access import readable
from ..models import Run
from ..presentation import VERDICT_ICONS


class RunFilters(forms.Form):
    project = forms.SlugField(required=False)
    machine = forms.CharField(required=False, max_length=200)
    branch = forms.CharField(required=False, max_length=200, strip=True)
    kind = forms.ChoiceField(required=False, choices=[("", "any kind"), *Run.Kind.choices])
    commit = forms.RegexField(required=False, regex=r"^[0-9a-fA-F]{4,64}$", strip=True,
                              error_messages={"invalid": "A commit prefix is 4 to 64 hexadecimal digits."})
    since = forms.DateField(required=False, input_formats=["%Y-%m-%d"], validators=[nights.validate_day])
    until = forms.DateField(required=False, input_formats=["%Y-%m-%d"], validators=[nights.validate_day])

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("since") and cleaned.get("until") and cleaned["since"] > cleaned["until"]:
            self.add_error("until", "The last day comes before the first.")
        return cleaned


@readable
@exports.downloadable
def runs(request: HttpRequest, *, export: str | None) -> HttpResponse:
    """The runs, filtered; a filter that is not understood is said so and ignored, never a 500."""
    form = RunFilters(request.GET)
    form.is_valid()
    filters = {name: value for name, value in form.cleaned_data.items() if name not in form.errors}
    zone = ZoneInfo(settings.TIME_ZONE)
    since, until = filters.pop("since", None), filters.pop("until", None)
    found = selectors.run_list(
        viewer=request.user, page=request.GET.get("page"), per_page=selectors.RUNS_PER_EXPORT if export else selectors.RUNS_PER_PAGE,
        **{name: value or None for name, value in filters.items()},
        start=datetime.combine(since, time.min, tzinfo=zone) if since else None,
        end=datetime.combine(until + timedelta(days=1), time.min, tzinfo=zone) if until else None)
    if export:
        return exports.response(exports.run_records(found.page.object_list, url=request.build_absolute_uri("/runs/")),
                                name="runs", format_name=export)
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "results/runs.html", {
        "form": form, "page": found.page, "query": query.urlencode(), "filtered": bool(query),
        "icons": VERDICT_ICONS, "time_zone": settings.TIME_ZONE,
    })
