import json
import math
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from results import comparisons, presentation, series
from results.ingest import ImportFormatError
from results.models import Run

OUTPUTS = ("text", "json", "markdown")


class Command(BaseCommand):
    help = (
        "Compare a candidate with a baseline, series by series: Welch's test, Fieller's ratio interval and the "
        "verdict (optionally the hierarchical bootstrap). Either two stored runs (baseline id, candidate id) or "
        "--files BASELINE CANDIDATE in any importer format, or plain numbers one per line (two such files are "
        "compared with each other). Series are matched by benchmark and metric name."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("runs", nargs="*", type=int, metavar="RUN", help="Baseline run id, candidate run id.")
        parser.add_argument("--files", nargs=2, type=Path, metavar=("BASELINE", "CANDIDATE"),
                            help="Compare two result files instead of stored runs; nothing is written.")
        parser.add_argument("--format-a", choices=series.INPUT_FORMATS, help="Format of the baseline file "
                            "(default: told by its keys).")
        parser.add_argument("--format-b", choices=series.INPUT_FORMATS, help="Format of the candidate file.")
        parser.add_argument("--format", choices=OUTPUTS, default="text", dest="output", help="Output format.")
        parser.add_argument("--alpha", type=float, default=presentation.ALPHA,
                            help="Significance level: q (two runs) or p (two files) at or above it is flagged.")
        parser.add_argument("--threshold", type=float,
                            help="Practical-significance threshold θ for every series (default: each metric's).")
        parser.add_argument("--bootstrap", action="store_true",
                            help="Also the hierarchical bootstrap ratio interval where both sides kept samples.")
        parser.add_argument("--resamples", type=int, help=f"Bootstrap replicates (default {comparisons.DEFAULT_RESAMPLES}).")
        parser.add_argument("--seed", type=int, help="Seed of the bootstrap, for reproducible intervals.")

    def handle(self, *args, runs: list[int], files: list[Path] | None, format_a: str | None, format_b: str | None,
               output: str, alpha: float, threshold: float | None, bootstrap: bool, resamples: int | None,
               seed: int | None, **options) -> None:
        _check_options(runs=runs, files=files, formats=(format_a, format_b), alpha=alpha, threshold=threshold,
                       bootstrap=bootstrap, resamples=resamples, seed=seed)
        options = comparisons.Bootstrap(resamples=resamples or comparisons.DEFAULT_RESAMPLES, seed=seed) \
            if bootstrap else None
        try:
            if files:
                baseline, candidate = _file_series(files, formats=(format_a or series.AUTO, format_b or series.AUTO))
                # Two files stand alone: no run, so no q-value; the p-value decides (spec §7).
                result = comparisons.compare_series(baseline, candidate, alpha=alpha, threshold=threshold,
                                                    bootstrap=options, qvalues=False, method=comparisons.METHOD_FILES)
            else:
                result = _run_comparison(runs, alpha=alpha, threshold=threshold, bootstrap=options)
        except comparisons.NothingToCompare as error:
            raise CommandError(str(error)) from None
        unmatched = {"only_baseline": result.only_baseline, "only_candidate": result.only_candidate,
                     "not_compared": result.not_compared}
        if output == "json":
            self.stdout.write(json.dumps(presentation.json_rows(result.rows), indent=2))
        elif output == "markdown":
            self.stdout.write(presentation.markdown_table(result.rows, **unmatched), ending="")
        else:
            self.stdout.write(presentation.text_table(result.rows, **unmatched), ending="")


def _check_options(*, runs: list[int], files: list[Path] | None, formats: tuple[str | None, str | None],
                   alpha: float, threshold: float | None, bootstrap: bool, resamples: int | None,
                   seed: int | None) -> None:
    if files and runs:
        raise CommandError("give two run ids or --files BASELINE CANDIDATE, not both.")
    if not files and len(runs) != 2:
        raise CommandError(f"give two run ids (baseline, candidate) or --files BASELINE CANDIDATE; got {len(runs)} "
                           f"run id{'' if len(runs) == 1 else 's'}.")
    if not files and any(formats):
        raise CommandError("--format-a and --format-b describe files: they need --files.")
    if not 0.0 < alpha < 1.0:
        raise CommandError(f"--alpha must be strictly between 0 and 1; got {alpha:g}.")
    if threshold is not None and not (math.isfinite(threshold) and threshold >= 0.0):
        raise CommandError(f"--threshold must be a finite number at least 0 (0.02 means ±2%); got {threshold:g}.")
    if not bootstrap and (resamples is not None or seed is not None):
        raise CommandError("--resamples and --seed set up the bootstrap: they need --bootstrap.")
    if resamples is not None and resamples < 100:
        raise CommandError(f"--resamples must be at least 100; got {resamples}.")


def _run_comparison(run_ids: list[int], *, alpha: float, threshold: float | None,
                    bootstrap: comparisons.Bootstrap | None) -> comparisons.RunComparison:
    """Two stored runs, as the compare page compares them (q-values across the series)."""
    try:
        return comparisons.compare_stored_runs(baseline_id=run_ids[0], candidate_id=run_ids[1], alpha=alpha,
                                               threshold=threshold, bootstrap=bootstrap, empty_ok=False)
    except Run.DoesNotExist as error:
        missing = [f"#{run_id}" for run_id in error.missing]
        raise CommandError(f"unknown run id{'s' if len(missing) > 1 else ''}: {', '.join(missing)}.") from None


def _file_series(files: list[Path], *, formats: tuple[str, str]) -> tuple[list[series.Series], list[series.Series]]:
    read = [_read_file(path, format_name=format_name) for path, format_name in zip(files, formats)]
    (baseline_format, baseline), (candidate_format, candidate) = read
    if baseline_format == candidate_format == series.PLAIN:
        return series.pair_plain_files(baseline, candidate)
    return baseline, candidate


def _read_file(path: Path, *, format_name: str) -> tuple[str, list[series.Series]]:
    try:
        content = path.read_bytes()
    except OSError as error:
        raise CommandError(f"cannot read {path}: {error.strerror}.") from None
    try:
        return series.read_series(content, format_name=format_name, name=path.stem)
    except ImportFormatError as error:
        raise CommandError(f"cannot parse {path}: {error}") from None
