from django.core.management.base import BaseCommand, CommandError, CommandParser

from results import compare_cli, comparisons, pairwise_rows
from results.models import Run


class Command(BaseCommand):
    help = compare_cli.HELP

    def add_arguments(self, parser: CommandParser) -> None:
        compare_cli.add_arguments(parser)

    def handle(self, *args, runs: list[int], files: list | None, format_a: str | None, format_b: str | None,
               output: str, alpha: float, threshold: float | None, bootstrap: bool, resamples: int | None,
               seed: int | None, **options) -> None:
        try:
            resampling = compare_cli.check_options(
                runs=runs, files=files, formats=(format_a, format_b), alpha=alpha, threshold=threshold,
                bootstrap=bootstrap, resamples=resamples, seed=seed)
            if files:
                result = compare_cli.compare_files(files, formats=(format_a, format_b), alpha=alpha,
                                                   threshold=threshold, bootstrap=resampling)
            else:
                result = _run_comparison(runs, alpha=alpha, threshold=threshold, bootstrap=resampling)
        except (compare_cli.Refused, pairwise_rows.NothingToCompare) as error:
            raise CommandError(str(error)) from None
        self.stdout.write(compare_cli.output(result, output), ending="")


def _run_comparison(run_ids: list[int], *, alpha: float, threshold: float | None,
                    bootstrap: pairwise_rows.Bootstrap | None) -> comparisons.RunComparison:
    """Two stored runs, as the compare page compares them (q-values across the series)."""
    try:
        return comparisons.compare_stored_runs(baseline_id=run_ids[0], candidate_id=run_ids[1], alpha=alpha,
                                               threshold=threshold, bootstrap=bootstrap, empty_ok=False)
    except Run.DoesNotExist as error:
        missing = [f"#{run_id}" for run_id in error.missing]
        raise CommandError(f"unknown run id{'s' if len(missing) > 1 else ''}: {', '.join(missing)}.") from None
