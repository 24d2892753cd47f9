import pytest
import redis


@pytest.fixture
def broker(redis_url):
    """The session's Redis, emptied of messages earlier tests left in it."""
    client = redis.Redis.from_url(redis_url)
    client.flushall()
    client.close()
    return redis_url
