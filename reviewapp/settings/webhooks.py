"""Webhooks: their signing secret, the addresses they may reach, timeouts and retries."""

import ipaddress

from django.core.exceptions import ImproperlyConfigured

from reviewapp.settings.broker import CELERY_BEAT_SCHEDULE
from reviewapp.settings.environment import DEBUG, env, read
from reviewapp.settings.review import REVIEWAPP_SWEEP_EVERY_SECONDS
from reviewapp.settings.web import SECRET_KEY

# The secrets that sign webhooks are derived from this key (see
# reviewapp/webhooks/models.py); changing it changes every endpoint's secret.
REVIEWAPP_WEBHOOK_SECRET_KEY = read(env.str, "REVIEWAPP_WEBHOOK_SECRET_KEY", default=SECRET_KEY)
# http:// URLs and loopback addresses: for the one-command run and the tests only.
REVIEWAPP_WEBHOOK_ALLOW_LOCAL = read(env.bool, "REVIEWAPP_WEBHOOK_ALLOW_LOCAL", default=DEBUG)
# Private ranges an operator allows webhooks to reach, e.g. "10.20.0.0/16,fd00:1::/64".
REVIEWAPP_WEBHOOK_ALLOWED_NETWORKS = read(
    env.list, "REVIEWAPP_WEBHOOK_ALLOWED_NETWORKS", default=[]
)
for _network in REVIEWAPP_WEBHOOK_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError as _exc:
        raise ImproperlyConfigured(f"REVIEWAPP_WEBHOOK_ALLOWED_NETWORKS: {_exc}") from _exc
REVIEWAPP_WEBHOOK_CONNECT_TIMEOUT_SECONDS = read(
    env.float, "REVIEWAPP_WEBHOOK_CONNECT_TIMEOUT_SECONDS", default=3.0
)
REVIEWAPP_WEBHOOK_READ_TIMEOUT_SECONDS = read(
    env.float, "REVIEWAPP_WEBHOOK_READ_TIMEOUT_SECONDS", default=10.0
)
# Seconds before each retry (±20 % jitter): about 26 hours in all, then the delivery fails.
REVIEWAPP_WEBHOOK_RETRY_DELAYS = [
    float(d)
    for d in read(
        env.list,
        "REVIEWAPP_WEBHOOK_RETRY_DELAYS",
        default=["5", "30", "120", "600", "1800", "3600", "7200", "14400", "28800", "36000"],
    )
]
REVIEWAPP_WEBHOOK_DISABLE_AFTER_FAILURES = read(
    env.int, "REVIEWAPP_WEBHOOK_DISABLE_AFTER_FAILURES", default=50
)
# How long a sender holds a delivery; past it a sender that died is presumed dead.
REVIEWAPP_WEBHOOK_LEASE_SECONDS = read(env.float, "REVIEWAPP_WEBHOOK_LEASE_SECONDS", default=60.0)
if REVIEWAPP_WEBHOOK_LEASE_SECONDS <= (
    REVIEWAPP_WEBHOOK_CONNECT_TIMEOUT_SECONDS + REVIEWAPP_WEBHOOK_READ_TIMEOUT_SECONDS
):
    raise ImproperlyConfigured(
        "REVIEWAPP_WEBHOOK_LEASE_SECONDS must exceed the connect plus read timeouts."
    )
REVIEWAPP_WEBHOOK_SWEEP_EVERY_SECONDS = read(
    env.float, "REVIEWAPP_WEBHOOK_SWEEP_EVERY_SECONDS", default=15.0
)
# Replays whose worker stopped mid-run are picked up again (reviewapp/replay/tasks.py).
CELERY_BEAT_SCHEDULE["replay-sweep"] = {
    "task": "reviewapp.replay.tasks.sweep_replays",
    "schedule": REVIEWAPP_SWEEP_EVERY_SECONDS,
}
CELERY_BEAT_SCHEDULE["webhook-sweep"] = {
    "task": "reviewapp.webhooks.tasks.sweep_webhook_deliveries",
    "schedule": REVIEWAPP_WEBHOOK_SWEEP_EVERY_SECONDS,
}
