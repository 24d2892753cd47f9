import logging
from contextlib import nullcontext
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from pydantic import ValidationError

from results import access, queue, reports, selectors, services
from results.ingest import FORMATS, FormatMismatch, ImportFormatError, asv, import_document, stated_overrides
from results.models import ComparisonMethod, FailedResult, Run, RunKind
from results.rows import ComparisonRow
from results.stored_rows import stored_rows
from results.schemas import RunIn, describe_errors


class Command(BaseCommand):
    help = ("Import a results file (native, pyperf, pytest-benchmark, google-benchmark, hyperfine, asv) as one run, "
            "or an asv results directory (--format asv DIR) as one run per results file, in commit date order.")

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="A results file, or with --format asv asv's results directory.")
        parser.add_argument("--format", required=True, choices=sorted(FORMATS))
        parser.add_argument("--project", help="Project name (required unless the native file names it).")
        parser.add_argument("--machine", help="Machine name (required unless the native file names it).")
        parser.add_argument("--commit")
        parser.add_argument("--branch", default="")
        parser.add_argument("--pull-request", type=int, help="With --commit, for a --kind pr run.")
        parser.add_argument("--base-commit", default="", help="With --commit: the commit a pull request is based on.")
        parser.add_argument("--kind", choices=RunKind.values)
        parser.add_argument("--run-key", help="Names the run; without one, importing the same file for the same "
                                              "project, machine, revision and kind again finds the stored run.")
        parser.add_argument("--compare", action="store_true",
                            help="Compare the run at once, in this process, as the analysis worker would, and print "
                                 "its verdicts as manage.py compare prints a comparison (alone on stdout; the "
                                 "import's line goes to stderr).")
        parser.add_argument("--compare-format", choices=reports.OUTPUT_FORMATS, default="text",
                            help="With --compare: the format of the verdicts (--format is the file's).")

    def handle(self, *args, file: Path, format: str, project, machine, commit, branch, pull_request, base_commit,
               kind, run_key, compare, compare_format, **options):
        # The tasks run here with --compare: Celery's own lines ("Task … succeeded in …") are not the command's.
        logging.getLogger("celery").setLevel(logging.WARNING)
        overrides = stated_overrides(project=project, machine=machine, commit=commit, branch=branch,
                                     pull_request=pull_request, base_commit=base_commit, kind=kind, run_key=run_key)
        if compare and file.is_dir():
            raise CommandError("--compare shows the comparison of one run: give it a results file, not a directory.")
        if file.is_dir():
            self._import_asv_directory(file, format=format, overrides=overrides)
            return
        try:
            content = file.read_bytes()
        except OSError as error:
            raise CommandError(f"cannot read {file}: {error.strerror}") from None
        try:
            parse_options = {"benchmarks": asv.benchmarks_beside(file)} if format == "asv" else None
            raw = import_document(format_name=format, content=content, overrides=overrides,
                                  parse_options=parse_options)
            document = RunIn.model_validate(raw)
            # With --compare the comparison runs here, once the run is committed, and is not sent to a worker.
            with queue.analysis_in_process() if compare else nullcontext():
                outcome = services.ingest_run(document=document, user=None)
        except (ImportFormatError, ValidationError, services.IngestError) as error:
            raise _refusal(error) from None
        verb = "Imported" if outcome.created else "Already imported"
        count = outcome.run.results.count()
        line = f"{verb} run #{outcome.run.pk} with {count} result{'s' if count != 1 else ''}"
        failed = [f"{failure.metric.benchmark.name} ({failure.metric.name})"
                  + (f": {failure.error.strip().splitlines()[-1][:200]}" if failure.error.strip() else "")
                  for failure in FailedResult.objects.filter(run=outcome.run).select_related("metric__benchmark")]
        line += f"; {len(failed)} failed: {'; '.join(failed)}." if failed else "."
        if not compare:
            self.stdout.write(line)
            return
        self.stderr.write(line, style_func=self.style.SUCCESS)
        _compare_if_not_compared(outcome.run)
        self.stdout.write(reports.comparison_output(_verdict_rows(outcome.run), output_format=compare_format),
                          ending="")

    def _import_asv_directory(self, directory: Path, *, format: str, overrides: dict) -> None:
        """Every results file of every machine, each machine's in commit date order, each file one run. All
        files are checked before any is stored; a file imported before is found by its content key."""
        if format != "asv":
            raise CommandError(f"{directory} is a directory: only --format asv imports a directory "
                               "(asv's results directory).")
        if overrides["run_key"] or (overrides["revision"] or {}).get("commit"):
            raise CommandError("an asv results directory holds many commits, each file naming its own: "
                               "give no --commit or --run-key with a directory.")
        try:
            found = asv.read_directory(directory)
        except OSError as error:
            raise CommandError(f"cannot read {error.filename}: {error.strerror}") from None
        except ImportFormatError as error:
            raise CommandError(str(error)) from None
        documents = {}
        for machine, files in found.machines.items():
            documents[machine] = []
            for file in files:
                try:
                    raw = import_document(format_name=format, content=file.content, overrides=overrides,
                                          parse_options={"benchmarks": found.benchmarks})
                    documents[machine].append((file, RunIn.model_validate(raw)))
                except (ImportFormatError, ValidationError) as error:
                    raise _refusal(error, file.path.relative_to(directory)) from None
        for machine, runs in documents.items():
            stored = already = failed = 0
            for file, document in runs:
                try:
                    outcome = services.ingest_run(document=document, user=None)
                except services.IngestError as error:
                    raise _refusal(error, file.path.relative_to(directory)) from None
                if outcome.created:
                    stored += 1
                    failed += sum(result.failed for result in document.results)
                else:
                    already += 1
            self.stdout.write(f"{machine}: {stored} runs stored, {already} already there, "
                              f"{failed} failed results in the runs stored.")


def _compare_if_not_compared(run: Run) -> None:
    """Compare here a run that is not compared yet: one imported before whose comparison was lost with the
    broker (a run imported now was compared when it was committed)."""
    run.refresh_from_db(fields=["compared_at"])
    if run.compared_at is None:
        with queue.analysis_in_process():
            queue.enqueue(queue.COMPARE_RUN, run.pk)
        run.refresh_from_db(fields=["compared_at"])
    if run.compared_at is None:
        raise CommandError(f"run #{run.pk} is stored, but comparing it failed: see the error above.")


def _verdict_rows(run: Run) -> list[ComparisonRow]:
    """The run's verdicts, worst first, as its pages show them: a pull request against its base run, any other
    run against the last nights of its series."""
    if run.kind == RunKind.PR:
        rows = selectors.pr_review(run_id=run.pk, viewer=access.SYSTEM).rows
    else:
        found = selectors.run_comparisons(run_id=run.pk, viewer=access.SYSTEM, method=ComparisonMethod.HISTORY)
        rows = stored_rows([(comparison.candidate, comparison) for comparison in found])
    return sorted(rows, key=lambda row: row.sort_key)


def _refusal(error: Exception, file: Path | None = None) -> CommandError:
    """The command's refusal of a file (named when it is one of a directory's) for ``error``."""
    if isinstance(error, FormatMismatch):
        message = error.telling(f"import it with --format {error.detected}")
    elif isinstance(error, ValidationError):
        message = f"invalid run: {describe_errors(error.errors())['detail']}"
    else:
        message = str(error)
    return CommandError(f"{file}: {message}" if file is not None else message)
