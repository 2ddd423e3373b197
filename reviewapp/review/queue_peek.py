"""Whether a task waits in the broker's queue at normal priority: one look, no message taken.

A pool process asks this each time a task ends, to run a waiting proposal's
first task (which starts its LLM calls) before recording the answers it keeps
for other proposals (``llm_loop``). kombu's own size (``queue_declare``) opens
a connection each time and counts every priority, so answers sent on at low
priority would count as waiting tasks; this asks only the Redis list, or the
embedded broker's folder, that normal-priority tasks wait in.
"""

import os
import threading

import redis
from celery import current_app
from django.conf import settings

# Redis gives each priority step its own list; normal priority (0) is the
# queue's own name (kombu.transport.redis, Channel._q_for_pri).
_clients: dict[str, redis.Redis] = {}
_clients_lock = threading.Lock()


def _redis(url: str) -> redis.Redis:
    # One client per process and URL: redis-py's pool reconnects after a fork.
    with _clients_lock:
        client = _clients.get(url)
        if client is None:
            client = _clients[url] = redis.Redis.from_url(url, socket_timeout=1)
        return client


def task_waiting() -> bool:
    """True if a normal-priority task waits in the default queue (False if the broker can't say)."""
    queue = current_app.conf.task_default_queue
    url = settings.CELERY_BROKER_URL
    try:
        if url.startswith(("redis://", "rediss://")):
            return _redis(url).llen(queue) > 0
        # The embedded broker: one file per message, named "<ms>_<uuid>.<queue>.msg".
        suffix = f".{queue}.msg"
        with os.scandir(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_out"]) as entries:
            return any(entry.name.endswith(suffix) for entry in entries)
    except (redis.RedisError, OSError):
        # Not knowing is not waiting: the caller then records what it keeps,
        # as it would with an empty queue.
        return False
