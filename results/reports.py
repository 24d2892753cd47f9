"""Comparison rows as reports: the tables the command line prints (text, JSON, Markdown) and a pull request's
review (its comment and its summary).

Rows are :class:`results.rows.ComparisonRow`; only their attributes are read, so nothing here needs a model or
Django. Each number is worded by :mod:`results.presentation`; what a row decides is :mod:`results.decisions`'.
"""

import json

from .decisions import RUN_NOISE_UNKNOWN_KEY, SUSPECTED_IMPROVEMENT, SUSPECTED_REGRESSION, VERDICT_ORDER
from .presentation import format_probability, format_threshold, level_text, markdown_code, said_probability
from .stats import Verdict

HIGH_P_MARK = "~"


def probability_cell(value: float | None, high_p: bool) -> str:
    """A p- or q-value in a table, marked when the comparison is not significant."""
    text = format_probability(value)
    return f"{text} {HIGH_P_MARK}" if high_p and value is not None else text


def _change_cell(interval) -> str:
    if interval.ratio is None:
        return "undefined (baseline mean 0)"
    return interval.change


def _row_change(row, interval) -> str:
    """A row's change cell; ``—`` where it has no baseline (a series with too little history yet)."""
    return "—" if row.baseline.mean is None else _change_cell(interval)


OUTPUT_FORMATS = ("text", "json", "markdown")
"""How the command line prints comparison rows (``manage.py compare``, ``import_results --compare``)."""


def comparison_output(rows, *, output_format: str, only_baseline=(), only_candidate=(), not_compared=()) -> str:
    """Rows as the command line prints them, ending with a newline: :func:`text_table`, :func:`json_rows` as
    indented JSON, or :func:`markdown_table` (one of :data:`OUTPUT_FORMATS`)."""
    if output_format == "json":
        return json.dumps(json_rows(rows), indent=2) + "\n"
    unmatched = {"only_baseline": only_baseline, "only_candidate": only_candidate, "not_compared": not_compared}
    if output_format == "markdown":
        return markdown_table(rows, **unmatched)
    return text_table(rows, **unmatched)


def text_table(rows, *, only_baseline=(), only_candidate=(), not_compared=()) -> str:
    """A benchstat-like aligned table of comparison rows, the unmatched series and a legend."""
    bootstrapped = any(row.bootstrap is not None for row in rows)
    with_q = any(row.qvalue is not None for row in rows)
    level = level_text(rows)
    header = ["benchmark", "metric", "baseline", "candidate", f"change [{level} CI]"]
    header += [f"bootstrap [{level} CI]"] if bootstrapped else []
    header += ["p"] + (["q"] if with_q else []) + ["n", "verdict"]
    lines = [header]
    for row in rows:
        cells = [row.benchmark, row.metric, row.baseline_text, row.candidate_text, _row_change(row, row.interval)]
        cells += [_row_change(row, row.bootstrap) if row.bootstrap is not None else "-"] if bootstrapped else []
        cells += [probability_cell(row.pvalue, row.high_p and not with_q)]
        cells += [probability_cell(row.qvalue, row.high_p)] if with_q else []
        cells += [_counts(row), row.verdict]
        lines.append(cells)
    p_column = 5 + bootstrapped
    numeric = {2, 3, p_column, len(header) - 2} | ({p_column + 1} if with_q else set())
    text = _aligned(lines, right=numeric)
    extras = [f"{title}: {', '.join(labels)}" for title, labels in (
        ("only in baseline", only_baseline), ("only in candidate", only_candidate),
        ("not compared (fewer than 2 subsessions)", not_compared)) if labels]
    return "\n".join([text, "", *extras, *([""] if extras else []), _legend(rows, bootstrapped, with_q)]) + "\n"


def json_rows(rows) -> list[dict]:
    """Every number of every row, None for what is missing (strict JSON)."""
    def interval(value):
        return None if value is None else {"ratio": value.ratio, "low": value.low, "high": value.high,
                                           "bounded": value.bounded}

    def side(value):
        return {"mean": value.mean, "variance": value.variance, "n": value.n,
                "subsession_size": value.subsession_size, "half_width": value.half_width,
                "independent": value.independent}

    return [{
        "benchmark": row.benchmark, "metric": row.metric, "unit": row.unit, "direction": row.direction,
        "method": row.method, "threshold": row.threshold, "confidence_level": row.confidence_level,
        "alpha": row.alpha, "ratio": row.ratio, "low": row.low, "high": row.high, "bounded": row.bounded,
        "change": row.change or None, "bootstrap": interval(row.bootstrap), "statistic": row.statistic,
        "df": row.df, "pvalue": row.pvalue, "qvalue": row.qvalue, "significant": row.significant,
        "high_p": row.high_p, "verdict": row.verdict, "verdict_from": row.verdict_from,
        "baseline": side(row.baseline), "candidate": side(row.candidate),
    } for row in rows]


def markdown_table(rows, *, only_baseline=(), only_candidate=(), not_compared=(),
                   nothing_decided: str = "No series was decided.") -> str:
    """GitHub-flavoured Markdown: the decided series worst first, then the inconclusive ones apart."""
    decided = sorted((row for row in rows if row.verdict != Verdict.INCONCLUSIVE),
                     key=lambda row: VERDICT_ORDER.get(row.verdict, len(VERDICT_ORDER)))
    inconclusive = [row for row in rows if row.verdict == Verdict.INCONCLUSIVE]
    with_q = any(row.qvalue is not None for row in rows)
    parts = [_markdown_rows(decided, with_q) if decided else nothing_decided]
    if inconclusive:
        parts += ["**Inconclusive** (no significant change, and the interval straddles the threshold):",
                  _markdown_rows(inconclusive, with_q)]
    parts += [f"{title}: {', '.join(_markdown_cell(label) for label in labels)}" for title, labels in (
        ("Only in the baseline", only_baseline), ("Only in the candidate", only_candidate),
        ("Not compared (fewer than 2 subsessions)", not_compared)) if labels]
    if any(row.high_p for row in rows):
        decider = "q" if with_q else "p"
        parts.append(f"{HIGH_P_MARK} {decider} ≥ α = {rows[0].alpha:g}: not statistically significant.")
    return "\n\n".join(parts) + "\n"


def _markdown_rows(rows, with_q: bool) -> str:
    level = level_text(rows)
    head = f"| Benchmark | Change [{level} CI] | p |" + (" q |" if with_q else "") + " Verdict |"
    rule = "| --- | ---: | ---: |" + (" ---: |" if with_q else "") + " --- |"
    lines = [head, rule]
    for row in rows:
        cells = [_markdown_cell(row.label), _row_change(row, row.decisive),
                 probability_cell(row.pvalue, row.high_p and not with_q)]
        cells += [probability_cell(row.qvalue, row.high_p)] if with_q else []
        cells += [row.verdict_label]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _markdown_cell(text: str) -> str:
    """A name in a Markdown table's cell: a code span (:func:`markdown_code`) whose pipes are escaped, as a GFM
    table needs even inside code."""
    return markdown_code(text).replace("|", "\\|")


def _counts(row) -> str:
    flag = "" if row.baseline.independent and row.candidate.independent else " !"
    return "+".join("—" if side.n is None else str(side.n) for side in (row.baseline, row.candidate)) + flag


def _aligned(lines: list[list[str]], *, right: set[int]) -> str:
    widths = [max(len(line[column]) for line in lines) for column in range(len(lines[0]))]
    return "\n".join(
        "  ".join(cell.rjust(width) if column in right else cell.ljust(width)
                  for column, (cell, width) in enumerate(zip(line, widths))).rstrip()
        for line in lines
    )


def _legend(rows, bootstrapped: bool, with_q: bool) -> str:
    parts = [(f"change: candidate/baseline − 1 with Fieller's interval; baseline, candidate: mean ± "
              f"half-width of its {level_text(rows)} interval; p: Welch's t-test; n: subsessions")]
    if with_q:
        parts.append("q: Benjamini–Hochberg across the compared series, which decides significance")
    if bootstrapped:
        parts.append("the verdict follows the bootstrap interval where there is one")
    if any(row.high_p for row in rows):
        parts.append(f"{HIGH_P_MARK} {'q' if with_q else 'p'} ≥ {rows[0].alpha:g}: not significant")
    if any(not (row.baseline.independent and row.candidate.independent) for row in rows):
        parts.append("! independence not established (too few samples, or autocorrelated at every subsession "
                     "size): the interval may be too narrow")
    return "; ".join(parts) + "."


# --- A pull request's review: the PR comment and its summary ---------------------------------------------

_CHANGED = (Verdict.REGRESSION, Verdict.IMPROVEMENT)


def pr_summary(review) -> dict:
    """The verdict counts and what was compared with what (a ``results.selectors.PullRequestReview``)."""
    run, base = review.run, review.base_run
    revision = run.revision
    return {
        "run_id": run.pk, "project": run.project.slug, "machine": run.machine.name,
        "pull_request": revision.pull_request if revision else None,
        "commit": revision.commit if revision else None, "branch": revision.branch if revision else None,
        "base_commit_requested": revision.base_commit if revision else None,
        "base_run_id": base.pk if base else None,
        "base_run_ids": [run.pk for run in review.base_runs],
        "base_commits": sorted({run.revision.commit for run in review.base_runs if run.revision}),
        "base_commit": base.revision.commit if base and base.revision else None,
        "series_on_fallback_base": review.fallbacks,
        "compared": review.compared, "counts": dict(review.counts),
        "failed": [f"{failure.metric.benchmark.name} ({failure.metric.name})" for failure in review.failures],
        "regressions": review.counts.get(Verdict.REGRESSION.value, 0),
        "beyond_threshold": [row.label for row in undecided_beyond_threshold(review.rows)],
        "machine_state": review.state_differences,
        "run_noise_unknown": [row.label for row in review.rows if RUN_NOISE_UNKNOWN_KEY in row.inputs],
    }


def undecided_beyond_threshold(rows) -> list:
    """The undecided rows (inconclusive) whose point estimate lies beyond their band: a change that may be
    real, which a reader must see named, not counted (a +7.1% [−0.5%, +15.4%] slowdown was "1 inconclusive")."""
    return [row for row in rows if row.verdict == Verdict.INCONCLUSIVE and row.ratio is not None
            and abs(row.ratio - 1.0) > row.threshold]


def pr_markdown(review, *, url: str = "") -> str:
    """A PR comment: the verdict counts, the changed and suspected benchmarks, and what would decide the suspected.
    The same rows, the same significance rule and the same marks as every page."""
    run, base = review.run, review.base_run
    revision = run.revision
    head = markdown_code(revision.commit[:12]) if revision else f"run #{run.pk}"
    title = f"### Performance: {head}"
    if base is not None:
        title += f" against base {markdown_code(base.revision.commit[:12] if base.revision else f'run #{base.pk}')}"
    lines = [title, ""]
    if not review.compared:
        return "\n".join([*lines, "Not compared yet: the comparison runs shortly after the results arrive.", ""])
    if base is None or not review.rows:
        requested = revision.base_commit if revision else ""
        missing = f"no run of the base commit {markdown_code(requested[:12])}" if requested else "no base run"
        return "\n".join([*lines, f"Nothing to compare: {missing} on machine {markdown_code(run.machine.name)}.", ""])
    lines += [_counts_line(review.counts) + f" (machine {markdown_code(run.machine.name)}, {len(review.rows)} "
              "series).", ""]
    if review.failures:
        names = ", ".join(markdown_code(failure.metric.benchmark.name) for failure in review.failures)
        lines += [f"**{len(review.failures)} failed** (no number on the head, not compared): {names}.", ""]
    for difference in review.state_differences:
        lines += [f"⚠ {difference[0].upper()}{difference[1:]}: the differences below include it.", ""]
    if review.fallbacks:
        lines += [f"{review.fallbacks} of them compared with the newest default-branch result before the pull "
                  f"request: the base commit {markdown_code(revision.base_commit[:12])} has none of them on this "
                  "machine.", ""]
    changed = [row for row in review.rows if row.verdict in _CHANGED]
    suspected = [row for row in review.rows if row.verdict in (SUSPECTED_REGRESSION, SUSPECTED_IMPROVEMENT)]
    undecided = undecided_beyond_threshold(review.rows)
    unknown = [row for row in review.rows if RUN_NOISE_UNKNOWN_KEY in row.inputs]
    if changed or suspected or undecided:
        lines.append(markdown_table(changed + suspected + undecided,
                                    nothing_decided="No benchmark changed beyond its threshold.").rstrip("\n"))
    else:
        lines.append("No benchmark changed beyond its threshold.")
    if suspected or undecided:
        lines += ["", "<details><summary>What would decide the suspected and undecided ones</summary>", ""]
        lines += [_suspected_line(row) for row in suspected + undecided]
        lines += ["", "</details>"]
    if unknown:
        lines += ["", f"{len(unknown)} of {len(review.rows)} series have no nightly history on this machine: one "
                  "run each, run-to-run noise unknown, so no change is claimed for them; an interleaved A/B "
                  "session or repeated runs would tell."]
    footer = ("Welch's t-test and Fieller's interval on the base and head runs, each run's own level included "
              "(the run-to-run variance the series' nightly history measured); q: Benjamini–Hochberg across the "
              "run, which decides significance.")
    if url:
        footer += f" [Full review]({url})"
    lines += ["", f"<sub>{footer}</sub>", ""]
    return "\n".join(lines)


def _counts_line(counts: dict[str, int]) -> str:
    parts = []
    for verdict, singular, plural in (("regression", "regression", "regressions"),
                                      (SUSPECTED_REGRESSION, "suspected regression", "suspected regressions"),
                                      ("improvement", "improvement", "improvements"),
                                      (SUSPECTED_IMPROVEMENT, "suspected improvement", "suspected improvements"),
                                      ("inconclusive", "inconclusive", "inconclusive"),
                                      ("no change", "no change", "no change")):
        count = counts.get(verdict, 0)
        if verdict in (SUSPECTED_REGRESSION, SUSPECTED_IMPROVEMENT) and not count:
            continue
        text = f"{count} {singular if count == 1 else plural}"
        parts.append(f"**{text}**" if verdict in ("regression", SUSPECTED_REGRESSION) and count else text)
    return ", ".join(parts)


def _suspected_line(row) -> str:
    """The interval, the band edge it crosses, the sample sizes and q: what more data has to settle."""
    interval = row.change or "no ratio"
    sizes = f"{row.baseline.n or '?'} + {row.candidate.n or '?'} subsessions"
    why = ("the interval is unbounded" if not row.bounded
           else f"the interval straddles the {format_threshold(row.threshold)} band")
    if RUN_NOISE_UNKNOWN_KEY in row.inputs:
        return (f"- {markdown_code(row.label)}: {interval}; one run each, run-to-run noise unknown. An "
                "interleaved A/B session of the two revisions, or repeated runs, would tell.")
    return (f"- {markdown_code(row.label)}: {interval}; {why}; {sizes}; {said_probability('p', row.pvalue)}, "
            f"{said_probability('q', row.qvalue)}. Repeated runs of both revisions (or an interleaved A/B "
            "session) would narrow it: the runs' own levels are part of its width.")
