"""results.charts: figure dicts from plain data, and the run page's analyses from stored rounds. No database."""

import dataclasses
import json
import math
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from results import charts
from results.stats import autocorrelation, autocorrelation_by_size, format_change
from runner import replay
from runner import session as session_loop


START = datetime(2026, 10, 1, 2, 0, tzinfo=timezone.utc)


def point(day: int, mean: float, *, machine: str = "bench-1", comparison: dict | None = None, run_id: int | None = None,
          ci: float | None = 0.01) -> dict:
    return {"id": day, "run_id": run_id or 100 + day, "started_at": START + timedelta(days=day), "machine": machine,
            "commit": f"{day:040x}", "branch": "main", "kind": "nightly", "mean": mean,
            "ci_low": None if ci is None else mean - ci, "ci_high": None if ci is None else mean + ci, "n": 20,
            "comparison": comparison}


def history_comparison(means: list[float], **fields) -> dict:
    """A stored history comparison as the history selector reads it (its band as stored)."""
    centre, spread = float(np.mean(means)), float(np.std(means, ddof=1))
    return {"method": "history", "ratio": 1.0, "ci_low": 0.98, "ci_high": 1.02, "pvalue": 0.5, "qvalue": 0.6,
            "verdict": "no change", "confidence_level": 0.95, "alert_id": None, "alert_status": None,
            "band": [centre - 3 * spread, centre + 3 * spread], **fields}


def trace(figure: dict, name: str) -> dict:
    return next(t for t in figure["data"] if t.get("name") == name)


def test_one_mean_trace_and_one_interval_band_per_machine_with_run_ids_to_click():
    points = [point(day, 1.0 + 0.01 * day, machine=machine) for day in range(4) for machine in ("a", "b")]

    figure = charts.history_figure(points, metric="time", scale=(1.0, "s"))

    assert [t["name"] for t in figure["data"] if t["mode"] == "lines+markers"] == ["a", "b"]
    means = trace(figure, "a")
    assert means["customdata"] == [100, 101, 102, 103] and means["x"][0] == "2026-10-01 02:00:00"
    band = trace(figure, "a: run CI")
    assert band["fill"] == "toself" and len(band["x"]) == 8  # out along the highs, back along the lows
    assert band["y"][:4] == [p["ci_high"] for p in points if p["machine"] == "a"]
    assert figure["layout"]["xaxis"]["rangeslider"]["visible"] and figure["layout"]["xaxis"]["type"] == "date"
    json.dumps(figure)  # plain JSON, ready for json_script


def test_a_gap_in_the_intervals_splits_the_band_instead_of_bridging_it():
    points = [point(0, 1.0), point(1, 1.0), point(2, 1.0, ci=None), point(3, 1.0), point(4, 1.0)]

    band = trace(charts.history_figure(points, metric="time", scale=(1.0, "s")), "bench-1: run CI")

    assert band["x"].count(None) == 1 and len(band["x"]) == 9


def test_the_history_baseline_band_is_the_one_the_history_comparison_stored():
    low, high = charts.history_bands([history_comparison([1.0, 2.0, 3.0], band=[0.5, 3.5]), None,
                                      {"method": "pairwise", "band": [0.0, 9.0]}, {"method": "history"}])

    assert low == [0.5, None, None, None] and high == [3.5, None, None, None]


def test_alerts_improvements_and_change_points_are_marked():
    points = [point(0, 1.0), point(1, 1.0, comparison=history_comparison([1.0] * 3, verdict="improvement")),
              point(2, 1.2, comparison=history_comparison([1.0, 1.01, 0.99], verdict="regression", alert_id=7,
                                                          alert_status="new", ratio=1.2, ci_low=1.15, ci_high=1.25))]
    change = [{"run_id": 102, "started_at": START + timedelta(days=2), "machine": "bench-1", "ratio": 1.2,
               "ci_low": 1.15, "ci_high": 1.25, "pvalue": 0.0004, "mean": 1.2}]
    alerts = [{"pk": 7, "state": "confirmed", "status": "new", "verdict": "regression", "machine": "bench-1",
               "started_at": START + timedelta(days=2), "night": (START + timedelta(days=1)).date(), "mean": 1.2,
               "first_run_id": 102, "ratio": 1.2, "low": 1.15,
               "high": 1.25, "pvalue": 0.0004, "qvalue": 0.001, "nights": 1},
              {"pk": 8, "state": "suspected", "status": "new", "verdict": "suspected regression", "machine": "bench-1",
               "started_at": START + timedelta(days=1), "night": START.date(), "mean": 1.0, "first_run_id": 101,
               "ratio": 1.03, "low": 0.99,
               "high": 1.07, "pvalue": 0.004, "qvalue": 0.02, "nights": 3, "state_note": ""}]

    figure = charts.history_figure(points, change, alerts, metric="time", scale=(1.0, "s"))

    alert = trace(figure, "▲ alert (regression)")
    assert alert["customdata"] == [102] and alert["marker"]["symbol"] == "triangle-up"
    assert "first night: night of 2026-10-01, run started 2026-10-02 02:00:00 UTC" in trace(
        figure, "△ alert (suspected regression)")["text"][0]
    suspected = trace(figure, "△ alert (suspected regression)")
    assert suspected["customdata"] == [101] and suspected["marker"]["symbol"] == "triangle-up-open"
    assert "+3.0% [-1.0%, +7.0%] over 3 nights pooled" in suspected["text"][0]
    assert "p = 0.004, q = 0.020" in suspected["text"][0]
    assert trace(figure, "▼ improvement")["customdata"] == [101]
    marker = trace(figure, "┆ change point (shift, CI)")
    assert marker["customdata"] == [102] and "+20.0% [+15.0%, +25.0%]" in marker["text"][0]
    assert "p < 0.001" in marker["text"][0]  # said in words, never "p = <0.001"
    assert figure["layout"]["shapes"][0]["x0"] == "2026-10-03 02:00:00"
    hover = trace(figure, "bench-1")["text"][2]
    assert "▲ regression" in hover and "+20.0% [+15.0%, +25.0%]" in hover and "alert #7 · new" in hover
    assert "p = 0.500, q = 0.600" in hover


def test_user_text_reaches_plotly_as_entities_never_as_markup():
    nasty = "<img src=x onerror=alert(1)>"
    points = [dict(point(0, 1.0, machine=nasty), branch="<b>main</b>", commit="<script>x</script>" + "0" * 30)]

    figure = charts.history_figure(points, metric="<i>time</i>", scale=(1.0, "<s>"))

    text = json.dumps(figure)
    assert "<img" not in text and "<script>" not in text and "<b>main" not in text and "<i>time" not in text
    assert trace(figure, "&lt;img src=x onerror=alert(1)&gt;")["text"][0].count("&lt;b&gt;main&lt;/b&gt;") == 1


def test_stored_limits_format_as_the_charts_show_them():
    # Stored comparisons keep None for the limits of an unbounded interval.
    expected = {(1.055, 1.03, 1.08): "+5.5% [+3.0%, +8.0%]", (0.9, 0.85, 0.95): "-10.0% [-15.0%, -5.0%]",
                (1.0, None, None): "+0.0% [unbounded]", (1.2, 1.1, math.inf): "+20.0% [unbounded]"}
    for (ratio, low, high), text in expected.items():
        assert format_change(ratio, low, high) == text


# ---------------------------------------------------------------------------------------------
# Run detail

TARGETS = session_loop.SessionTargets(target_width=0.001, work_range=(60, 200), budget_rounds=10)


def synthetic_rounds(count: int = 10, *, seed: int = 3, warmup: int = 40) -> list[session_loop.RoundRecord]:
    rng = np.random.default_rng(seed)
    records = []
    for index in range(count):
        values = 1.0 + rng.normal(0, 0.01, 120)
        values[:warmup] += 0.5
        records.append(session_loop.RoundRecord(
            index=index, workload="A", work_amount=120.0, analysed=index != 0,
            outcome=session_loop.RoundOutcome(duration=float(values.sum()), readings={"time": float(values.sum())},
                                              unit_readings={"time": values.tolist()})))
    return records


def test_session_samples_split_the_warmup_as_the_session_analysis_does():
    records = synthetic_rounds()

    split = replay.session_samples(records, "time", TARGETS)

    analysed = session_loop.analysed_samples(records, "time", "A", TARGETS)
    assert np.array_equal(split.values[split.kept], analysed)
    assert split.values.size == 10 * 120 and not split.kept[:120].any()  # round 0 is a short round
    reasons = {reason for _, _, _, reason in split.spans}
    assert reasons == {"short round", "warm-up"}
    warmups = [(start, stop) for start, stop, _, reason in split.spans if reason == "warm-up"]
    assert warmups[0][0] == 120 and warmups[0][1] - 120 >= 40  # every shifted reading is removed
    full = session_loop.analyse(records, [session_loop.MetricSpec("time", "s")], TARGETS)["A"]["time"]
    none = dataclasses.replace(TARGETS, warmup="none")
    again = session_loop.analyse(split.records, [session_loop.MetricSpec("time", "s")], none)["A"]["time"]
    assert (again.mean, again.ci_low, again.ci_high, again.subsession_size) == \
        (full.mean, full.ci_low, full.ci_high, full.subsession_size)


def test_the_stable_phases_are_read_back_from_the_stored_samples_instead_of_rerunning_edm():
    records = synthetic_rounds()
    stored = session_loop.analysed_samples(records, "time", "A", TARGETS)

    phases = replay.stored_phases(records, "time", TARGETS, stored)
    fast = replay.session_samples(records, "time", TARGETS, stored=stored)
    slow = replay.session_samples(records, "time", TARGETS)

    assert phases is not None and set(phases) == set(range(1, 10))
    assert np.array_equal(fast.kept, slow.kept) and fast.spans == slow.spans
    assert replay.stored_phases(records, "time", TARGETS, stored[:-1]) is None  # a misfit: EDM decides


def test_ci_narrowing_ends_at_the_sessions_own_estimate_and_caps_its_work():
    records = synthetic_rounds(30)
    spec = session_loop.MetricSpec("time", "s")
    split = replay.session_samples(records, "time", TARGETS)

    points = replay.ci_narrowing(records, spec, TARGETS, trimmed=split.records)
    few = replay.ci_narrowing(records, spec, TARGETS, trimmed=split.records, max_prefixes=5)

    final = session_loop.analyse(records, [spec], TARGETS)["A"]["time"]
    assert [p.rounds for p in points] == list(range(1, 31))
    assert points[-1].relative_width == pytest.approx(final.relative_width)
    assert points[0].relative_width is None  # a short round: nothing to analyse yet
    assert [p.rounds for p in few] == [1, 8, 16, 23, 30]
    figure = charts.ci_narrowing_figure(points, target=0.001)
    assert trace(figure, "target 0.1%")["y"] == [0.1, 0.1]


def test_autocorrelation_by_size_marks_the_chosen_size():
    rng = np.random.default_rng(0)
    ar = np.empty(2000)
    ar[0] = 0.0
    for i in range(1, ar.size):
        ar[i] = 0.8 * ar[i - 1] + rng.normal()

    sizes, values = autocorrelation_by_size(ar, include=[37])

    assert sizes[0] == 1 and values[0] == pytest.approx(autocorrelation(ar))
    assert 37 in sizes and max(sizes) == 200 and len(sizes) <= 60 + 1
    assert values[0] > 0.7 and abs(values[sizes.index(37)]) < 0.3
    figure = charts.autocorrelation_figure(sizes, values, chosen=37)
    assert trace(figure, "chosen subsession size 37")["x"] == [37]
    assert trace(figure, "±0.1 (independent enough)")["y"] == [0.1, 0.1]
    assert autocorrelation_by_size(np.ones(5)) == ([], [])


def test_samples_are_thinned_for_display_and_the_title_says_so():
    figure = charts.samples_figure(np.arange(50_000.0), scale=(1.0, "s"), mean=1.0, ci_low=0.9, ci_high=1.1)

    samples = trace(figure, "samples")
    assert samples["type"] == "scattergl" and len(samples["x"]) == 16_667
    assert "16667 of 50000 shown, 1 in 3" in figure["layout"]["title"]["text"]


def microbenchmark_readings(*, count: int = 5000, outliers: int = 5, seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    """Readings of a 76 µs benchmark (2% noise, a warm-up 25% slower over the first 8%) with a few readings
    interrupted for 1-16 ms; and where those are."""
    rng = np.random.default_rng(seed)
    values = 76e-6 * (1.0 + rng.normal(0, 0.02, count))
    values[: count // 12] += 19e-6
    where = np.sort(rng.choice(np.arange(count // 12, count), outliers, replace=False))
    values[where] = rng.uniform(1e-3, 16e-3, outliers)
    return values, where


def scale_buttons(figure: dict) -> dict:
    (menu,) = figure["layout"]["updatemenus"]
    return {button["label"]: button["args"] for button in menu["buttons"]}


def test_a_few_huge_readings_are_drawn_at_the_edge_of_a_range_that_shows_the_bulk():
    values, where = microbenchmark_readings()
    kept = np.ones(values.size, dtype=bool)
    kept[: values.size // 12] = False
    bulk = np.delete(values, where)
    mean = float(bulk[kept[np.isin(np.arange(values.size), where, invert=True)]].mean())

    figure = charts.samples_figure(values, scale=(1.0, "s"), kept=kept, spans=[(0, values.size // 12, 0, "warm-up")],
                                   mean=mean, ci_low=mean * 0.999, ci_high=mean * 1.001)

    low, high = figure["layout"]["yaxis"]["range"]
    assert figure["layout"]["yaxis"]["autorange"] is False
    assert low < bulk.min() and bulk.max() < high < 2 * bulk.max()  # every ordinary reading, warm-up included
    assert high < 1e-3 < values[where].min()  # not flattened by 16 ms
    edge = trace(figure, "▲▼ 5 readings beyond the y range, at its edge (see log scale)")
    assert edge["x"] == where.tolist() and len(set(edge["y"])) == 1 and low < edge["y"][0] < high
    assert edge["marker"]["symbol"] == ["triangle-up"] * 5
    # Three significant digits, the series' unit.
    assert all(text.startswith(f"#{at}: ") and text.endswith(" s")
               and float(text.split()[1]) == pytest.approx(values[at], rel=5e-3)
               for at, text in zip(where, edge["text"]))
    # Every reading is still plotted where it is, for the log scale; the markers at the edge are hidden there.
    stable = trace(figure, "stable phase (analysed)")
    assert set(where.tolist()) <= set(stable["x"])
    buttons = scale_buttons(figure)
    assert buttons["log"][1] == {"yaxis.type": "log", "yaxis.autorange": True}
    assert buttons["log"][0]["visible"] == [t is not edge for t in figure["data"]]
    assert buttons["linear"][1] == {"yaxis.type": "linear", "yaxis.autorange": False, "yaxis.range": [low, high]}
    assert all(buttons["linear"][0]["visible"])
    json.dumps(figure)


def test_readings_without_outliers_keep_plotlys_own_range_and_normal_noise_is_never_clipped():
    values, _ = microbenchmark_readings(outliers=0)
    noise = 1.0 + np.random.default_rng(5).normal(0, 0.01, 200_000)

    for readings in (values, noise):
        figure = charts.samples_figure(readings, scale=(1.0, "s"), mean=float(readings.mean()))

        assert "range" not in figure["layout"]["yaxis"]
        assert not any(t["name"].startswith("▲▼") for t in figure["data"])
        assert scale_buttons(figure)["linear"][1] == {"yaxis.type": "linear", "yaxis.autorange": True}


def test_a_huge_reading_below_is_drawn_at_the_lower_edge_and_no_log_scale_is_offered_for_negative_values():
    values = 5.0 + np.random.default_rng(2).normal(0, 0.1, 400)
    values[[17, 300]] = [-500.0, 900.0]

    figure = charts.samples_figure(values, scale=(1.0, "ms"))

    low, high = figure["layout"]["yaxis"]["range"]
    edge = trace(figure, "▲▼ 2 readings beyond the y range, at its edge (see log scale)")
    assert edge["marker"]["symbol"] == ["triangle-down", "triangle-up"]
    bulk = np.delete(values, [17, 300])
    assert low < edge["y"][0] <= bulk.min() and bulk.max() <= edge["y"][1] < high < 6.0
    assert figure["layout"]["updatemenus"] == []


def test_a_history_with_a_broken_night_shows_the_others_and_links_the_broken_one_from_the_edge():
    means = 1.0 + np.random.default_rng(4).normal(0, 0.01, 30)
    means[20] = 40.0
    points = [point(day, float(mean)) for day, mean in enumerate(means)]

    figure = charts.history_figure(points, metric="time", scale=(1.0, "s"))

    low, high = figure["layout"]["yaxis"]["range"]
    others = np.delete(means, 20)
    assert low < others.min() - 0.01 and others.max() + 0.01 < high < 2.0  # the bands too
    edge = trace(figure, "▲▼ 1 run mean beyond the y range, at its edge (see log scale)")
    assert edge["customdata"] == [120] and edge["x"] == ["2026-10-21 02:00:00"]
    assert "mean 40.0 s" in edge["text"][0] and "<i>click for the run</i>" in edge["text"][0]
    assert scale_buttons(figure)["log"][0]["visible"] == [t is not edge for t in figure["data"]]


def test_a_short_history_is_not_set_by_its_one_outlier_and_a_real_shift_is_not_clipped():
    short = [point(day, mean) for day, mean in enumerate([1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.01, 0.99, 25.0])]
    shifted = [point(day, 1.0 + 0.1 * (day >= 15) + 0.002 * (day % 3)) for day in range(30)]

    clipped = charts.history_figure(short, metric="time", scale=(1.0, "s"))
    whole = charts.history_figure(shifted, metric="time", scale=(1.0, "s"))

    assert clipped["layout"]["yaxis"]["range"][1] < 2.0
    assert trace(clipped, "▲▼ 1 run mean beyond the y range, at its edge (see log scale)")["customdata"] == [109]
    assert "range" not in whole["layout"]["yaxis"]
    assert not any(t["name"].startswith("▲▼") for t in whole["data"])


def test_utilisation_keeps_percentages_and_draws_the_threshold():
    monitors = [(index, {"usage": {"cpu": {"label": "cpu (all cores)", "unit": "%", "mean": 95.0, "max": 99.0},
                                   "net": {"label": "network sent", "unit": "B/s", "mean": 1e6, "max": 2e6}}})
                for index in range(3)]

    figure = charts.utilisation_figure(monitors, threshold=80.0)

    assert [t["name"] for t in figure["data"]] == ["cpu (all cores)", "bottleneck threshold 80%"]
    assert charts.utilisation_figure([(0, {}), (1, {"usage": {}})]) is None


def test_overhead_is_a_ratio_with_its_interval_or_says_it_is_unbounded():
    bounded = charts.overhead_figure({"ratio": 1.02, "low": 1.01, "high": 1.04, "bounded": True, "rounds": 6})
    unbounded = charts.overhead_figure({"ratio": 1.02, "low": None, "high": None, "bounded": False, "rounds": 6})

    bar = bounded["data"][0]["error_x"]
    assert bar["array"] == [pytest.approx(0.02)] and bar["arrayminus"] == [pytest.approx(0.01)]
    assert "+2.0% [+1.0%, +4.0%]" in bounded["layout"]["title"]["text"]
    assert "error_x" not in unbounded["data"][0] and "[unbounded]" in unbounded["layout"]["title"]["text"]


def test_figures_reach_the_page_escaped_exactly_as_djangos_json_script_does():
    from django.utils.html import json_script

    from results.templatetags.figures import json_data

    value = {"</script><script>alert(1)</script>": ["&amp;", "<b>", ">", "é\u2028\u2029", 1.5, None, True],
             "at": START, "nested": {"x": [1, {"y": "<!--"}]}}
    assert json_data(value, "pilotweb-figures") == json_script(value, "pilotweb-figures")
