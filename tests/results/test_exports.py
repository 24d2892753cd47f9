"""Every table downloads as CSV and JSON (issue 16): the same rows and numbers as the page, all of them."""

import csv
import io

import pytest
from django.test import Client

from results import selectors
from results.models import Metric
from tests.factories import posted_run
from tests.results.test_overview_pages import compared, pull_request_against_base, tonight_with_every_verdict

pytestmark = pytest.mark.django_db


def csv_rows(response) -> list[dict]:
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_the_overview_downloads_every_series_of_the_night_as_csv_and_json(monkeypatch):
    monkeypatch.setattr(selectors, "ROW_LIMIT", 2)
    tonight_with_every_verdict()
    client = Client()

    rows = csv_rows(client.get("/", {"format": "csv"}))
    as_json = client.get("/", {"format": "json"}).json()

    assert sorted(row["benchmark"] for row in rows) == ["improved", "new", "noisy", "regressed", "same"]
    regressed = next(row for row in rows if row["benchmark"] == "regressed")
    assert regressed["verdict"] == "regression" and regressed["unit"] == "s" and regressed["project"] == "demo"
    assert 9.0 < float(regressed["change_percent"]) < 11.0 and float(regressed["threshold_percent"]) == 2.0
    assert float(regressed["ci_low_percent"]) > 2.0 and regressed["night"] == "2026-10-10"
    assert [row["benchmark"] for row in as_json] == [row["benchmark"] for row in rows]
    assert as_json[0]["pvalue"] < 0.001 and as_json[0]["qvalue"] is not None
    only = csv_rows(client.get("/", {"format": "csv", "verdict": "regression"}))
    assert [row["benchmark"] for row in only] == ["regressed"]
    assert 'format=csv" download>CSV</a>' in client.get("/").content.decode()


def test_a_format_not_offered_is_a_400_naming_the_choices():
    response = Client().get("/", {"format": "xlsx"})
    assert response.status_code == 400 and "format must be one of html, csv, json" in response.content.decode()
    assert Client().get("/runs/", {"format": "pdf"}).status_code == 400


def test_the_pr_review_the_runs_list_and_the_history_download_too():
    head = pull_request_against_base()
    client = Client()

    pr = csv_rows(client.get(f"/runs/{head.pk}/pr/", {"format": "csv"}))
    assert {row["benchmark"]: row["verdict"] for row in pr} == {
        "sort": "regression", "hash": "improvement", "json": "inconclusive", "parse": "no change"}
    runs = client.get("/runs/", {"format": "json", "kind": "pr"}).json()
    assert [run["id"] for run in runs] == [head.pk] and runs[0]["changes"] == {
        "regression": 1, "improvement": 1, "inconclusive": 1, "no change": 1}
    metric = Metric.objects.get(benchmark__name="sort")
    history = client.get(f"/history/{metric.pk}/", {"format": "csv", "branch": ""})
    assert [row["kind"] for row in csv_rows(history)] == ["nightly"] * 4 + ["pr"]
    assert history["Content-Disposition"] == f'attachment; filename="history-{metric.pk}.csv"'


def test_exported_values_are_in_the_series_own_scale():
    for night in range(4):
        compared(posted_run(night, {"json_dumps": 33.8e-6}, sd=0.01))
    rows = csv_rows(Client().get("/", {"format": "csv"}))
    assert rows[0]["unit"] == "µs" and 33.0 < float(rows[0]["candidate_mean"]) < 34.6


def test_the_alerts_download_with_their_triage_and_commit_range():
    head = pull_request_against_base()

    alerts = Client().get("/alerts/", {"format": "json"}).json()

    assert [(alert["benchmark"], alert["verdict"], alert["status"]) for alert in alerts] == [
        ("sort", "regression", "new")]
    assert alerts[0]["first_bad_commit"] == "c" * 40 and alerts[0]["last_good_commit"] == "b" * 40
    assert 7.0 < alerts[0]["change_percent"] < 9.0 and alerts[0]["first_run_id"] == head.pk


def test_two_runs_compared_download_every_series():
    for night in range(2):
        posted_run(night, {"sort": 1.0, "hash": 1.0, "parse": 1.0}, sd=0.002)
    baseline, candidate = posted_run(2, {"sort": 1.0, "hash": 1.0, "parse": 1.0}, sd=0.002), posted_run(
        3, {"sort": 1.1, "hash": 1.0, "parse": 1.0}, sd=0.002)

    rows = csv_rows(Client().get("/compare/", {"baseline": baseline.pk, "candidate": candidate.pk, "format": "csv"}))

    assert {row["benchmark"]: row["verdict"] for row in rows} == {
        "sort": "regression", "hash": "no change", "parse": "no change"}
    assert {row["method"] for row in rows} == {"pairwise"}


def test_a_run_downloads_its_results_and_its_comparisons():
    for night in range(4):
        compared(posted_run(night, {"json_dumps": 33.8e-6}, sd=0.01))
    tonight = compared(posted_run(4, {"json_dumps": 40e-6}, sd=0.01))
    client = Client()

    (result,) = client.get(f"/runs/{tonight.pk}/", {"format": "json"}).json()
    methods = {row["method"]: row["verdict"] for row in
               csv_rows(client.get(f"/runs/{tonight.pk}/", {"format": "csv", "table": "comparisons"}))}

    assert result["unit"] == "µs" and 39 < result["mean"] < 41 and result["degrees_of_freedom"] == 19
    assert methods["history"] == "regression" and methods["previous"] == "regression"
    assert 'href="?format=csv&amp;table=comparisons"' in client.get(f"/runs/{tonight.pk}/").content.decode()
