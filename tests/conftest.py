import pytest
from django.test import Client

from results import services
from tests.factories import UserFactory
from tests.processes import real_redis, worker_process


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


@pytest.fixture(scope="session")
def redis_url():
    """A real Redis server on a free loopback port for the whole test session."""
    with real_redis() as url:
        yield url


@pytest.fixture
def celery_worker(redis_url, tmp_path):
    """A real Celery worker process consuming the analysis queue through the real Redis."""
    with worker_process(redis_url=redis_url, queues=["analysis"], log=tmp_path / "worker.log") as worker:
        yield worker
