"""Fixtures of the apps' tests: a real Redis as Celery's broker, an empty cache, users and API clients.

The numerical core's tests (tests/stats) use none of them: they run without Django and without Redis
(``./pilot test`` runs them first with ``-p no:django``), so nothing here imports Django at module level.
"""

import os
from pathlib import Path

import pytest

from tests.processes import real_redis, worker_process

STATS_TESTS = Path(__file__).resolve().parent / "stats"
DATABASE_FIXTURES = frozenset({"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback",
                               "live_server", "admin_user", "admin_client", "django_user_model"})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """A test that touches no database is the same on every one: it is marked ``any_database`` (before ``-m``
    selects), so the PostgreSQL pass does not run it again."""
    for item in items:
        if item.get_closest_marker("django_db") is None and not DATABASE_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.any_database)


@pytest.fixture(autouse=True)
def app_environment(request):
    """Every test of the apps sends its tasks to the session's real Redis and starts with an empty cache (ids
    are reused once a test's rows are rolled back); the numerical core's tests get neither."""
    if request.path.is_relative_to(STATS_TESTS):
        yield
        return
    request.getfixturevalue("redis_url")
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture(autouse=True)
def fast_passwords(request):
    """Users made by the tests hash their passwords with a fast hasher (PBKDF2's 0.3 s each added up to minutes);
    logging in works as with the real one."""
    if request.path.is_relative_to(STATS_TESTS):
        yield
        return
    settings = request.getfixturevalue("settings")
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    yield


@pytest.fixture
def user(db):
    from tests.factories import UserFactory

    return UserFactory()


@pytest.fixture
def staff(db):
    from tests.factories import UserFactory

    return UserFactory(is_staff=True)


@pytest.fixture
def maintainer(db):
    """A user who maintains the project "Demo" (slug ``demo``), where the tests' posted runs go: they may triage
    its alerts. The project is made here if no test made it first."""
    from results.models import Membership, Project, Role
    from tests.factories import UserFactory

    project, _ = Project.objects.get_or_create(slug="demo", defaults={"name": "Demo"})
    user = UserFactory()
    Membership.objects.create(project=project, user=user, role=Role.MAINTAINER)
    return user


@pytest.fixture
def uploader_token(db):
    """The token of a user who uploads to the project "Demo" (slug ``demo``), where the tests' posted runs go (the
    project is made here if no test made it first): a CI job's."""
    from results import services
    from results.models import Membership, Project, Role
    from tests.factories import UserFactory

    project, _ = Project.objects.get_or_create(slug="demo", defaults={"name": "Demo"})
    user = UserFactory()
    Membership.objects.create(project=project, user=user, role=Role.UPLOADER)
    return services.create_api_token(user=user, name="ci")[1]


@pytest.fixture
def uploader_api(uploader_token):
    """A client with :func:`uploader_token`."""
    from django.test import Client

    return Client(headers={"Authorization": f"Bearer {uploader_token}"})


@pytest.fixture
def token(user):
    from results import services

    _, token = services.create_api_token(user=user, name="tests")
    return token


@pytest.fixture
def api(token):
    """A client that sends a valid API token."""
    from django.test import Client

    return Client(headers={"Authorization": f"Bearer {token}"})


@pytest.fixture
def served_api(token):
    """A client with a valid API token, as a real server sees one: an exception is answered (a 500), never raised
    into the test."""
    from django.test import Client

    return Client(raise_request_exception=False, headers={"Authorization": f"Bearer {token}"})


@pytest.fixture(scope="session")
def redis_server():
    """One real Redis for the whole session, started by the first test that needs it and set as Celery's broker
    before any task is sent, so every task a test sends goes there, never elsewhere. A test may stop and start it
    (it comes back empty)."""
    from django.conf import settings

    from pilotweb.celery import app

    with real_redis() as server:
        os.environ["REDIS_URL"] = server.url
        settings.CELERY_BROKER_URL = settings.CELERY_RESULT_BACKEND = settings.REDIS_URL = server.url
        app.conf.update(broker_url=server.url, result_backend=server.url)
        yield server


@pytest.fixture(scope="session")
def redis_url(redis_server):
    return redis_server.url


@pytest.fixture
def celery_worker(redis_url, tmp_path):
    """A real Celery worker process consuming the analysis queue through the real Redis."""
    with worker_process(redis_url=redis_url, queues=["analysis"], log=tmp_path / "worker.log") as worker:
        yield worker
