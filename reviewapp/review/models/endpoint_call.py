"""The embedded default's record of LLM calls per endpoint, for the endpoint limits."""

from django.db import models


class EndpointCall(models.Model):
    """An LLM call in flight at an endpoint, or started there within the last minute.

    The embedded default's shared state for per-endpoint limits; with Redis
    the same state lives in Redis instead (reviewapp/review/evaluation/endpoint_limits.py).
    Times are epoch seconds: the limiter compares them and nothing displays them.
    """

    endpoint = models.CharField(max_length=64)  # sha256 of the base URL
    token = models.CharField(max_length=32, unique=True)
    started = models.FloatField()
    # While in flight, when the slot is reclaimed if never released (a killed
    # worker); once released, the release time.
    ends = models.FloatField()

    class Meta:
        indexes = [models.Index(fields=["endpoint", "started"])]

    def __str__(self) -> str:
        return f"{self.endpoint[:8]} {self.token}"


class EndpointControl(models.Model):
    """An LLM endpoint's effective concurrency limit, as ``core.endpoint_control`` keeps it.

    The embedded default's shared state, beside ``EndpointCall``; with Redis
    it lives in Redis instead (reviewapp/review/evaluation/endpoint_limits.py).
    Times are epoch seconds.
    """

    endpoint = models.CharField(max_length=64, unique=True)  # sha256 of the base URL
    base_url = models.CharField(max_length=200, blank=True)
    limit = models.FloatField()
    hold_until = models.FloatField(default=0.0)
    cut_at = models.FloatField(default=0.0)
    round_in_flight = models.PositiveIntegerField(default=0)
    ceiling = models.FloatField(default=0.0)
    served_peak = models.PositiveIntegerField(default=0)
    # Answers 429 by minute (epoch minute -> count), the last few minutes only.
    refusals = models.JSONField(default=dict)
    # Calls waiting for a slot, by worker process: [count, when reported].
    waiting = models.JSONField(default=dict)

    def __str__(self) -> str:
        return self.base_url or self.endpoint[:8]
