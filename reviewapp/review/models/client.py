"""An API client: a named token and the scopes it holds."""

import hashlib

from django.conf import settings
from django.db import models


class ApiClient(models.Model):
    class Scope(models.TextChoices):
        SUBMIT = "submit"
        JUDGE = "judge"
        READ = "read"
        # Lifts the visibility rule: see every client's proposals, not just your own.
        READ_ALL = "read:all"
        REVIEW = "review"

    name = models.CharField(max_length=100, unique=True)
    token_prefix = models.CharField(max_length=16, unique=True)
    token_hash = models.CharField(max_length=64, unique=True)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # A personal token: it acts as this person (their reviews, what they may
    # see) and dies with their account.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="api_tokens",
    )

    class Meta:
        ordering = ["name"]
        verbose_name = "API client"

    def __str__(self) -> str:
        return f"{self.name} ({self.token_prefix}…)"

    @staticmethod
    def hash_token(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()
