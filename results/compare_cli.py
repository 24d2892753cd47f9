"""The command line of ``manage.py compare``: its options, their checks, and the comparison of two result files.

The Django command (``results/management/commands/compare.py``) adds these options and runs these checks for
both of its forms; two files are read and compared here, through :mod:`results.pairwise_rows`, with nothing that needs
Django or a database. ``manage.py`` runs ``compare --files`` by :func:`main`, before Django starts.
"""

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from . import decisions, pairwise_rows, reports, series
from .ingest import ImportFormatError

HELP = (
    "Compare a candidate with a baseline, series by series: Welch's test, Fieller's ratio interval and the "
    "verdict (optionally the hierarchical bootstrap). Either two stored runs (baseline id, candidate id) or "
    "--files BASELINE CANDIDATE in any importer format, or plain numbers one per line (two such files are "
    "compared with each other). Series are matched by benchmark and metric name."
)


class Refused(ValueError):
    """The command line or a file it names cannot be used; the message says why (the command prints it)."""


class _ForDjango(Exception):
    """A command line the Django-free parser does not take (``--help``, Django's own options, a mistake)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise _ForDjango(message)


def main(argv: Sequence[str]) -> bool:
    """``manage.py compare --files …`` without Django: print the comparison and return True. Return False, having
    printed nothing, for a command line Django's command is to read instead: run ids, ``--help``, Django's own
    options, or anything refused, which Django's command then reports as it always does."""
    parser = _Parser(prog="manage.py compare", add_help=False, allow_abbrev=False)
    add_arguments(parser)
    try:
        arguments = parser.parse_args(argv)
        if not arguments.files:
            return False
        formats = (arguments.format_a, arguments.format_b)
        bootstrap = check_options(runs=arguments.runs, files=arguments.files, formats=formats,
                                  alpha=arguments.alpha, threshold=arguments.threshold,
                                  bootstrap=arguments.bootstrap, resamples=arguments.resamples, seed=arguments.seed)
        comparison = compare_files(arguments.files, formats=formats, alpha=arguments.alpha,
                                   threshold=arguments.threshold, bootstrap=bootstrap)
    except (_ForDjango, Refused, pairwise_rows.NothingToCompare):
        return False
    sys.stdout.write(output(comparison, arguments.output))
    return True


def add_arguments(parser) -> None:
    """The command's options on an ``argparse`` parser (Django's, or a plain one without Django)."""
    parser.add_argument("runs", nargs="*", type=int, metavar="RUN", help="Baseline run id, candidate run id.")
    parser.add_argument("--files", nargs=2, type=Path, metavar=("BASELINE", "CANDIDATE"),
                        help="Compare two result files instead of stored runs; nothing is written.")
    parser.add_argument("--format-a", choices=series.INPUT_FORMATS, help="Format of the baseline file "
                        "(default: told by its keys).")
    parser.add_argument("--format-b", choices=series.INPUT_FORMATS, help="Format of the candidate file.")
    parser.add_argument("--format", choices=reports.OUTPUT_FORMATS, default="text", dest="output",
                        help="Output format.")
    parser.add_argument("--alpha", type=float, default=decisions.ALPHA,
                        help="Significance level: q (two runs) or p (two files) at or above it is flagged.")
    parser.add_argument("--threshold", type=float,
                        help="Practical-significance threshold θ for every series (default: each metric's).")
    parser.add_argument("--bootstrap", action="store_true",
                        help="Also the hierarchical bootstrap ratio interval where both sides kept samples.")
    parser.add_argument("--resamples", type=int, help=f"Bootstrap replicates (default {pairwise_rows.DEFAULT_RESAMPLES}).")
    parser.add_argument("--seed", type=int, help="Seed of the bootstrap, for reproducible intervals.")


def check_options(*, runs: list[int], files: list[Path] | None, formats: tuple[str | None, str | None],
                  alpha: float, threshold: float | None, bootstrap: bool, resamples: int | None,
                  seed: int | None) -> pairwise_rows.Bootstrap | None:
    """The bootstrap's options (None without ``--bootstrap``) once the command line is checked.

    Raises
    ------
    Refused
        If the options contradict each other or a value is out of range.
    """
    if files and runs:
        raise Refused("give two run ids or --files BASELINE CANDIDATE, not both.")
    if not files and len(runs) != 2:
        raise Refused(f"give two run ids (baseline, candidate) or --files BASELINE CANDIDATE; got {len(runs)} "
                      f"run id{'' if len(runs) == 1 else 's'}.")
    if not files and any(formats):
        raise Refused("--format-a and --format-b describe files: they need --files.")
    if not 0.0 < alpha < 1.0:
        raise Refused(f"--alpha must be strictly between 0 and 1; got {alpha:g}.")
    if threshold is not None and not (math.isfinite(threshold) and threshold >= 0.0):
        raise Refused(f"--threshold must be a finite number at least 0 (0.02 means ±2%); got {threshold:g}.")
    if not bootstrap and (resamples is not None or seed is not None):
        raise Refused("--resamples and --seed set up the bootstrap: they need --bootstrap.")
    if resamples is not None and resamples < 100:
        raise Refused(f"--resamples must be at least 100; got {resamples}.")
    return pairwise_rows.Bootstrap(resamples=resamples or pairwise_rows.DEFAULT_RESAMPLES, seed=seed) if bootstrap else None


def compare_files(files: list[Path], *, formats: tuple[str | None, str | None], alpha: float,
                  threshold: float | None, bootstrap: pairwise_rows.Bootstrap | None) -> pairwise_rows.SeriesComparison:
    """Two result files compared (each format told by its keys unless given). Two files stand alone: no run,
    so no q-value; the p-value decides (spec §7).

    Raises
    ------
    Refused
        If a file cannot be read or parsed.
    NothingToCompare
        If the files share no series that can be compared.
    """
    read = [_read_file(path, format_name=format_name or series.AUTO) for path, format_name in zip(files, formats)]
    (baseline_format, baseline), (candidate_format, candidate) = read
    if baseline_format == candidate_format == series.PLAIN:
        baseline, candidate = series.pair_plain_files(baseline, candidate)
    return pairwise_rows.compare_series(baseline, candidate, alpha=alpha, threshold=threshold, bootstrap=bootstrap,
                                    qvalues=False, method=pairwise_rows.METHOD_FILES)


def output(comparison, output_format: str) -> str:
    """What the command prints for a comparison (of two files, or of two runs: ``RunComparison``), in one of
    :data:`results.reports.OUTPUT_FORMATS`."""
    return reports.comparison_output(
        comparison.rows, output_format=output_format, only_baseline=comparison.only_baseline,
        only_candidate=comparison.only_candidate, not_compared=comparison.not_compared)


def _read_file(path: Path, *, format_name: str) -> tuple[str, list[series.Series]]:
    try:
        content = path.read_bytes()
    except OSError as error:
        raise Refused(f"cannot read {path}: {error.strerror}.") from None
    try:
        return series.read_series(content, format_name=format_name, name=path.stem)
    except ImportFormatError as error:
        raise Refused(f"cannot parse {path}: {error}") from None
