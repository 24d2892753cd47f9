import os

import pytest
from django.test import Client

from results import services
from tests.factories import UserFactory
from tests.processes import real_redis, worker_process


@pytest.fixture(autouse=True)
def empty_cache():
    """Every test starts with an empty cache: ids are reused once a test's rows are rolled back."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def user(db):
    return UserFactory()


@pytest.fixture
def staff(db):
    return UserFactory(is_staff=True)


@pytest.fixture
def token(user):
    _, token = services.create_api_token(user=user, name="tests")
    return token


@pytest.fixture
def api(token):
    """A client that sends a valid API token."""
    return Client(headers={"Authorization": f"Bearer {token}"})


_REDIS = {}


def pytest_configure(config):
    """One real Redis for the whole session, set as the broker before Celery first reads its
    configuration (it does so lazily), so every task any test sends goes there, never elsewhere."""
    from django.conf import settings

    context = real_redis()
    server = context.__enter__()
    url = server.url
    _REDIS.update(context=context, url=url, server=server)
    os.environ["REDIS_URL"] = url
    settings.CELERY_BROKER_URL = settings.CELERY_RESULT_BACKEND = settings.REDIS_URL = url


def pytest_unconfigure(config):
    if "context" in _REDIS:
        _REDIS.pop("context").__exit__(None, None, None)


@pytest.fixture(scope="session")
def redis_server():
    """The session's real Redis server, to stop and start in a test (it comes back empty)."""
    return _REDIS["server"]


@pytest.fixture(scope="session")
def redis_url():
    """The session's real Redis server (see pytest_configure)."""
    return _REDIS["url"]


@pytest.fixture
def celery_worker(redis_url, tmp_path):
    """A real Celery worker process consuming the analysis queue through the real Redis."""
    with worker_process(redis_url=redis_url, queues=["analysis"], log=tmp_path / "worker.log") as worker:
        yield worker
