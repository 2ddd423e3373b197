"""Stored model answers the `recorded` lens backend replays."""

from django.db import models

from .lens import Lens


class RecordedResponse(models.Model):
    """Stored model answers the `recorded` backend replays, in order."""

    lens = models.ForeignKey(Lens, on_delete=models.CASCADE, related_name="recorded_responses")
    content_sha256 = models.CharField(max_length=64)
    responses = models.JSONField(default=list)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["lens", "content_sha256"], name="recorded_once"),
        ]

    def __str__(self) -> str:
        return f"{self.lens_id} @ {self.content_sha256[:12]}"
