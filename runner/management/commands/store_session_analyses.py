"""Store the run-page analysis of the sessions' runs that lack it (sessions finished before it was stored at their
end): the run page replays it on every uncached view and never writes."""

from django.core.management.base import BaseCommand

from results.models import Run
from runner.run_page import store_missing_analyses


class Command(BaseCommand):
    help = ("Replay (EDM on every round) and store the analysis of each session's run that its session did not "
            "store; the run pages then read it instead of replaying it.")

    def handle(self, *args, **options):
        runs = Run.objects.filter(sessions__finished_at__isnull=False).distinct().order_by("pk")
        stored = sum(store_missing_analyses(run) for run in runs.iterator())
        self.stdout.write(f"Stored the analysis of {stored} metric{'s' if stored != 1 else ''}.")
