"""A pull request's performance review as Markdown (for a PR comment) and as JSON.

Pure functions of a :class:`results.selectors.PullRequestReview`: no queries, no I/O. The tables
are :func:`results.report.markdown_table`'s, so a PR comment reads like the ``compare`` command's
Markdown output.
"""

import math
from typing import Any

from . import report, stats
from .models import ALPHA
from .selectors import ComparisonRow, PullRequestReview, Side, format_probability

CHANGED = (stats.Verdict.REGRESSION.value, stats.Verdict.IMPROVEMENT.value)
INCONCLUSIVE = stats.Verdict.INCONCLUSIVE.value
_NOTHING_DECIDED = "No series was decided."


def summary(review: PullRequestReview) -> dict[str, Any]:
    """The verdict counts and what was compared with what."""
    run, base = review.run, review.base_run
    revision = run.revision
    return {
        "run_id": run.pk, "project": run.project.slug, "machine": run.machine.name,
        "pull_request": revision.pull_request if revision else None,
        "commit": revision.commit if revision else None, "branch": revision.branch if revision else None,
        "base_commit_requested": revision.base_commit if revision else None,
        "base_run_id": base.pk if base else None,
        "base_commit": base.revision.commit if base and base.revision else None,
        "compared": review.compared, "counts": dict(review.counts),
        "regressions": review.counts.get(stats.Verdict.REGRESSION.value, 0),
    }


def row_json(row: ComparisonRow) -> dict[str, Any]:
    return {
        "metric_id": row.metric_id, "benchmark": row.benchmark, "metric": row.metric, "unit": row.unit,
        "direction": row.direction, "baseline": _side_json(row.baseline), "candidate": _side_json(row.candidate),
        "ratio": row.ratio, "ci_low": row.low, "ci_high": row.high, "bounded": row.bounded,
        "change": row.change or None, "statistic": row.statistic, "df": row.df, "pvalue": row.pvalue,
        "qvalue": row.qvalue, "high_p": row.high_p, "verdict": row.verdict, "threshold": row.threshold,
        "confidence_level": row.confidence_level,
    }


def _side_json(side: Side) -> dict[str, Any]:
    return {"mean": side.mean, "half_width": side.half_width, "n": side.n}


def pr_markdown(review: PullRequestReview, *, url: str = "") -> str:
    """A PR comment: the verdict counts, the changed benchmarks, the inconclusive ones and what would decide them."""
    run, base = review.run, review.base_run
    revision = run.revision
    head = f"`{revision.commit[:12]}`" if revision else f"run #{run.pk}"
    title = f"### Performance: {head}"
    if base is not None:
        title += f" against base `{base.revision.commit[:12] if base.revision else f'run #{base.pk}'}`"
    lines = [title, ""]
    if not review.compared:
        return "\n".join([*lines, "Not compared yet: the comparison runs shortly after the results arrive.", ""])
    if base is None or not review.rows:
        requested = revision.base_commit if revision else ""
        missing = f"no run of the base commit `{requested[:12]}`" if requested else "no base run"
        return "\n".join([*lines, f"Nothing to compare: {missing} on machine `{run.machine.name}`.", ""])
    lines += [_counts_line(review.counts) + f" (machine `{run.machine.name}`, {len(review.rows)} series).", ""]

    changed = [row for row in review.rows if row.verdict in CHANGED]
    inconclusive = [row for row in review.rows if row.verdict == INCONCLUSIVE]
    if changed or inconclusive:
        table = report.markdown_table([_report_row(row) for row in changed + inconclusive])
        if not changed and table.startswith(_NOTHING_DECIDED):
            table = "No benchmark changed beyond its threshold." + table[len(_NOTHING_DECIDED):]
        lines.append(table.rstrip("\n"))
    else:
        lines.append("No benchmark changed beyond its threshold.")
    if inconclusive:
        lines += ["", "<details><summary>What would decide the inconclusive ones</summary>", ""]
        lines += [_inconclusive_line(row) for row in inconclusive]
        lines += ["", "</details>"]
    footer = ("Welch's t-test and Fieller's interval on the subsession statistics of the base and head runs; "
              "q: Benjamini–Hochberg across the run.")
    if url:
        footer += f" [Full review]({url})"
    lines += ["", f"<sub>{footer}</sub>", ""]
    return "\n".join(lines)


def _counts_line(counts: dict[str, int]) -> str:
    parts = []
    for verdict, singular, plural in (("regression", "regression", "regressions"),
                                      ("improvement", "improvement", "improvements"),
                                      ("inconclusive", "inconclusive", "inconclusive"),
                                      ("no change", "no change", "no change")):
        count = counts.get(verdict, 0)
        text = f"{count} {singular if count == 1 else plural}"
        parts.append(f"**{text}**" if verdict == "regression" and count else text)
    return ", ".join(parts)


def _inconclusive_line(row: ComparisonRow) -> str:
    """The interval, the band it straddles, the sample sizes and q: what more data has to settle."""
    name = f"{row.benchmark} ({row.metric})".replace("|", "\\|").replace("`", "'")
    interval = row.change or "no ratio"
    sizes = f"{row.baseline.n or '?'} + {row.candidate.n or '?'} subsessions"
    why = "the interval is unbounded" if not row.bounded else f"the interval straddles the ±{row.threshold:.0%} band"
    return (f"- `{name}`: {interval}; {why}; {sizes}; p = {format_probability(row.pvalue)}, "
            f"q = {format_probability(row.qvalue)}. More subsessions on both sides would narrow it.")


def _report_row(row: ComparisonRow) -> report.Row:
    """A stored comparison as the CLI report's row, for its Markdown table."""
    return report.Row(
        benchmark=row.benchmark, metric=row.metric, unit=row.unit, direction=row.direction, threshold=row.threshold,
        confidence_level=row.confidence_level, alpha=ALPHA, baseline=_report_side(row.baseline),
        candidate=_report_side(row.candidate),
        fieller=stats.RatioResult(
            ratio=row.ratio if row.ratio is not None else math.nan,
            low=row.low if row.bounded and row.low is not None else -math.inf,
            high=row.high if row.bounded and row.high is not None else math.inf,
            bounded=row.bounded, confidence_level=row.confidence_level),
        bootstrap=None, statistic=row.statistic if row.statistic is not None else math.nan,
        df=row.df if row.df is not None else math.nan, pvalue=row.pvalue if row.pvalue is not None else math.nan,
        verdict=stats.Verdict(row.verdict))


def _report_side(side: Side) -> report.Side:
    return report.Side(mean=side.mean if side.mean is not None else math.nan,
                       variance=side.variance if side.variance is not None else math.nan, n=side.n or 0,
                       subsession_size=side.subsession_size or 1,
                       half_width=side.half_width if side.half_width is not None else math.nan,
                       independent=side.independent)
