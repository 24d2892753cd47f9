"""The demo the run command loads: a month of nightlies with one regression, demo jobs, an admin login."""

from io import StringIO

import pytest
from django.core.management import call_command

from results import comparisons
from results.models import Comparison, Run
from runner.models import Job, Session

pytestmark = pytest.mark.django_db


def test_the_demo_loads_once_and_its_regression_is_found(settings, tmp_path, django_capture_on_commit_callbacks):
    settings.VAR_DIR = tmp_path
    first, second = StringIO(), StringIO()
    with django_capture_on_commit_callbacks(execute=False):
        call_command("seed_demo", "--machine", "demo-host", stdout=first)
        call_command("seed_demo", "--machine", "demo-host", stdout=second)

    # The password is printed once, when the account is created, never on later starts.
    password = (tmp_path / "admin-login.txt").read_text().split()[1]
    assert f"Admin login created: admin / {password}" in first.getvalue()
    assert password not in second.getvalue() and "Admin login: admin (password see var/" in second.getvalue()
    assert (tmp_path / "admin-login.txt").stat().st_mode & 0o777 == 0o600
    assert Run.objects.filter(kind="nightly").count() == 30
    assert Job.objects.count() == 3 and Session.objects.count() == 3
    latest = Run.objects.order_by("-started_at").first()
    comparisons.compare_run(run_id=latest.pk)
    regressed = Comparison.objects.get(candidate__run=latest, method="history",
                                       candidate__metric__benchmark__name="json encode+decode 10k records")
    assert regressed.verdict == "regression"
    others = Comparison.objects.filter(candidate__run=latest, method="history").exclude(pk=regressed.pk)
    assert "regression" not in {comparison.verdict for comparison in others}
