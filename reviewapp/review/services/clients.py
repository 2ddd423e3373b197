"""API clients: bearer tokens, stored only as a sha256 digest plus a visible prefix."""

import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from ..access import may_sign_decisions, may_sign_decisions_many
from ..models import AccessLoss, ApiClient, Lens

TOKEN_MARK = "rva_"
# The mark plus 8 random characters: enough to tell tokens apart in the admin,
# far too little to guess the remaining 43.
PREFIX_LENGTH = len(TOKEN_MARK) + 8
# A person's live tokens: one per device is plenty, and each has its own rate budget.
PERSONAL_TOKENS_LIMIT = 10
# last_used_at is for spotting dead tokens, not an audit log: writing it on
# every request would turn each read into a write.
TOUCH_EVERY = timedelta(minutes=1)


def token_prefix(token: str) -> str:
    """The part of a token kept in the clear: it names the token (and its rate limit)."""
    return token[:PREFIX_LENGTH]


PERSONAL_SCOPES_ONLY = "a personal token holds the review scope alone (--scopes review)"


class ClientRefused(ValueError):
    """The client cannot be created as asked (unknown scope, no scope, name taken)."""


@transaction.atomic
def api_client_create(*, name: str, scopes: list[str], user=None) -> tuple[ApiClient, str]:
    """Create a client; returns it with its token, which is never retrievable again.

    With `user` it is that person's token: it reviews as them and sees what
    they see in the pages, so it holds the `review` scope alone.
    """
    name = name.strip()
    if not name:
        raise ClientRefused("a client needs a name")
    wanted = _clean_scopes(scopes)
    epoch = 0
    if user is not None:
        if wanted != [ApiClient.Scope.REVIEW]:
            raise ClientRefused(PERSONAL_SCOPES_ONLY)
        # The person's row locked (a fresh copy: the answer below is not the cached one):
        # two creations at once count each other's token, and a loss of access being
        # recorded (its trigger locks the row too) is either seen here or comes after.
        locked = get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        if not may_sign_decisions(locked):
            raise ClientRefused(
                f"{user.get_username()} is not a reviewer: add them to the reviewers group first"
            )
        epoch = AccessLoss.objects.filter(user_id=user.pk).aggregate(last=Max("pk"))["last"] or 0
        live = ApiClient.objects.live().filter(user=user).count()
        if live >= PERSONAL_TOKENS_LIMIT:
            raise ClientRefused(
                f"{user.get_username()} already has {PERSONAL_TOKENS_LIMIT} live tokens: "
                "revoke one first"
            )
    if ApiClient.objects.filter(name=name).exists():
        raise ClientRefused(f"an API client named {name!r} already exists")
    token = TOKEN_MARK + secrets.token_urlsafe(32)
    client = ApiClient.objects.create(
        name=name,
        token_prefix=token_prefix(token),
        token_hash=ApiClient.hash_token(token),
        scopes=wanted,
        user=user,
        access_epoch=epoch,  # a later loss of access kills it (ApiClient.objects.live())
    )
    return client, token


def _clean_scopes(scopes: list[str]) -> list[str]:
    wanted = list(dict.fromkeys(s.strip() for s in scopes if s.strip()))
    if not wanted:
        raise ClientRefused(f"give at least one scope of {', '.join(ApiClient.Scope.values)}")
    unknown = [s for s in wanted if s not in ApiClient.Scope.values]
    if unknown:
        raise ClientRefused(
            f"unknown scope {', '.join(unknown)}; choose from {', '.join(ApiClient.Scope.values)}"
        )
    return wanted


def api_client_scopes_refusal(client: ApiClient, scopes: list[str]) -> str | None:
    """Why `client` cannot keep only `scopes` (naming the lenses it would break), or None."""
    if client.user_id is not None and list(scopes) != [ApiClient.Scope.REVIEW]:
        # As at creation: a personal token acts as its person, and only to review.
        return PERSONAL_SCOPES_ONLY
    if client.pk is None or ApiClient.Scope.JUDGE in scopes:
        return None
    bound = list(
        Lens.objects.filter(backend=Lens.Backend.EXTERNAL, judge_clients=client)
        .order_by("name")
        .values_list("name", flat=True)
    )
    if not bound:
        return None
    lenses = ", ".join(repr(n) for n in bound)
    lens_word, verb = ("external lenses", "name") if len(bound) > 1 else ("external lens", "names")
    return (
        f"Cannot remove the 'judge' scope from {client.name!r}: {lens_word} {lenses} "
        f"{verb} it as a client that may judge, and every judgement it posts would be refused "
        "(403), leaving those lenses' proposals to wait out the panel's deadline. Untick it on "
        "those lenses first."
    )


@transaction.atomic
def api_client_update(*, client: ApiClient, name: str, scopes: list[str]) -> ApiClient:
    """Rename a client or change its scopes; refuses what would break a lens bound to it."""
    name = name.strip()
    if not name:
        raise ClientRefused("a client needs a name")
    wanted = _clean_scopes(scopes)
    if ApiClient.objects.filter(name=name).exclude(pk=client.pk).exists():
        raise ClientRefused(f"an API client named {name!r} already exists")
    refusal = api_client_scopes_refusal(client, wanted)
    if refusal:
        raise ClientRefused(refusal)
    client.name = name
    client.scopes = wanted
    client.save(update_fields=["name", "scopes"])
    return client


def api_client_for_token(token: str) -> ApiClient | None:
    """The live client holding `token`, or None (unknown or revoked)."""
    if not token.startswith(TOKEN_MARK):
        return None
    return ApiClient.objects.live_with_token_hash(ApiClient.hash_token(token))


def api_clients_for_tokens(tokens: list[str]) -> dict[str, ApiClient | None]:
    """Each token's live client (None: unknown, revoked, or a personal token whose person may
    no longer review), touched; three queries at most however many tokens."""
    hashes = {ApiClient.hash_token(t): t for t in tokens if t.startswith(TOKEN_MARK)}
    found = {
        c.token_hash: c
        for c in ApiClient.objects.live().filter(token_hash__in=list(hashes)).select_related("user")
    }
    may_sign_decisions_many(c.user for c in found.values() if c.user_id)
    live = {h: c for h, c in found.items() if c.user_id is None or may_sign_decisions(c.user)}
    stale = [c.pk for c in live.values() if _touch_due(c)]
    if stale:
        ApiClient.objects.filter(pk__in=stale).update(last_used_at=timezone.now())
    return {t: live.get(ApiClient.hash_token(t)) for t in tokens}


def effective_scopes(client: ApiClient) -> list[str]:
    """The scopes a token acts with, over REST and MCP alike: `read:all` is read without the
    visibility rule, so it also grants `read`, and a personal token reads what its reviewer
    reads in the pages."""
    scopes = list(client.scopes)
    if ApiClient.Scope.READ not in scopes and (
        client.user_id is not None or ApiClient.Scope.READ_ALL in scopes
    ):
        scopes.append(ApiClient.Scope.READ.value)
    return scopes


def _touch_due(client: ApiClient) -> bool:
    return client.last_used_at is None or timezone.now() - client.last_used_at >= TOUCH_EVERY


def api_client_touch(client: ApiClient) -> None:
    """Record use, at most once per TOUCH_EVERY."""
    if _touch_due(client):
        now = timezone.now()
        ApiClient.objects.filter(pk=client.pk).update(last_used_at=now)
        client.last_used_at = now


def personal_token_revoke(*, client_id: int, user) -> bool:
    """A person revokes one of their own tokens; False if it is not theirs or already revoked."""
    return bool(
        ApiClient.objects.filter(pk=client_id, user=user, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
    )
