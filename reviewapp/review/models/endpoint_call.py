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
