import secrets
import socket
from datetime import timedelta
from pathlib import Path

import numpy as np
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.utils import timezone

from results import services
from results.models import Machine, Project
from results.schemas import RunIn
from runner import services as runner_services
from runner.models import Job

# name, metric, unit, direction, typical mean, relative sd per level (night, execution, iteration)
DEMO_BENCHMARKS = [
    ("sort 1M integers", "time", "s", "lower_is_better", 0.120, (0.006, 0.010, 0.020)),
    ("sha256 64 MB", "throughput", "MB/s", "higher_is_better", 850.0, (0.004, 0.008, 0.015)),
    ("json encode+decode 10k records", "time", "s", "lower_is_better", 0.045, (0.008, 0.012, 0.030)),
    ("write+fsync 16 MB", "time", "s", "lower_is_better", 0.060, (0.020, 0.030, 0.060)),
]
REGRESSED = "json encode+decode 10k records"
# job name, built-in workload, benchmark, largest work amount
DEMO_JOBS = [
    ("sort (built-in)", "sort", "sort (built-in workload)", 1000),
    ("sha256 (built-in)", "sha256", "sha256 (built-in workload)", 512),
    ("json (built-in)", "json", "json (built-in workload)", 4000),
]
REGRESSION_SIZE = 0.06  # in the latest night, so the overview opens on a genuine regression


class Command(BaseCommand):
    help = "Create the demo project (a month of nightly runs, one genuine regression) and an admin login."

    def add_arguments(self, parser):
        parser.add_argument("--nights", type=int, default=30)
        parser.add_argument("--machine", default=socket.gethostname())

    def handle(self, *args, nights: int, machine: str, **options):
        self.stdout.write(self.admin_login())
        user = get_user_model().objects.get(username="admin")
        rng = np.random.default_rng(20261121)
        today = timezone.now().replace(hour=2, minute=0, second=0, microsecond=0)
        created = 0
        for night in range(nights):
            started = today - timedelta(days=nights - 1 - night)
            document = RunIn.model_validate({
                "run_key": f"demo-nightly-{started:%Y-%m-%d}",
                "project": {"name": "Demo", "slug": "demo", "default_branch": "main"},
                "machine": {"name": machine},
                "revision": {"commit": f"{rng.integers(2**63):016x}{night:04x}"[:40], "branch": "main",
                             "author": "demo", "message": f"Nightly build {night + 1}", "timestamp": started},
                "kind": "nightly",
                "started_at": started,
                "finished_at": started + timedelta(minutes=20),
                "source": "pilotweb demo data",
                "results": [self.result(rng, spec, regressed=night == nights - 1) for spec in DEMO_BENCHMARKS],
            })
            created += services.ingest_run(document=document, user=user).created
        self.stdout.write(f"Demo project: {created} new nightly runs ({nights} in all).")
        self.stdout.write(self.demo_jobs(user, machine))

    @staticmethod
    def result(rng: np.random.Generator, spec: tuple, *, regressed: bool) -> dict:
        name, metric, unit, direction, mean, (sd_night, sd_execution, sd_iteration) = spec
        if name == REGRESSED and regressed:
            mean *= 1 + REGRESSION_SIZE
        night_mean = mean * (1 + rng.normal(0, sd_night))
        executions = night_mean * (1 + rng.normal(0, sd_execution, size=(5, 1)))
        samples = executions * (1 + rng.normal(0, sd_iteration, size=(5, 20)))
        return {"benchmark": name, "metric": metric, "unit": unit, "direction": direction,
                "samples": samples.round(9).tolist()}

    @staticmethod
    def demo_jobs(user, machine_name: str) -> str:
        """Built-in workloads scheduled nightly on this machine; the first start also runs each once now."""
        project = Project.objects.get(slug="demo")
        machine = Machine.objects.get(name=machine_name)
        started = []
        for name, builtin, benchmark, work_max in DEMO_JOBS:
            job = Job.objects.filter(project=project, name=name).first()
            if job is None:
                job = runner_services.create_job(
                    user=user, cron="0 2 * * *", project=project, name=name, benchmark=benchmark, machine=machine,
                    workload_kind="builtin", builtin=builtin, work_min=1, work_max=work_max, target_width=0.05,
                    budget_seconds=90, overhead_rounds=4 if builtin == "sort" else 0,
                )
            if not job.sessions.exists():
                runner_services.start_session(job=job, user=user)
                started.append(name)
        return f"Demo jobs: {len(DEMO_JOBS)} scheduled nightly" + (f", running now: {', '.join(started)}."
                                                                    if started else ".")

    @staticmethod
    def admin_login() -> str:
        """The admin's password is printed once, when the account is created (kept in var/, mode 600)."""
        saved = Path(settings.VAR_DIR) / "admin-login.txt"
        users = get_user_model().objects
        if not users.filter(username="admin").exists():
            password = secrets.token_urlsafe(12)
            users.create_superuser("admin", "admin@localhost", password)
            saved.parent.mkdir(parents=True, exist_ok=True)
            saved.write_text(f"admin {password}\n")
            saved.chmod(0o600)
            return (f"Admin login created: admin / {password} (shown this once; also kept in var/{saved.name}, "
                    "readable only by you)")
        where = f"see var/{saved.name}" if saved.exists() else "set earlier"
        return f"Admin login: admin (password {where}; change it with 'python manage.py changepassword admin')"
