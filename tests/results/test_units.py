"""One scaling per series (issue 16): chosen from its first result, shown the same on every page, three
significant digits, never ``0.0000 s``."""

import re

import pytest
from django.test import Client

from results import presentation
from results.models import Metric
from tests.factories import posted_run
from tests.results.test_overview_pages import compared, row_html

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("value", "expected"), [
    (33.77, "33.8"), (0.004123, "0.00412"), (1099.4, "1099"), (999.94, "1000"), (1.0, "1.00"), (0.5, "0.500"),
    (-2.345, "-2.35"), (0.0, "0"), (0.99981, "1.00"), (9.9996e-5, "0.000100"),
])
def test_numbers_keep_three_significant_digits_and_never_an_exponent(value, expected):
    assert presentation.format_number(value) == expected


@pytest.mark.parametrize(("unit", "reference", "shown"), [
    ("s", 33.8e-6, "µs"), ("s", 0.25, "ms"), ("s", 2.0, "s"), ("s", 0.9998, "s"), ("s", 0.9, "ms"),
    ("s", 4e-10, "ns"), ("ns", 76_000.0, "µs"), ("s", None, ""),
    ("ms", 1500.0, "s"), ("us", 12.0, "µs"), ("MB/s", 1e-6, "MB/s"), ("s", 0.0, ""),
])
def test_a_time_is_shown_with_the_prefix_that_suits_its_first_value(unit, reference, shown):
    assert presentation.display_unit(unit, reference) == shown


def test_a_microsecond_series_reads_in_microseconds_on_every_page():
    # pyperf's json_dumps: 33.8 µs. Before, the run page read "0.0000 s" and the overview "ms".
    for night in range(4):
        compared(posted_run(night, {"json_dumps": 33.8e-6}, sd=0.01, samples=True))
    tonight = compared(posted_run(4, {"json_dumps": 33.8e-6 * 1.1}, sd=0.01, samples=True))
    metric = Metric.objects.get()
    client = Client()

    assert metric.display_unit == "µs"
    overview = row_html(client.get("/").content.decode(), "json_dumps")
    assert re.search(r"3[34]\.\d ± 0\.\d+ µs", overview) and re.search(r"3[67]\.\d ± 0\.\d+ µs", overview)
    run_page = client.get(f"/runs/{tonight.pk}/").content.decode()
    assert "0.0000" not in run_page and re.search(r"3[67]\.\d µs</td>", run_page)
    assert re.search(r"\[3[67]\.\d, 3[67]\.\d\] µs", run_page)
    history = client.get(f"/history/{metric.pk}/", {"table": 1}).content.decode()
    assert len(re.findall(r"<td class=\"num\">3\d\.\d µs</td>", history)) == 5
    assert "· time in µs," in history


def test_the_scale_stays_the_series_own_when_its_values_cross_a_prefix():
    for night in range(4):
        compared(posted_run(night, {"parse": 900e-6}, sd=0.01))
    tonight = compared(posted_run(4, {"parse": 1.2e-3}, sd=0.01))

    html = row_html(Client().get("/").content.decode(), "parse")

    assert Metric.objects.get().display_unit == "µs"
    assert re.search(r"\b[89]\d\d ± \d+(\.\d+)? µs", html) and re.search(r"\b1[12]\d\d ± \d+(\.\d+)? µs", html)
    assert " ms" not in html and tonight.pk
