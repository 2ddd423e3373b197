"""An API client: a named token and the scopes it holds."""

import hashlib

from django.conf import settings
from django.db import models
from django.db.models import Exists, OuterRef

from reviewapp.compiled_queries import CompiledQuery


class AccessLoss(models.Model):
    """A person lost the right to review (their account deactivated, they left the
    reviewers group, the group itself went). Written by database triggers on the auth
    tables, whatever made the change (a form, a bulk update, raw SQL), and append-only:
    a personal token issued before a person's last loss stays dead
    (reviewapp/review/access_loss.py)."""

    # The user's id, not a foreign key: the record outlives the account.
    user_id = models.IntegerField(db_index=True)
    lost_at = models.DateTimeField()
    reason = models.CharField(max_length=100)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"user {self.user_id} lost access at {self.lost_at:%Y-%m-%d %H:%M}: {self.reason}"


def _losses_after(user_id, access_epoch):
    """The holder's losses of access since the token was issued (its epoch)."""
    return AccessLoss.objects.filter(user_id=user_id, pk__gt=access_epoch)


_unrevoked_with_hash = CompiledQuery(
    lambda token_hash: ApiClient.objects.filter(token_hash=token_hash, revoked_at__isnull=True)[:1]
)


class ApiClientQuerySet(models.QuerySet):
    def live(self):
        """Tokens that work: not revoked, and a personal one issued after its holder's last
        loss of access (revoked_at can be cleared in SQL; the record of losses cannot)."""
        # A token of no person has a NULL user_id, which no loss matches.
        later_loss = _losses_after(OuterRef("user_id"), OuterRef("access_epoch"))
        return self.filter(~Exists(later_loss), revoked_at__isnull=True)

    def live_with_token_hash(self, token_hash: str):
        """``live().filter(token_hash=…).first()`` among all clients, in two plain steps:
        every request of every client asks it, and composing the subquery of ``live``
        costs more CPU than the lookup. The row by its unique hash (composed once);
        then, for a personal token only, its holder's losses of access since."""
        client = _unrevoked_with_hash.first(token_hash)
        if client is None or client.user_id is None:
            return client
        return None if _losses_after(client.user_id, client.access_epoch).exists() else client


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
    # A personal token's: the last AccessLoss of its user when it was issued (0: none).
    access_epoch = models.BigIntegerField(default=0)

    objects = ApiClientQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name = "API client"

    def __str__(self) -> str:
        return f"{self.name} ({self.token_prefix}…)"

    @staticmethod
    def hash_token(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()
