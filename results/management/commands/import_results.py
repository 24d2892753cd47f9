from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from pydantic import ValidationError

from results import services
from results.ingest import FORMATS, FormatMismatch, ImportFormatError, import_document, stated_overrides
from results.models import RunKind
from results.schemas import RunIn, describe_errors


class Command(BaseCommand):
    help = "Import a results file (native, pyperf, pytest-benchmark, google-benchmark, hyperfine) as one run."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
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
        try:
            content = file.read_bytes()
        except OSError as error:
            raise CommandError(f"cannot read {file}: {error.strerror}") from None
        overrides = stated_overrides(project=project, machine=machine, commit=commit, branch=branch,
                                     pull_request=pull_request, base_commit=base_commit, kind=kind, run_key=run_key)
        try:
            raw = import_document(format_name=format, content=content, overrides=overrides)
            document = RunIn.model_validate(raw)
            outcome = services.ingest_run(document=document, user=None)
        except FormatMismatch as error:
            raise CommandError(f"{error}; import it with --format {error.detected}") from None
        except ImportFormatError as error:
            raise CommandError(str(error)) from None
        except ValidationError as error:
            raise CommandError(f"invalid run: {describe_errors(error.errors())['detail']}") from None
        except services.IngestError as error:
            raise CommandError(str(error)) from None
        verb = "Imported" if outcome.created else "Already imported"
        self.stdout.write(f"{verb} run #{outcome.run.pk} with {outcome.run.results.count()} results.")
