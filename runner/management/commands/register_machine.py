import socket

from django.core.management.base import BaseCommand

from results import services
from runner.monitor import describe_host


class Command(BaseCommand):
    help = "Record this machine (hardware captured with psutil/platform) and the Celery queue its benchmarks use."

    def add_arguments(self, parser):
        parser.add_argument("--name", default=socket.gethostname(), help="Machine name (default: the hostname).")
        parser.add_argument("--queue", default="", help="Celery queue (default: bench.<name>).")
        parser.add_argument("--print-queue", action="store_true", help="Print only the queue name.")

    def handle(self, *args, name: str, queue: str, print_queue: bool, **options):
        machine = services.register_machine(name=name, description=describe_host(), queue=queue)
        if print_queue:
            self.stdout.write(machine.queue)
        else:
            self.stdout.write(f"Machine {machine.name!r}: {machine.cpu_model}, {machine.cores} cores; "
                              f"queue {machine.queue}")
