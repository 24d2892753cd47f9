"""One comparison, shown the same everywhere.

A pull-request run against its base: the PR page, the run page, the compare page, the PR Markdown and its
JSON, the run API and the ``compare`` command (text and JSON) all show the same verdict, change, interval,
p, q, confidence level and high-p mark for every series, and those are the values computed here
independently (scipy's Welch test, Fieller's interval in closed form, Benjamini–Hochberg by scipy).
A nightly against its history: its ratio and p-value are spec §8's (computed here from the posted
summaries), and the overview row, the run page, the API and the alert list show what was stored.
"""

import html as html_module
import json
import re
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client
from scipy import stats as scipy_stats

from results import comparisons
from results.models import Comparison, Result
from tests.expected import bh_qvalues, fieller, percent, welch_p
from tests.factories import post_results, posted_run

pytestmark = pytest.mark.django_db

# (mean, variance of the units, units): base → head.
BASE = {"slower": (1.00, 0.0004, 20), "faster": (1.00, 0.0004, 20), "same": (1.00, 0.0001, 30),
        "noisy": (1.00, 0.04, 10)}
HEAD = {"slower": (1.10, 0.0004, 20), "faster": (0.90, 0.0009, 25), "same": (1.001, 0.0001, 30),
        "noisy": (1.05, 0.05, 10)}
# By construction (2% threshold): the whole interval beyond +2%, beyond −2%, inside ±2%, straddling it.
VERDICTS = {"slower": "regression", "faster": "improvement", "same": "no change", "noisy": "inconclusive"}
ICONS = {"regression": "▲", "improvement": "▼", "no change": "≈", "inconclusive": "?"}


def summaries(series: dict) -> list[dict]:
    return [{"benchmark": name, "metric": "time", "unit": "s",
             "summary": {"mean": mean, "subsession_size": 1, "variance": variance, "n": n}}
            for name, (mean, variance, n) in series.items()]


def probability(value: float) -> str:
    return "<0.001" if value < 0.001 else f"{value:.3f}"


@pytest.fixture
def expected() -> dict[str, dict]:
    names = list(BASE)
    pvalues = [welch_p(HEAD[name], BASE[name]) for name in names]
    qvalues = bh_qvalues(pvalues)
    table = {}
    for name, p, q in zip(names, pvalues, qvalues):
        ratio = HEAD[name][0] / BASE[name][0]
        low, high = fieller(HEAD[name], BASE[name])
        table[name] = {"verdict": VERDICTS[name], "ratio": ratio, "low": low, "high": high, "p": p, "q": q,
                       "change": percent(ratio, low, high), "level": 0.95, "high_p": q >= 0.05}
    assert [name for name in names if table[name]["high_p"]] == ["same", "noisy"]
    return table


@pytest.fixture
def pull_request():
    # Nights of the same summaries: their history measures no run-to-run noise (σ_b² = 0), so the pull
    # request's comparison is Welch's and Fieller's on the two runs, which the expectations compute.
    for night in range(-3, 0):
        comparisons.compare_run(run_id=post_results(summaries(BASE), night=night, commit=f"{night + 3:040x}").pk)
    base = post_results(summaries(BASE), night=0, commit="a" * 40)
    comparisons.compare_run(run_id=base.pk)
    head = post_results(summaries(HEAD), night=1, kind="pr", branch="feature", commit="b" * 40,
                        base_commit="a" * 40, pull_request=7)
    comparisons.compare_run(run_id=head.pk)
    return base, head


@pytest.fixture
def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def table_rows(page: str, *, method: str | None = None) -> dict[str, str]:
    """Each comparison row of a page's tables, by benchmark name (on a run page, those of one method)."""
    rows = re.findall(r"<tr class=\"[^\"]*verdict-[^\"]*\".*?</tr>", page, flags=re.S)
    found = {}
    for row in rows:
        name = re.search(r"<a href=\"/history/\d+/[^\"]*\">([^<]+)</a>", row)
        if name and (method is None or f"<td>{method}</td>" in row):
            found[name.group(1)] = html_module.unescape(row)
    return found


def assert_row_html(row: str, values: dict, *, with_high_p_class: bool = True) -> None:
    assert values["change"] in row
    assert f">{probability(values['p'])}</td>" in row
    assert probability(values["q"]) in row
    assert f"{ICONS[values['verdict']]} {values['verdict']}" in row
    assert ("high p" in row) == values["high_p"]
    if with_high_p_class:
        assert ("high-p" in row.split(">", 1)[0]) == values["high_p"]


def assert_numbers(item: dict, values: dict, *, low="ci_low", high="ci_high") -> None:
    assert item["verdict"] == values["verdict"]
    assert (item["ratio"], item[low], item[high], item["pvalue"], item["qvalue"]) == pytest.approx(
        (values["ratio"], values["low"], values["high"], values["p"], values["q"]), rel=1e-9)
    assert item["confidence_level"] == values["level"] and item["high_p"] is values["high_p"]
    assert item["significant"] is (not values["high_p"])
    assert item["change"] == values["change"]


def test_a_pull_request_comparison_is_the_same_on_every_surface(pull_request, expected, browser, api):
    base, head = pull_request

    pr_page = browser.get(f"/runs/{head.pk}/pr/").content.decode()
    compare_page = browser.get("/compare/", {"baseline": base.pk, "candidate": head.pk}).content.decode()
    for page in (pr_page, compare_page):
        assert "Change [95% CI]" in page
        rows = table_rows(page)
        for name, values in expected.items():
            assert_row_html(rows[name], values)

    run_page = table_rows(browser.get(f"/runs/{head.pk}/").content.decode(), method="pairwise")
    for name, values in expected.items():
        assert_row_html(run_page[name], values, with_high_p_class=False)
        assert "95%" in run_page[name]

    summary = api.get(f"/api/v1/runs/{head.pk}/pr-summary").json()
    markdown = summary["markdown"]
    assert "Change [95% CI]" in markdown
    for name, values in expected.items():
        lines = [line for line in markdown.splitlines() if line.startswith(f"| `{name} (time)` |")]
        # Quiet rows are counted in the summary line, not listed; an undecided one beyond the band is named.
        if values["verdict"] == "no change" or (values["verdict"] == "inconclusive" and abs(values["ratio"] - 1) <= 0.02):
            assert lines == [] and f"1 {values['verdict']}" in markdown
            continue
        (line,) = lines
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        mark = " ~" if values["high_p"] else ""
        assert cells == [f"`{name} (time)`", values["change"], probability(values["p"]),
                         probability(values["q"]) + mark, f"{ICONS[values['verdict']]} {values['verdict']}"]
    by_name = {item["benchmark"]: item for item in summary["comparisons"]}
    detail = {item["benchmark"]: item
              for item in api.get(f"/api/v1/runs/{head.pk}/comparisons", {"method": "pairwise"}).json()["items"]}
    for name, values in expected.items():
        assert_numbers(by_name[name], values)
        assert_numbers(detail[name], values)

    text = StringIO()
    call_command("compare", str(base.pk), str(head.pk), stdout=text)
    table = text.getvalue()
    assert "change [95% CI]" in table
    raw = StringIO()
    call_command("compare", str(base.pk), str(head.pk), "--format", "json", stdout=raw)
    cli = {item["benchmark"]: item for item in json.loads(raw.getvalue())}
    for name, values in expected.items():
        (line,) = [line for line in table.splitlines() if line.startswith(f"{name} ")]
        assert values["change"] in line and line.rstrip().endswith(values["verdict"])
        mark = " ~" if values["high_p"] else ""
        assert re.search(rf"\s{re.escape(probability(values['p']))}\s+{re.escape(probability(values['q']) + mark)}\s",
                         line)
        assert_numbers(cli[name], values, low="low", high="high")


def test_a_nightly_history_comparison_is_the_same_on_every_surface(browser, api):
    for night in range(10):
        posted_run(night, {"steady": 1.0, "slower": 1.0}, sd=0.002)
    tonight = posted_run(10, {"steady": 1.0, "slower": 1.10}, sd=0.002)
    comparisons.compare_run(run_id=tonight.pk)
    stored = {c.candidate.metric.benchmark.name: c for c in Comparison.objects.filter(
        candidate__run=tonight, method="history").select_related("candidate__metric__benchmark")}
    assert stored["slower"].verdict == "regression" and stored["steady"].verdict == "no change"
    # The stored numbers are spec §8's, computed here from the posted summaries with scipy's t distribution.
    for name, comparison in stored.items():
        nights = (Result.objects.filter(metric=comparison.candidate.metric).exclude(run=tonight)
                  .order_by("-run__started_at"))
        history = np.array([[r.mean, r.variance / r.n] for r in nights[:10]])
        tonight_result = comparison.candidate
        spread = history[:, 0].var(ddof=1)
        between = max(spread - history[:, 1].mean(), 0.0)
        error = np.sqrt(between + tonight_result.variance / tonight_result.n + spread / 10)
        t = (tonight_result.mean - history[:, 0].mean()) / error
        assert comparison.ratio == pytest.approx(tonight_result.mean / history[:, 0].mean(), rel=1e-12)
        assert comparison.pvalue == pytest.approx(2 * scipy_stats.t.sf(abs(t), 9), rel=1e-9)

    overview = table_rows(browser.get("/").content.decode())
    run_page = table_rows(browser.get(f"/runs/{tonight.pk}/").content.decode(), method="history")
    alerts = {re.search(r"<strong>([^<]+)</strong>", row).group(1): html_module.unescape(row)
              for row in re.findall(r"<tr id=\"alert-\d+\" class=\"alert-row\">.*?</tr>",
                                    browser.get("/alerts/").content.decode(), flags=re.S)}
    api_rows = {item["benchmark"]: item
                for item in api.get(f"/api/v1/runs/{tonight.pk}/comparisons", {"method": "history"}).json()["items"]}
    for name, comparison in stored.items():
        values = {"verdict": comparison.verdict, "ratio": comparison.ratio, "low": comparison.ci_low,
                  "high": comparison.ci_high, "p": comparison.pvalue, "q": comparison.qvalue,
                  "change": percent(comparison.ratio, comparison.ci_low, comparison.ci_high),
                  "level": comparison.confidence_level, "high_p": comparison.qvalue >= 0.05}
        assert_row_html(overview[name], values)
        assert_row_html(run_page[name], values, with_high_p_class=False)
        assert_numbers(api_rows[name], values)
    assert set(alerts) == {"slower"}
    alert_row = alerts["slower"]
    assert percent(stored["slower"].ratio, stored["slower"].ci_low, stored["slower"].ci_high) in alert_row
    assert probability(stored["slower"].pvalue) in alert_row and probability(stored["slower"].qvalue) in alert_row
    assert "▲ regression" in alert_row and "high p" not in alert_row
