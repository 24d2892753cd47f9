from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from pydantic import ValidationError

from results import services
from results.ingest import FORMATS, FormatMismatch, ImportFormatError, asv, import_document, stated_overrides
from results.models import RunKind
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

    def handle(self, *args, file: Path, format: str, project, machine, commit, branch, pull_request, base_commit,
               kind, run_key, **options):
        overrides = stated_overrides(project=project, machine=machine, commit=commit, branch=branch,
                                     pull_request=pull_request, base_commit=base_commit, kind=kind, run_key=run_key)
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
            outcome = services.ingest_run(document=document, user=None)
        except (ImportFormatError, ValidationError, services.IngestError) as error:
            raise _refusal(error) from None
        verb = "Imported" if outcome.created else "Already imported"
        self.stdout.write(f"{verb} run #{outcome.run.pk} with {outcome.run.results.count()} results.")

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


def _refusal(error: Exception, file: Path | None = None) -> CommandError:
    """The command's refusal of a file (named when it is one of a directory's) for ``error``."""
    if isinstance(error, FormatMismatch):
        message = f"{error}; import it with --format {error.detected}"
    elif isinstance(error, ValidationError):
        message = f"invalid run: {describe_errors(error.errors())['detail']}"
    else:
        message = str(error)
    return CommandError(f"{file}: {message}" if file is not None else message)
