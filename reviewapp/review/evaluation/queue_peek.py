"""Whether a task waits in the broker's queue: one look, no message taken.

A pool process asks this each time a task ends, to run a waiting proposal's
first task (which starts its LLM calls) before recording the answers it keeps
for other proposals (``llm_loop``). kombu's own size (``queue_declare``) opens
a connection each time and counts every priority, so answers sent on at low
priority would count as waiting tasks. On Redis this asks only the list that
normal-priority tasks wait in. The embedded broker has no priorities: there
every message in the default queue counts, answers sent on included.
"""

import os
import threading
import time

import redis
from celery import current_app
from django.conf import settings

# After the broker could not be asked, it is not asked again for this long:
# a look must never hold up every task end by a connect timeout.
UNREACHABLE_PAUSE_SECONDS = 5.0
# A look on loopback takes well under a millisecond; one this slow is a broker in trouble.
TIMEOUT_SECONDS = 0.5

_clients: dict[str, redis.Redis] = {}
_unreachable_until: dict[str, float] = {}
_lock = threading.Lock()


def _redis(url: str) -> redis.Redis:
    # One client per process and URL: redis-py's pool reconnects after a fork.
    with _lock:
        client = _clients.get(url)
        if client is None:
            client = _clients[url] = redis.Redis.from_url(
                url, socket_timeout=TIMEOUT_SECONDS, socket_connect_timeout=TIMEOUT_SECONDS
            )
        return client


def task_waiting() -> bool:
    """True if a task waits in the default queue; False if none does, or the broker can't say."""
    queue = current_app.conf.task_default_queue
    url = settings.CELERY_BROKER_URL
    on_redis = url.startswith(("redis://", "rediss://"))
    # Every embedded broker is "filesystem://": its folder tells one from another.
    where = url if on_redis else settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_out"]
    if time.monotonic() < _unreachable_until.get(where, 0.0):
        return False
    try:
        if on_redis:
            # Normal priority (0) is the queue's own name; other steps are
            # lists of their own (kombu.transport.redis, Channel._q_for_pri).
            # kombu writes every key under the broker's global_keyprefix, if one is set.
            prefix = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("global_keyprefix", "")
            return _redis(url).llen(prefix + queue) > 0
        # The embedded broker: one file per message, named "<ms>_<uuid>.<queue>.msg".
        suffix = f".{queue}.msg"
        with os.scandir(where) as entries:
            return any(entry.name.endswith(suffix) for entry in entries)
    except (redis.RedisError, OSError):
        # Not knowing is not waiting: the caller records what it keeps, as
        # with an empty queue (the broker's own clients report the outage).
        _unreachable_until[where] = time.monotonic() + UNREACHABLE_PAUSE_SECONDS
        return False
