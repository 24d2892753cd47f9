"""Handing sessions to the broker, and finding which of them the broker still holds.

A session's message carries a task id derived from the session and its attempt, so recovery can tell
whether the broker still holds it (waiting in the machine's queue, or delivered and not yet acknowledged)
or lost it (a Redis restarted without persistence). Sending a session twice is harmless: a worker runs a
delivery only if it can claim the session for that attempt (:func:`runner.execution.execute_session`).
"""

import json
import logging

import redis
from celery import current_app
from kombu.exceptions import OperationalError

from results.queue import enqueue

logger = logging.getLogger(__name__)

RUN_SESSION = "runner.tasks.run_session"
"""The bench worker's task, sent by name (runner.tasks imports this module's callers, not the other way)."""


def task_id(session_id: int, attempt: int) -> str:
    return f"session-{session_id}-attempt-{attempt}"


def send(*, session_id: int, attempt: int, queue: str) -> bool:
    """Publish the session's message on its machine's queue; False when the broker is unreachable."""
    return enqueue(RUN_SESSION, session_id, attempt, queue=queue, task_id=task_id(session_id, attempt))


def held_task_ids(queues: set[str]) -> set[str] | None:
    """Ids of the tasks the broker holds for ``queues``, waiting or delivered but unacknowledged;
    None when it cannot be asked (unreachable, or not Redis)."""
    try:
        with current_app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1)
            if connection.transport.driver_type != "redis":
                return None
            channel = connection.default_channel
            client = channel.client
            # kombu's Redis transport keeps a list per queue and priority step, and a hash of deliveries
            # a worker has not acknowledged yet (each value: [message, exchange, routing key]).
            waiting = [raw for queue in queues for step in channel.priority_steps
                       for raw in client.lrange(channel._q_for_pri(queue, step), 0, -1)]
            delivered = [json.loads(raw)[0] for raw in client.hvals(channel.unacked_key)]
    except (OperationalError, redis.RedisError, OSError) as error:
        logger.warning("Cannot ask the broker which sessions it holds: %s", error)
        return None
    messages = [json.loads(raw) for raw in waiting] + delivered
    return {message.get("headers", {}).get("id") for message in messages} - {None}
