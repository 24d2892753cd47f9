"""The Celery app talks to a real worker process through a real Redis broker."""

import time

import pytest
from celery import Celery

pytestmark = pytest.mark.integration


def test_a_real_worker_answers_through_real_redis(redis_url, celery_worker):
    app = Celery("probe", broker=redis_url, backend=redis_url)
    deadline = time.monotonic() + 60
    replies = []
    while not replies and time.monotonic() < deadline:
        replies = app.control.ping(destination=[celery_worker.name], timeout=1.0)

    assert replies and celery_worker.name in replies[0]
