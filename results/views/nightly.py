"""Server-rendered pages that answer "did tonight regress?". Each view parses input, calls one selector, renders.

* ``/``: every series of a night (the newest by default) per project and machine against its history;
* ``/compare/?baseline=<run>&candidate=<run>``: any two runs compared on the fly;
* ``/runs/<run>/pr/``: a pull-request run against its base, with a Markdown summary for the PR.

Every view is a GET whose parameters are the permalink.
"""


from django import forms
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone

from .. import comparisons, decisions, exports, nights, presentation, reports, selectors
from ..access import readable
from ..models import Run, Verdict
from ..decisions import ALPHA, NOT_COMPARED, VERDICT_ORDER
from ..presentation import VERDICT_ICONS


class OverviewFilters(forms.Form):
    project = forms.SlugField(required=False)
    machine = forms.CharField(required=False, max_length=200)
    benchmark = forms.CharField(required=False, max_length=200, strip=True)
    verdict = forms.ChoiceField(required=False, choices=[("", "any verdict"), *Verdict.choices])
    night = forms.DateField(required=False, input_formats=["%Y-%m-%d"], validators=[nights.validate_day],
                            help_text="The night to show; empty: each project and machine's newest night.")
    all = forms.BooleanField(required=False, help_text="Every series, not only the most notable of each night.")


RUN_ID_ERRORS = {"invalid": "Run ids are whole numbers.", "min_value": "Run ids are whole numbers."}


class CompareForm(forms.Form):
    baseline = forms.IntegerField(min_value=1, required=False, error_messages=RUN_ID_ERRORS)
    candidate = forms.IntegerField(min_value=1, required=False, error_messages=RUN_ID_ERRORS)
    all = forms.BooleanField(required=False, help_text="Every series, not only the most notable.")
    search = forms.CharField(required=False, max_length=100, strip=True,
                             help_text="A commit prefix or part of a branch name: the pickers list its runs.")
    against = forms.ChoiceField(required=False, choices=[("", "the baseline chosen"),
                                                         *selectors.COMPARE_SHORTCUTS.items()])


@readable
@exports.downloadable
def home(request: HttpRequest, *, export: str | None) -> HttpResponse:
    """The nightly overview: every series of the newest night (or ``?night=``) against its history, worst
    first, filterable by GET parameters."""
    form = OverviewFilters(request.GET)
    form.is_valid()
    filters = {name: value for name, value in form.cleaned_data.items() if name not in form.errors}
    overview = selectors.nightly_overview(
        viewer=request.user, project=filters.get("project") or None, machine=filters.get("machine") or None,
        benchmark=filters.get("benchmark") or None, verdict=filters.get("verdict") or None,
        night=filters.get("night"), limit=None if filters.get("all") or export else selectors.ROW_LIMIT,
        page=request.GET.get("page"))
    if export:
        records = [record for entry in overview.projects for group in entry.groups
                   for record in exports.comparison_records(group.rows, extra={
                       "project": entry.project.slug, "night": group.night.isoformat()})]
        return exports.response(records, name="nightly", format_name=export, columns=exports.COMPARISON_COLUMNS)
    return render(request, "results/home.html", {
        "form": form, "overview": overview, "filtered": any(filters.values()),
        "night_query": _without(request.GET, "night"), "page_query": _without(request.GET, "page"),
        "time_zone": settings.TIME_ZONE,
        "night_starts": f"{settings.PILOTWEB_NIGHT_STARTS_AT:02d}:00",
        "verdicts": [(value, VERDICT_ICONS[value]) for value in VERDICT_ORDER if value != NOT_COMPARED],
        "alpha": ALPHA, "sparkline_points": selectors.SPARKLINE_POINTS,
    })


def _without(query: QueryDict, name: str) -> str:
    """The query string without `name`, ready for ``?{{ query }}&name=…`` links."""
    kept = query.copy()
    kept.pop(name, None)
    return kept.urlencode()


@readable
@exports.downloadable
def compare(request: HttpRequest, *, export: str | None) -> HttpResponse:
    """Any two runs compared series by series (Welch and Fieller, computed now by the comparison service).

    The pickers list the newest runs, those matching ``search`` (a commit prefix or part of a branch name)
    where given. ``against`` with a candidate and no baseline is a shortcut (``nightly``: the newest nightly
    of the default branch on the candidate's machine before it; ``base``: a pull request's base commit's
    run there): the baseline it finds is put in the address, the pair's permalink."""
    form = CompareForm(request.GET)
    form.is_valid()
    chosen = form.cleaned_data  # the fields understood; the others are said and ignored
    baseline, candidate, against = chosen.get("baseline"), chosen.get("candidate"), chosen.get("against")
    status, error, comparison = 200, "", None
    if against and candidate is not None and baseline is None:
        try:
            found = selectors.shortcut_baseline(candidate_id=candidate, against=against, viewer=request.user)
        except Run.DoesNotExist as missing:
            status, error = 404, str(missing)
        except ValueError as wrong:
            status, error = 400, str(wrong)
        else:
            query = request.GET.copy()
            query.pop("against")
            query["baseline"] = str(found)
            return redirect(f"{reverse('results:compare')}?{query.urlencode()}")
    elif baseline is not None and candidate is not None:
        try:
            comparison = comparisons.compare_stored_runs(
                baseline_id=baseline, candidate_id=candidate,
                limit=None if chosen.get("all") or export else selectors.ROW_LIMIT)
        except Run.DoesNotExist as missing:
            status, error = 404, str(missing)
        else:
            if export:
                return exports.response(exports.comparison_records(comparison.rows, extra={
                    "project": comparison.candidate.project.slug}), name=f"compare-{baseline}-{candidate}",
                    format_name=export, columns=exports.COMPARISON_COLUMNS)
    search = chosen.get("search", "")
    runs = selectors.recent_runs(viewer=request.user, search=search,
                                 include=[pk for pk in (baseline, candidate) if pk is not None])
    return render(request, "results/compare.html", {
        "form": form, "comparison": comparison, "error": error, "baseline_id": baseline, "candidate_id": candidate,
        "alpha": ALPHA, "run_choices": _run_choices(runs), "search": search,
        "form_errors": sorted({message for messages in form.errors.values() for message in messages}),
        "matching": sum(1 for run in runs if run["pk"] not in (baseline, candidate)) if search else None,
        "candidate_kind": next((run["kind"] for run in runs if run["pk"] == candidate), None),
        "shortcuts": selectors.COMPARE_SHORTCUTS,
    }, status=status)


def _run_choices(runs: list[dict]) -> list[tuple[str, list[tuple[int, str]]]]:
    """The run pickers' options, grouped by project and labelled once here (two selects of a couple of
    hundred runs cost more in template filters than the comparison itself)."""
    groups: dict[str, list[tuple[int, str]]] = {}
    kinds = dict(Run.Kind.choices)
    for run in runs:
        commit = ""
        if run["commit"] is not None:
            commit = f" · {presentation.short_commit(run['commit'])}" + (f" ({run['branch']})" if run["branch"] else "")
        started = timezone.localtime(run["started_at"]).strftime("%Y-%m-%d %H:%M %Z")
        groups.setdefault(run["project_name"], []).append(
            (run["pk"], f"#{run['pk']} · {kinds[run['kind']]} · {run['machine_name']}{commit} · {started}"))
    return list(groups.items())


@readable
@exports.downloadable
def pr_review(request: HttpRequest, run_id: int, *, export: str | None) -> HttpResponse:
    """A pull-request run against its base: verdict counts, the comparisons, a Markdown summary to paste."""
    try:
        review = selectors.pr_review(run_id=run_id, viewer=request.user)
    except Run.DoesNotExist:
        raise Http404(f"No pull-request run {run_id}.") from None
    if export:
        return exports.response(exports.comparison_records(review.rows, extra={"project": review.run.project.slug}),
                                name=f"pull-request-run-{run_id}", format_name=export,
                                columns=exports.COMPARISON_COLUMNS)
    return render(request, "results/pr.html", {
        "review": review, "run": review.run, "alpha": ALPHA,
        # Suspected changes are counted where there are some; the four decided verdicts always.
        "summary_counts": [(verdict, VERDICT_ICONS[verdict], review.counts.get(verdict, 0))
                           for verdict in (Verdict.REGRESSION, Verdict.SUSPECTED_REGRESSION, Verdict.IMPROVEMENT,
                                           Verdict.SUSPECTED_IMPROVEMENT, Verdict.INCONCLUSIVE, Verdict.NO_CHANGE)
                           if review.counts.get(verdict) or not verdict.startswith("suspected")],
        "show_bootstrap": any(row.bootstrap is not None for row in review.rows),
        "undecided": reports.undecided_beyond_threshold(review.rows),
        "noise_unknown": [row for row in review.rows if decisions.RUN_NOISE_UNKNOWN_KEY in row.inputs],
        "markdown": reports.pr_markdown(review, url=request.build_absolute_uri()),
    })
