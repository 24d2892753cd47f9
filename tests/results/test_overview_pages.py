"""The pages that answer "did tonight regress?": the nightly overview, any two runs compared, a pull
request's review and its Markdown/JSON summary."""

import json
import re

import numpy as np
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import include, path
from ninja import NinjaAPI

from results import access, comparisons, pr_api, reports, selectors
from results.models import Comparison, Metric, Run
from tests.expected import fieller, percent, welch_p
from tests.factories import compared_run, posted_run

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"

# The pull-request summary router is mounted on the versioned API by the project's urls; these tests
# mount it themselves (first, so its path wins) and keep every other URL as the project has it.
_api = NinjaAPI(urls_namespace="pr-summary-tests")
_api.add_router("/", pr_api.router)
urlpatterns = [path("api/v1/", _api.urls), path("", include("pilotweb.urls"))]


def compared(candidate: Run) -> Run:
    comparisons.compare_run(run_id=candidate.pk)
    return Run.objects.get(pk=candidate.pk)


def tonight_with_every_verdict(*, project: str = "Demo", machine: str = "bench-1") -> Run:
    """Ten quiet nights, one night-to-night noisy series, then tonight: every verdict once."""
    noise = np.random.default_rng(7).normal(0, 0.04, 10)
    for night in range(10):
        posted_run(night, {"regressed": 1.0, "improved": 1.0, "same": 1.0, "noisy": 1.0 + noise[night]},
            project=project, machine=machine, sd=0.002)
    return compared(posted_run(10, {"regressed": 1.10, "improved": 0.90, "same": 1.0, "noisy": 1.03, "new": 1.0},
                        project=project, machine=machine, sd=0.002))


def rows_of(html: str) -> list[tuple[str, str]]:
    """(benchmark, verdict) of each table row, in page order."""
    return re.findall(r'<tr class="verdict-row[^"]*" data-verdict="([^"]+)">\s*<td class="name">\s*<a [^>]*>([^<]+)</a>',
                      html)


def row_html(html: str, benchmark: str) -> str:
    for match in re.finditer(r'<tr class="verdict-row.*?</tr>', html, flags=re.DOTALL):
        if f">{benchmark}</a>" in match.group(0):
            return match.group(0)
    raise AssertionError(f"no row for {benchmark!r}")


# The nightly overview.

def test_the_overview_shows_tonight_against_history_worst_first():
    tonight = tonight_with_every_verdict()

    response = Client().get("/")

    assert response.status_code == 200
    html = response.content.decode()
    assert [verdict for verdict, _ in rows_of(html)] == [
        "regression", "improvement", "inconclusive", "insufficient history", "no change"]
    assert [name for _, name in rows_of(html)] == ["regressed", "improved", "noisy", "new", "same"]
    regressed = row_html(html, "regressed")
    assert "verdict-regression" in regressed and "▲ regression" in regressed
    assert re.search(r"\+(9\.9|10\.\d)% \[\+\d+\.\d%, \+\d+\.\d%\]", regressed)
    assert "mean of 10 nights" in regressed
    assert "▼ improvement" in row_html(html, "improved") and "? inconclusive" in row_html(html, "noisy")
    assert "0 earlier nights, 3 needed" in row_html(html, "new")
    # Run metadata, the link to the run and the legend.
    assert f'href="/runs/{tonight.pk}/"' in html and f'title="{tonight.revision.commit}"' in html
    assert "2026-10-11 02:00 UTC" in html and "bench-1" in html
    assert "Benjamini–Hochberg" in html and "mean of the last K nightly runs" in html
    assert "Insufficient history (fewer than 3 earlier nights): new (time)." in html


def test_a_night_in_a_machine_environment_seen_before_says_so_above_its_rows():
    """Its series are tested for a shift with the environment divided out, but shown as measured: a table of
    -25% rows called inconclusive needs the reason beside it, not only on the run page."""
    tonight = tonight_with_every_verdict()
    Run.objects.filter(pk=tonight.pk).update(environment_match={"runs": [3, 5], "move": -0.25, "series": 5})

    html = Client().get("/").content.decode()

    assert "This night ran in a machine environment seen before (the nights of runs #3, #5)" in html
    assert "by a median of -22.1%" in html


def test_each_row_says_why_it_has_its_verdict_with_theta_and_the_evidence():
    tonight_with_every_verdict()
    html = Client().get("/").content.decode()

    assert "θ = ±2%" in html and "Change [95% CI]" in html

    def why(benchmark: str) -> dict[str, str]:
        details = re.search(r'<details class="why">(.*?)</details>', row_html(html, benchmark), flags=re.DOTALL)
        return dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", details.group(1)))

    regressed = why("regressed")
    assert regressed["Verdict"] == ("▲ regression: the whole interval lies beyond the ±2% band on the worse side "
                                    "(slower).")
    # Ten quiet nights before tonight: the history is nights 0–9 (runs #1–#10 of this project).
    assert re.fullmatch(r"the last nights of the series: 10 nights \(runs #\d+–#\d+\); mean \S+ m?s",
                        regressed["Baseline"])
    assert regressed["Run-to-run"] == "none beyond each night&#x27;s own noise (σ_b² = 0)"
    assert regressed["Change"].endswith("at 95% (Fieller, ν = " + regressed["Change"].split("ν = ")[1])
    assert "θ = ±2%" in regressed["Change"] and regressed["Test"].startswith("p &lt; 0.001, q &lt; 0.001")
    assert why("same")["Verdict"].startswith("≈ no change: the whole interval lies within the ±2% band")
    noisy = why("noisy")
    assert "not significant (q ≥ 0.05)" in noisy["Verdict"]
    assert re.fullmatch(r"sd [2-6]\.\d\d% of the mean between nights \(σ_b², carried into the interval\)",
                        noisy["Run-to-run"])
    assert why("new")["Verdict"] == "· insufficient history: 0 earlier nights, 3 needed."


def test_high_q_values_are_marked_and_links_lead_to_the_history_pages():
    tonight = tonight_with_every_verdict()
    noisy = Comparison.objects.get(candidate__run=tonight, candidate__metric__benchmark__name="noisy",
                                   method="history")
    same = Comparison.objects.get(candidate__run=tonight, candidate__metric__benchmark__name="same", method="history")
    regressed = Comparison.objects.get(candidate__run=tonight, candidate__metric__benchmark__name="regressed",
                                       method="history")

    html = Client().get("/").content.decode()

    for comparison in (noisy, same, regressed):
        name = comparison.candidate.metric.benchmark.name
        assert ("high p" in row_html(html, name)) == (comparison.qvalue >= 0.05), name
    assert noisy.verdict == "inconclusive" and noisy.qvalue >= 0.05
    metric = Metric.objects.get(benchmark__name="regressed")
    assert f'href="/history/{metric.pk}/?machine=bench-1"' in html


def test_each_row_has_a_sparkline_of_the_last_twenty_nights():
    for night in range(25):
        posted_run(night, {"sort": 1.0 + night / 100}, sd=0.002)
    compared(Run.objects.order_by("-started_at").first())

    html = Client().get("/").content.decode()

    points = re.search(r'<polyline points="([^"]+)"', html).group(1).split()
    assert len(points) == 20
    heights = [float(point.split(",")[1]) for point in points]
    # The means rise night by night, so the line climbs (SVG y grows downwards) and ends on the newest.
    assert heights[0] > heights[-1] and "<title>20 recent nightly means" in html


def test_the_overview_groups_by_project_and_machine_and_filters_by_get_parameters():
    tonight_with_every_verdict(project="Alpha", machine="bench-1")
    tonight_with_every_verdict(project="Alpha", machine="bench-2")
    tonight_with_every_verdict(project="Beta", machine="bench-1")
    client = Client()

    everything = client.get("/").content.decode()
    assert everything.count("<tbody>") == 3 and len(rows_of(everything)) == 15

    only_regressions = client.get("/", {"verdict": "regression"}).content.decode()
    assert {verdict for verdict, _ in rows_of(only_regressions)} == {"regression"}
    assert len(rows_of(only_regressions)) == 3

    by_machine = client.get("/", {"machine": "bench-2"}).content.decode()
    assert by_machine.count("<tbody>") == 1 and "<h3>bench-2 · night of 2026-10-10</h3>" in by_machine

    by_project = client.get("/", {"project": "beta", "benchmark": "PROV"}).content.decode()
    assert by_project.count("<tbody>") == 1 and [name for _, name in rows_of(by_project)] == ["improved"]
    assert 'name="project" value="beta"' in by_project and 'value="PROV"' in by_project

    nothing = client.get("/", {"benchmark": "no such benchmark"}).content.decode()
    assert rows_of(nothing) == [] and "No series match the filters." in nothing


def test_a_large_run_shows_its_most_notable_series_and_all_on_request(monkeypatch):
    monkeypatch.setattr(selectors, "ROW_LIMIT", 2)
    tonight_with_every_verdict()
    client = Client()

    notable = client.get("/").content.decode()
    assert rows_of(notable) == [("regression", "regressed"), ("improvement", "improved")]
    assert "Showing the 2 most notable of 5 series" in notable and "&amp;all=on" in notable
    assert "1 no change" in notable
    everything = client.get("/", {"all": "on"}).content.decode()
    assert len(rows_of(everything)) == 5 and "most notable" not in everything


def test_a_filter_that_is_not_understood_is_ignored_and_said_so():
    tonight_with_every_verdict()

    response = Client().get("/", {"verdict": "catastrophe"})

    assert response.status_code == 200
    html = response.content.decode()
    assert len(rows_of(html)) == 5 and "Some filters were not understood" in html


def test_a_run_not_compared_yet_shows_its_results_as_pending():
    for night in range(4):
        compared(posted_run(night, {"sort": 1.0}, sd=0.002))
    posted_run(4, {"sort": 1.3}, sd=0.002)

    html = Client().get("/").content.decode()

    assert "Not compared yet" in html and rows_of(html) == [("not compared", "sort")]


def test_only_nightly_runs_are_shown_and_projects_without_one_say_so():
    tonight_with_every_verdict()
    posted_run(11, {"regressed": 2.0}, kind="pr", branch="feature", sd=0.002)
    posted_run(0, {"sort": 1.0}, project="Other", kind="manual", sd=0.002)

    html = Client().get("/").content.decode()

    assert "Run #" in html and html.count("<tbody>") == 1
    assert "No nightly runs yet:" in html and ">Other</a>" in html


def test_the_overview_issues_a_fixed_number_of_queries():
    def night_of(count: int, project: str, machine: str) -> None:
        names = {f"bench {i}": 1.0 + i / 10 for i in range(count)}
        for night in range(4):
            posted_run(night, names, project=project, machine=machine, sd=0.002)
        compared(posted_run(4, names, project=project, machine=machine, sd=0.002))

    night_of(2, "Alpha", "bench-1")
    with CaptureQueriesContext(connection) as few:
        assert Client().get("/").status_code == 200
    night_of(8, "Alpha", "bench-2")
    night_of(8, "Beta", "bench-3")
    with CaptureQueriesContext(connection) as many:
        html = Client().get("/").content.decode()

    assert len(rows_of(html)) == 18
    assert len(many) == len(few)


def suites_of_one_night(night: int, *, regressed: float = 1.0) -> list[Run]:
    """Three suites posting a run each on `night` (02:00, 03:00, 04:00): the first holds `regressed`."""
    suites = [{"parse": regressed, "lex": 1.0}, {"sort": 2.0}, {"render": 3.0, "layout": 3.0}]
    return [posted_run(night + hour / 24, means, seed=night * 10 + hour, commit=f"{night:040x}", sd=0.002)
            for hour, means in enumerate(suites)]


def test_every_suite_of_the_night_is_shown_not_only_the_last_run():
    for night in range(6):
        for run in suites_of_one_night(night):
            compared(run)
    tonight = [compared(run) for run in suites_of_one_night(6, regressed=1.2)]

    html = Client().get("/").content.decode()

    # The regression is in the night's first run; the last run holds only render and layout.
    assert sorted(rows_of(html)) == sorted([("regression", "parse"), ("no change", "lex"), ("no change", "sort"),
                                            ("no change", "render"), ("no change", "layout")])
    assert "From 3 runs" in html and all(f'href="/runs/{run.pk}/"' in html for run in tonight)
    assert "1 regression" in html and "4 no change" in html
    assert f'run #{tonight[0].pk}</a>' in row_html(html, "parse")


def test_a_suite_posted_twice_in_one_night_shows_its_newest_result_once():
    for night in range(5):
        compared(posted_run(night, {"parse": 1.0}, sd=0.002))
    compared(posted_run(5, {"parse": 1.3}, sd=0.002))
    rerun = compared(posted_run(5.1, {"parse": 1.0}, seed=51, commit=f"{5:040x}", sd=0.002))

    html = Client().get("/").content.decode()

    assert [name for _, name in rows_of(html)] == ["parse"] and "From 2 runs" in html
    assert f'run #{rerun.pk}</a>' in row_html(html, "parse")


def test_a_night_is_picked_by_date_and_the_page_links_the_nights_around_it():
    for night in range(8):
        compared(posted_run(night, {"parse": 1.3 if night == 5 else 1.0}, sd=0.002))
    client = Client()

    newest = client.get("/").content.decode()
    assert "night of 2026-10-07" in newest and [name for _, name in rows_of(newest)] == ["parse"]
    assert 'rel="prev" href="?night=2026-10-06"' in newest and 'rel="next"' not in newest

    picked = client.get("/", {"night": "2026-10-05"}).content.decode()
    assert "night of 2026-10-05" in picked and rows_of(picked) == [("regression", "parse")]
    assert 'rel="prev" href="?night=2026-10-04"' in picked and 'rel="next" href="?night=2026-10-06"' in picked

    filtered = client.get("/", {"night": "2026-10-05", "verdict": "regression"}).content.decode()
    assert 'href="?verdict=regression&amp;night=2026-10-04"' in filtered

    empty = client.get("/", {"night": "2025-01-01"}).content.decode()
    assert "No nightly run on the night of 2025-01-01" in empty and rows_of(empty) == []
    assert 'rel="next" href="?night=2026-09-30"' in empty


def test_the_overview_of_several_suites_a_night_issues_a_fixed_number_of_queries():
    for night in range(4):
        for run in suites_of_one_night(night):
            compared(run)
    with CaptureQueriesContext(connection) as one_machine:
        assert Client().get("/").status_code == 200
    for night in range(4):
        for run in suites_of_one_night(night):
            run.machine  # noqa: B018
        for machine in ("bench-2", "bench-3"):
            for hour, means in enumerate([{"parse": 1.0}, {"sort": 2.0}]):
                compared(posted_run(night + hour / 24, means, seed=night, commit=f"{night:040x}", machine=machine,
                                    sd=0.002))
    with CaptureQueriesContext(connection) as three_machines:
        html = Client().get("/").content.decode()

    assert len(rows_of(html)) == 5 + 2 + 2
    assert len(three_machines) == len(one_machine)


def test_benchmark_names_are_escaped_on_every_page():
    for night in range(4):
        posted_run(night, {SCRIPT: 1.0}, sd=0.002)
    tonight = compared(posted_run(4, {SCRIPT: 1.2}, sd=0.002))
    pull = compared(posted_run(5, {SCRIPT: 1.3}, kind="pr", branch="feature", base_commit=f"{3:040x}", sd=0.002))
    client = Client()

    metric = Metric.objects.get(benchmark__name=SCRIPT)
    for url in ("/", f"/compare/?baseline={tonight.pk - 1}&candidate={tonight.pk}", f"/runs/{pull.pk}/pr/",
                f"/?benchmark={SCRIPT}", f"/runs/{tonight.pk}/", f"/runs/{tonight.pk}/metrics/{metric.pk}/"):
        html = client.get(url).content.decode()
        assert SCRIPT not in html, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html, url


@pytest.mark.parametrize("url", ["/", "/compare/", "/compare/?baseline=1&candidate=2", "/runs/1/pr/"])
def test_anonymous_visitors_log_in_first_when_reading_is_not_public(settings, url):
    settings.PILOTWEB_PUBLIC_READ = False

    response = Client().get(url)

    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")


@pytest.mark.parametrize("public", [True, False])
def test_every_page_is_readable_by_users_and_by_anonymous_visitors_when_public(settings, user, public):
    settings.PILOTWEB_PUBLIC_READ = public
    tonight = tonight_with_every_verdict()
    pull = compared(posted_run(11, {"regressed": 1.0}, kind="pr", branch="feature", base_commit=f"{9:040x}", sd=0.002))
    urls = ["/", "/compare/", f"/compare/?baseline={tonight.pk - 1}&candidate={tonight.pk}", f"/runs/{pull.pk}/pr/"]
    anonymous, member = Client(), Client()
    member.force_login(user)

    for url in urls:
        assert member.get(url).status_code == 200, url
        assert anonymous.get(url).status_code == (200 if public else 302), url


def test_the_nav_links_to_the_overview_and_compare():
    html = Client().get("/").content.decode()

    assert '<a href="/">Nightly</a>' in html and '<a href="/compare/">Compare</a>' in html


# Any two runs compared.

def test_two_runs_are_compared_on_the_fly_with_welch_and_fieller():
    baseline = posted_run(0, {"sort": 1.0, "hash": 2.0, "gone": 1.0}, sd=0.01)
    candidate = posted_run(1, {"sort": 1.08, "hash": 2.0, "fresh": 1.0}, sd=0.01)
    before = Comparison.objects.count()

    response = Client().get("/compare/", {"baseline": baseline.pk, "candidate": candidate.pk})

    assert response.status_code == 200 and Comparison.objects.count() == before
    html = response.content.decode()
    result = comparisons.compare_stored_runs(baseline_id=baseline.pk, candidate_id=candidate.pk)
    sort = next(row for row in result.rows if row.benchmark == "sort")
    old, new = baseline.results.get(metric__benchmark__name="sort"), candidate.results.get(metric__benchmark__name="sort")
    candidate_stats, baseline_stats = (new.mean, new.variance, new.n), (old.mean, old.variance, old.n)
    low, high = fieller(candidate_stats, baseline_stats)
    assert (sort.ratio, sort.low, sort.high, sort.pvalue) == pytest.approx(
        (new.mean / old.mean, low, high, welch_p(candidate_stats, baseline_stats)))
    # The whole interval lies beyond the 2% threshold: a regression (spec §7).
    assert low > 1.02 and sort.verdict == "regression"
    assert percent(new.mean / old.mean, low, high) in html
    assert next(name for _, name in rows_of(html)) == "sort"
    assert "Only in the baseline: gone (time)." in html and "Only in the candidate: fresh (time)." in html
    assert f'<option value="{baseline.pk}" selected>' in html and f'<option value="{candidate.pk}" selected>' in html


def test_compare_shows_the_most_notable_series_of_many(monkeypatch):
    monkeypatch.setattr(selectors, "ROW_LIMIT", 1)
    baseline = posted_run(0, {"same": 1.0, "slower": 1.0, "faster": 1.0}, sd=0.002)
    candidate = posted_run(1, {"same": 1.0, "slower": 1.2, "faster": 0.9}, sd=0.002)
    url = f"/compare/?baseline={baseline.pk}&candidate={candidate.pk}"

    html = Client().get(url).content.decode()

    assert rows_of(html) == [("regression", "slower")] and "Showing the 1 most notable of 3 series" in html
    assert "1 improvement" in html and "1 no change" in html
    assert len(rows_of(Client().get(url + "&all=on").content.decode())) == 3


def test_compare_q_values_are_benjamini_hochberg_across_the_series():
    baseline = posted_run(0, {f"b{i}": 1.0 for i in range(6)}, sd=0.02)
    candidate = posted_run(1, {f"b{i}": 1.0 + i / 100 for i in range(6)}, sd=0.02)

    rows = comparisons.compare_stored_runs(baseline_id=baseline.pk, candidate_id=candidate.pk).rows

    from scipy.stats import false_discovery_control
    expected = false_discovery_control([row.pvalue for row in rows], method="bh")
    assert [row.qvalue for row in rows] == pytest.approx(list(np.minimum(expected, 1.0)))


def test_compare_without_runs_shows_the_form_and_an_unknown_run_is_not_found():
    existing = posted_run(0, {"sort": 1.0}, sd=0.002)
    client = Client()

    empty = client.get("/compare/")
    assert empty.status_code == 200 and "Choose a baseline and a candidate run." in empty.content.decode()
    missing = client.get("/compare/", {"baseline": existing.pk, "candidate": existing.pk + 999})
    assert missing.status_code == 404 and f"No run {existing.pk + 999}." in missing.content.decode()
    nonsense = client.get("/compare/", {"baseline": "one", "candidate": "two"})
    assert nonsense.status_code == 200 and "Run ids are whole numbers." in nonsense.content.decode()


def test_compare_issues_a_fixed_number_of_queries():
    def pair(count: int) -> str:
        names = {f"bench {i}": 1.0 + i / 10 for i in range(count)}
        first, second = posted_run(2 * count, names, sd=0.002), posted_run(2 * count + 1, names, sd=0.002)
        return f"/compare/?baseline={first.pk}&candidate={second.pk}"

    small = pair(2)
    with CaptureQueriesContext(connection) as few:
        Client().get(small)
    large = pair(12)
    with CaptureQueriesContext(connection) as many:
        html = Client().get(large).content.decode()

    assert len(rows_of(html)) == 12 and len(many) == len(few)


# The pull-request review.

def pull_request_against_base() -> Run:
    """Head against base commit bbbb…: sort +8% (regression), hash −10% (improvement), parse unchanged, and
    json +2% but noisy on the head, so its interval straddles the band (inconclusive)."""
    for night in range(3):
        compared_run(night, {"sort": 1.0, "hash": 1.0, "parse": 1.0, "json": 1.0}, sd=0.002)
    compared_run(3, {"sort": 1.0, "hash": 1.0, "parse": 1.0, "json": 1.0}, sd=0.002, commit="b" * 40)
    return compared(posted_run(4, {"sort": 1.08, "hash": 0.9, "parse": 1.0, "json": (1.02, 0.05)}, sd=0.002, kind="pr",
                        branch="feature", commit="c" * 40, base_commit="b" * 40, pull_request=42))


def test_each_pr_series_is_compared_with_its_newest_base_commit_result_whatever_run_holds_it():
    for night in range(3):
        compared_run(night, {"sort": 1.0, "hash": 1.0, "json": 1.0}, sd=0.002)
    suite = compared_run(3, {"sort": 1.0, "hash": 1.0}, sd=0.002, commit="b" * 40)
    # A later pyperf import of the same base commit holds other benchmarks only.
    imported = compared_run(3.1, {"json": 1.0}, seed=31, sd=0.002, commit="b" * 40, kind="manual")
    head = compared(posted_run(4, {"sort": 1.08, "hash": 1.08, "json": 1.0}, sd=0.002, kind="pr", branch="feature",
                               commit="c" * 40, base_commit="b" * 40, pull_request=42))

    review = selectors.pr_review(run_id=head.pk, viewer=access.SYSTEM)

    assert review.counts == {"regression": 2, "no change": 1} and review.fallbacks == 0
    assert [run.pk for run in review.base_runs] == [suite.pk, imported.pk]
    html = Client().get(f"/runs/{head.pk}/pr/").content.decode()
    assert "Nothing to compare" not in html and f'href="/runs/{suite.pk}/"' in html
    assert f'href="/runs/{imported.pk}/"' in html and "not on the requested base" not in html
    assert "**2 regressions**" in reports.pr_markdown(review)


def test_a_pr_series_the_base_commit_lacks_falls_back_to_the_default_branch_and_says_so():
    for night in range(4):
        compared_run(night, {"sort": 1.0, "hash": 1.0}, sd=0.002)
    compared_run(3.5, {"sort": 1.0}, seed=35, sd=0.002, commit="b" * 40)
    # Another machine's base-commit result and another pull request's are never a base.
    posted_run(3, {"hash": 2.0}, sd=0.002, commit="b" * 40, machine="bench-2")
    posted_run(3.2, {"hash": 2.0}, seed=32, sd=0.002, commit="d" * 40, kind="pr", branch="other")
    head = compared(posted_run(4, {"sort": 1.0, "hash": 1.08}, sd=0.002, kind="pr", branch="feature",
                               commit="c" * 40, base_commit="b" * 40, pull_request=42))

    review = selectors.pr_review(run_id=head.pk, viewer=access.SYSTEM)

    assert review.counts == {"regression": 1, "no change": 1} and review.fallbacks == 1
    hashed = Comparison.objects.get(candidate__run=head, candidate__metric__benchmark__name="hash",
                                    method="pairwise")
    # night 3 (October 4th), the newest result of main before the pull request
    assert hashed.baseline.run.started_at.day == 4 and hashed.inputs["base_fallback"] is True
    html = Client().get(f"/runs/{head.pk}/pr/").content.decode()
    assert "⚠ 1 series not on the requested base" in html
    assert "1 of them compared with the newest default-branch result" in reports.pr_markdown(review)


def test_the_pr_review_puts_the_verdict_first_then_the_comparisons_then_the_markdown():
    head = pull_request_against_base()

    response = Client().get(f"/runs/{head.pk}/pr/")

    assert response.status_code == 200
    html = response.content.decode()
    counts = re.findall(r'<li class="count verdict-([a-z-]+)[^"]*"><strong>(\d+)</strong>', html)
    assert counts == [("regression", "1"), ("improvement", "1"), ("inconclusive", "1"), ("no-change", "1")]
    assert "Pull request #42" in html and "bbbbbbbbbbbb" in html and "cccccccccccc" in html
    assert html.index("summary-counts") < html.index("<table class=\"results comparison sortable\">") < html.index("<textarea")
    assert [verdict for verdict, _ in rows_of(html)] == ["regression", "improvement", "inconclusive", "no change"]
    assert '<textarea id="pr-markdown" readonly' in html and 'data-copy-target="pr-markdown"' in html
    assert "results/copy.js" in html


def test_the_pr_markdown_lists_the_changed_benchmarks_and_counts_the_quiet_ones():
    head = pull_request_against_base()

    markdown = reports.pr_markdown(selectors.pr_review(run_id=head.pk, viewer=access.SYSTEM), url="https://example.org/runs/1/pr/")

    assert markdown.startswith("### Performance: `cccccccccccc` against base `bbbbbbbbbbbb`")
    assert "**1 regression**, 1 improvement, 1 inconclusive, 1 no change" in markdown
    table = [line for line in markdown.splitlines() if line.startswith("| ")]
    assert table[0] == "| Benchmark | Change [95% CI] | p | q | Verdict |"
    assert any(line.startswith("| `sort (time)` | +8.") and line.endswith("| ▲ regression |") for line in table)
    assert any(line.startswith("| `hash (time)` | -10.") for line in table)
    assert not any("parse" in line for line in table)
    # json's interval straddles the band without a significant change, its estimate just beyond +2%:
    # inconclusive, and named with what would decide it
    assert any(line.startswith("| `json (time)` | +2.0%") and line.endswith("| ? inconclusive |") for line in table)
    assert "- `json (time)`: +2.0%" in markdown
    assert "[Full review](https://example.org/runs/1/pr/)" in markdown


def test_a_pr_without_changes_or_base_says_so():
    for night in range(3):
        posted_run(night, {"sort": 1.0}, sd=0.002)
    same = compared(posted_run(4, {"sort": 1.0}, kind="pr", branch="feature", base_commit=f"{2:040x}", sd=0.002))
    lonely = compared(posted_run(0, {"sort": 1.0}, project="Lonely", kind="pr", branch="feature", base_commit="d" * 40, sd=0.002))
    pending = posted_run(5, {"sort": 1.0}, kind="pr", branch="other", base_commit=f"{2:040x}", sd=0.002)

    assert "No benchmark changed beyond its threshold." in reports.pr_markdown(selectors.pr_review(run_id=same.pk, viewer=access.SYSTEM))
    assert "Nothing to compare: no run of the base commit `dddddddddddd`" in reports.pr_markdown(
        selectors.pr_review(run_id=lonely.pk, viewer=access.SYSTEM))
    assert "No base run to compare with" in Client().get(f"/runs/{lonely.pk}/pr/").content.decode()
    assert "Not compared yet" in Client().get(f"/runs/{pending.pk}/pr/").content.decode()


def test_the_pr_review_is_for_pull_request_runs_only():
    nightly = posted_run(0, {"sort": 1.0}, sd=0.002)

    assert Client().get(f"/runs/{nightly.pk}/pr/").status_code == 404
    assert Client().get("/runs/999/pr/").status_code == 404


def test_the_pr_review_issues_a_fixed_number_of_queries():
    def pull(count: int, offset: int) -> str:
        names = {f"bench {i}": 1.0 + i / 10 for i in range(count)}
        for night in range(3):
            posted_run(offset + night, names, project=f"P{offset}", sd=0.002)
        head = compared(posted_run(offset + 3, names, project=f"P{offset}", kind="pr", branch="feature",
                            base_commit=f"{offset + 2:040x}", sd=0.002))
        return f"/runs/{head.pk}/pr/"

    small = pull(2, 0)
    with CaptureQueriesContext(connection) as few:
        Client().get(small)
    large = pull(10, 100)
    with CaptureQueriesContext(connection) as many:
        html = Client().get(large).content.decode()

    assert len(rows_of(html)) == 10 and len(many) == len(few)


def test_the_markdown_escapes_table_cells():
    for night in range(-3, 1):
        compared_run(night, {"a|b": 1.0}, sd=0.002, seed=night + 3, commit=f"{night + 3:040x}")
    head = compared(posted_run(1, {"a|b": 1.5}, kind="pr", branch="feature", base_commit=f"{3:040x}", sd=0.002))

    markdown = reports.pr_markdown(selectors.pr_review(run_id=head.pk, viewer=access.SYSTEM))

    assert "| `a\\|b (time)` |" in markdown


# The pull-request summary API.

@pytest.mark.urls(__name__)
def test_the_pr_summary_api_returns_markdown_counts_and_comparisons():
    head = pull_request_against_base()

    response = Client().get(f"/api/v1/runs/{head.pk}/pr-summary")

    assert response.status_code == 200
    body = response.json()
    assert body["markdown"] == reports.pr_markdown(selectors.pr_review(run_id=head.pk, viewer=access.SYSTEM),
                                              url=f"http://testserver/runs/{head.pk}/pr/")
    assert body["summary"]["counts"] == {"regression": 1, "inconclusive": 1, "improvement": 1, "no change": 1}
    assert body["summary"]["base_commit"] == "b" * 40 and body["summary"]["pull_request"] == 42
    assert [row["benchmark"] for row in body["comparisons"]] == ["sort", "hash", "json", "parse"]
    first = body["comparisons"][0]
    assert first["verdict"] == "regression" and first["change"].startswith("+8.")
    assert set(first["baseline"]) == {"mean", "half_width", "n"}
    json.dumps(body, allow_nan=False)


@pytest.mark.urls(__name__)
def test_the_pr_summary_api_reads_like_the_rest_of_the_api(settings, user):
    nightly = posted_run(0, {"sort": 1.0}, sd=0.002)
    head = compared(posted_run(1, {"sort": 1.0}, kind="pr", branch="feature", base_commit=f"{0:040x}", sd=0.002))

    assert Client().get(f"/api/v1/runs/{nightly.pk}/pr-summary").status_code == 404
    settings.PILOTWEB_PUBLIC_READ = False
    assert Client().get(f"/api/v1/runs/{head.pk}/pr-summary").status_code == 401
    member = Client()
    member.force_login(user)
    assert member.get(f"/api/v1/runs/{head.pk}/pr-summary").status_code == 200


def test_the_overview_shows_a_page_of_projects_whatever_their_number():
    """A fuzzer once made 14,700 projects: the overview then rendered every one (7.9 MB, 5 s). It shows
    selectors.PROJECTS_PER_PAGE projects with a night a page, by name, in a number of queries that does not grow."""
    def projects_with_a_night(count: int) -> None:
        for index in range(count):
            posted_run(0, {"sort": 1.0}, project=f"P{index:03d}", machine="bench-1", sd=0.002)

    projects_with_a_night(3)
    with CaptureQueriesContext(connection) as few:
        Client().get("/")
    projects_with_a_night(25)
    with CaptureQueriesContext(connection) as many:
        first = Client().get("/").content.decode()
    third = Client().get("/?page=3").content.decode()

    assert len(many) == len(few)
    shown = re.findall(r'<h2 id="project-\d+">(P\d+)</h2>', first)
    assert shown == [f"P{index:03d}" for index in range(selectors.PROJECTS_PER_PAGE)]
    assert "projects 1–10 of 25" in first and 'rel="next"' in first
    assert re.findall(r'<h2 id="project-\d+">(P\d+)</h2>', third) == [f"P{index:03d}" for index in range(20, 25)]
