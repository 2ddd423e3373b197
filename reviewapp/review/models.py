"""The review domain as stored rows.

The database does the guarding wherever it can (one judgement per lens, one
decision per proposal, one open escalation per proposal, a decision chain that
cannot fork), so a re-delivered task or a double click ends in an
IntegrityError instead of a duplicate.
"""

import hashlib

from django.conf import settings
from django.contrib.postgres.search import SearchVectorField
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from reviewapp.core import checkers as core_checkers
from reviewapp.core import constraints as core_constraints
from reviewapp.core.cite import GroundingPolicy
from reviewapp.core.whitespace import is_blank

from . import llm_keys
from .checker_sandbox import checker_sandbox


class Lens(models.Model):
    class Backend(models.TextChoices):
        LLM = "llm", "LLM (OpenAI-compatible chat completions)"
        CONSTRAINTS = "constraints", "Constraints (mandate validator)"
        EXTERNAL = "external", "External (judgements arrive over the API)"
        RECORDED = "recorded", "Recorded (replays stored responses)"

    class ResponseFormat(models.TextChoices):
        JSON_SCHEMA = "json_schema", "JSON schema (strict structured output)"
        JSON_OBJECT = "json_object", "JSON object"
        TEXT = "text", "Plain text (no response_format sent)"

    # Changing any of these changes what the lens judges, so it bumps the version.
    VERSIONED_FIELDS = (
        "name",
        "instructions",
        "backend",
        "base_url",
        "model",
        "api_key_env",
        "temperature",
        "timeout_seconds",
        "response_format",
        "mandate",
        "active",
    )

    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    instructions = models.TextField(blank=True, help_text="The angle this lens judges from.")
    backend = models.CharField(max_length=20, choices=Backend.choices)
    base_url = models.URLField(blank=True, help_text="e.g. http://127.0.0.1:11434/v1")
    model = models.CharField(max_length=200, blank=True)
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="Name of the environment variable holding the API key (never the key itself).",
    )
    temperature = models.FloatField(default=0.0)
    timeout_seconds = models.FloatField(default=60.0)
    response_format = models.CharField(
        max_length=20,
        choices=ResponseFormat.choices,
        default=ResponseFormat.JSON_SCHEMA,
        help_text=(
            "How the judgement is asked for. Choose JSON object or plain text for a server "
            "that refuses structured output; the answer is checked the same way in every mode."
        ),
    )
    # Limits of the endpoint (base_url) this lens calls, held across every
    # worker process: see reviewapp/review/endpoint_limits.py. Not versioned:
    # they change how fast the lens judges, not what it judges. The defaults
    # are a guard rail, not a guess at any one provider (a provider's own
    # limit answers 429, which is honoured; a vLLM server queues what exceeds
    # its batch): 10,000 a minute is a top OpenAI tier's. Lower, the defaults,
    # not the workers, capped a fast endpoint: 64 calls of 1 s are 21
    # proposals/s of 3 lenses, 256 calls of 3 s are 28, 512 of 3 s are 57
    # (a 2-core worker starts calls faster than that since its first tasks
    # go before final steps); 1,024 of 3 s are 114.
    max_concurrent_calls = models.PositiveIntegerField(
        default=1024,
        help_text="LLM only: calls in flight at once at this endpoint, across all workers.",
    )
    calls_per_minute = models.PositiveIntegerField(
        default=10000,
        help_text="LLM only: calls started per minute at this endpoint, across all workers.",
    )
    # What bounds a lens waiting out a busy provider (429s spend no transport
    # attempt): see reviewapp/core/llm_calls.py. Not versioned, like the limits.
    deadline_seconds = models.PositiveIntegerField(
        default=240,
        help_text=(
            "LLM only: the most time this lens may take on one proposal, every call, retry "
            "and wait for a busy provider (HTTP 429) included. Past it the lens fails and the "
            "proposal escalates. The default, 240 s, is the worker's task time limit "
            "(CELERY_TASK_SOFT_TIME_LIMIT); the site's REVIEWAPP_LLM_LENS_TIME_LIMIT caps it."
        ),
    )
    mandate = models.TextField(blank=True, help_text="Constraint text for the constraints backend.")
    # Who may answer for an external lens: holding `judge` is not enough.
    judge_clients = models.ManyToManyField(
        "ApiClient",
        blank=True,
        related_name="judged_lenses",
        verbose_name="clients that may judge",
        help_text="External lenses only: the API clients allowed to post this lens's "
        "judgements. A lens naming no client accepts no judgement.",
    )
    allow_self_judgement = models.BooleanField(
        default=False,
        verbose_name="submitter may judge",
        help_text="External lenses only: let a client judge proposals it submitted itself. "
        "Off keeps separation of duties.",
    )
    active = models.BooleanField(default=True)
    version = models.PositiveIntegerField(default=1, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "lenses"
        constraints = [
            models.CheckConstraint(condition=~Q(name=""), name="lens_name_not_blank"),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        if self.pk:
            stored = Lens.objects.filter(pk=self.pk).values(*self.VERSIONED_FIELDS).first()
            if stored and any(stored[f] != getattr(self, f) for f in self.VERSIONED_FIELDS):
                self.version = (
                    Lens.objects.filter(pk=self.pk).values_list("version", flat=True).get() + 1
                )
        super().save(*args, **kwargs)

    def clean(self) -> None:
        if is_blank(self.name):
            raise ValidationError({"name": "A lens needs a name."})
        if self.backend == self.Backend.LLM:
            errors = {}
            if not self.base_url:
                errors["base_url"] = "An LLM lens needs the endpoint's base URL."
            if not self.model:
                errors["model"] = "An LLM lens needs a model name."
            if self.timeout_seconds <= 0:
                errors["timeout_seconds"] = "The timeout must be positive."
            if self.max_concurrent_calls < 1:
                errors["max_concurrent_calls"] = "Allow at least one call at a time."
            if self.calls_per_minute < 1:
                errors["calls_per_minute"] = "Allow at least one call per minute."
            if self.deadline_seconds < 1:
                errors["deadline_seconds"] = "Allow the lens at least a second."
            if errors:
                raise ValidationError(errors)
        if self.backend == self.Backend.CONSTRAINTS:
            try:
                core_constraints.ConstraintSet.from_text(self.mandate)
            except core_constraints.ConstraintError as exc:
                raise ValidationError({"mandate": str(exc)}) from exc

    @property
    def api_key_is_set(self) -> bool:
        return llm_keys.is_set(self.api_key_env)


class CheckerConfig(models.Model):
    class Kind(models.TextChoices):
        CONSTRAINTS = "constraints", "Constraints (mandate)"
        JSON_SCHEMA = "json_schema", "JSON Schema"
        REGEX = "regex", "Regular expression"
        COMMAND = "command", "Command"

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    settings = models.JSONField(
        default=dict,
        blank=True,
        help_text='constraints: {"mandate"}; json_schema: {"schema"}; '
        'regex: {"pattern", "must_match"}; command: {"argv", "timeout_seconds"}',
    )
    grants = models.JSONField(default=list, blank=True)
    active = models.BooleanField(default=True)
    version = models.PositiveIntegerField(default=1, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "checker"

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        if self.pk:
            stored = (
                CheckerConfig.objects.filter(pk=self.pk)
                .values("kind", "settings", "grants", "active", "version")
                .first()
            )
            if stored and any(
                stored[f] != getattr(self, f) for f in ("kind", "settings", "grants", "active")
            ):
                self.version = stored["version"] + 1
        super().save(*args, **kwargs)

    def clean(self) -> None:
        try:
            self.build()
        except (core_checkers.CheckError, ValueError, TypeError) as exc:
            raise ValidationError(str(exc)) from exc

    def build(self) -> core_checkers.Checker:
        """The core checker this row configures; refuses what the core refuses."""
        s = self.settings or {}
        grants = frozenset(self.grants or [])
        if self.kind != self.Kind.COMMAND:
            # Only a command runs anything; the core refuses other grants anyway.
            core_checkers.ensure_model_free(self.name, grants)
        match self.kind:
            case self.Kind.CONSTRAINTS:
                return core_checkers.ConstraintsChecker(
                    self.name, self.version, s.get("mandate", "")
                )
            case self.Kind.JSON_SCHEMA:
                return core_checkers.JsonSchemaChecker(self.name, self.version, s.get("schema", {}))
            case self.Kind.REGEX:
                return core_checkers.RegexChecker(
                    self.name, self.version, s.get("pattern", ""), s.get("must_match", True)
                )
            case self.Kind.COMMAND:
                return core_checkers.CommandChecker(
                    self.name,
                    self.version,
                    list(s.get("argv", [])),
                    float(s.get("timeout_seconds", 10)),
                    grants,
                    sandbox=checker_sandbox(),
                )
        raise ValidationError({"kind": f"Unknown checker kind {self.kind!r}."})


class Panel(models.Model):
    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    need = models.PositiveIntegerField()
    lenses = models.ManyToManyField(Lens, through="PanelLens", related_name="panels")
    checkers = models.ManyToManyField(CheckerConfig, blank=True, related_name="panels")
    grounding_policy = models.CharField(
        max_length=10,
        choices=[(p.value, p.value.title()) for p in GroundingPolicy],
        default=GroundingPolicy.REJECT.value,
    )
    requires_sign_off = models.BooleanField(
        default=False, help_text="A reached pass still goes to a human for sign-off."
    )
    external_deadline_seconds = models.PositiveIntegerField(
        default=3600, help_text="How long to wait for external judgements."
    )
    active = models.BooleanField(default=True)
    version = models.PositiveIntegerField(default=1, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def ordered_lenses(self) -> list[Lens]:
        return [pl.lens for pl in self.panel_lenses.select_related("lens").order_by("position")]


class PanelLens(models.Model):
    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="panel_lenses")
    # PROTECT: a lens used by a panel cannot be deleted out from under it.
    lens = models.ForeignKey(Lens, on_delete=models.PROTECT, related_name="panel_memberships")
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["panel", "lens"], name="panel_lens_once"),
        ]

    def __str__(self) -> str:
        return f"{self.panel_id}#{self.position}: {self.lens_id}"


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

    class Meta:
        ordering = ["name"]
        verbose_name = "API client"

    def __str__(self) -> str:
        return f"{self.name} ({self.token_prefix}…)"

    @staticmethod
    def hash_token(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()


class Proposal(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        EVALUATING = "evaluating"
        DECIDED = "decided"
        ESCALATED = "escalated"

    panel = models.ForeignKey(Panel, on_delete=models.PROTECT, related_name="proposals")
    panel_version = models.PositiveIntegerField()
    # The configuration the proposal is judged with, frozen at submission so
    # later edits to the panel or its lenses never rewrite history.
    panel_snapshot = models.JSONField()
    client = models.ForeignKey(
        ApiClient, null=True, blank=True, on_delete=models.PROTECT, related_name="proposals"
    )
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    title = models.CharField(max_length=300, blank=True)
    content = models.TextField()
    thought_process = models.TextField(blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # NULL, not "", for "no reference": the uniqueness constraint must ignore it.
    external_ref = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    content_sha256 = models.CharField(max_length=64)
    request_sha256 = models.CharField(
        max_length=64, help_text="Digest of the submitted body, for idempotent re-submission."
    )
    status = models.CharField(
        max_length=12, choices=Status.choices, default=Status.QUEUED, db_index=True
    )
    lenses_asked = models.PositiveIntegerField(default=0)
    lenses_answered = models.PositiveIntegerField(default=0)
    # {"passed", "failed", "asked", "need", "outcome"} once the panel is tallied.
    tally = models.JSONField(null=True, blank=True)
    evaluation_started_at = models.DateTimeField(null=True, blank=True)
    # When outstanding external lenses stop being waited for (None: no external lens).
    external_deadline_at = models.DateTimeField(null=True, blank=True, db_index=True)
    finalized_at = models.DateTimeField(null=True, blank=True)
    # The final step's failed or lost runs; past REVIEWAPP_FINAL_STEP_ATTEMPTS
    # the proposal is escalated instead of retried (see services/finalize.py).
    final_step_attempts = models.PositiveSmallIntegerField(default=0)
    final_step_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["client", "external_ref"],
                condition=Q(external_ref__isnull=False),
                name="proposal_external_ref_once_per_client",
            ),
            models.CheckConstraint(
                condition=Q(lenses_answered__lte=models.F("lenses_asked")),
                name="proposal_answered_le_asked",
            ),
        ]
        indexes = [models.Index(fields=["status", "updated_at"])]

    def __str__(self) -> str:
        return self.title or f"Proposal {self.pk}"

    @property
    def is_final(self) -> bool:
        return self.status in (self.Status.DECIDED, self.Status.ESCALATED)

    @property
    def all_lenses_answered(self) -> bool:
        return self.lenses_answered >= self.lenses_asked


class AwaitedLens(models.Model):
    """An external lens a proposal's snapshot awaits, as a row so visibility can join on it.

    Written at submission from the snapshot; never edited afterwards.
    """

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="awaited_lenses")
    # PROTECT: a lens a proposal awaits cannot be deleted out from under it.
    lens = models.ForeignKey(Lens, on_delete=models.PROTECT, related_name="awaited_by")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["proposal", "lens"], name="awaited_lens_once"),
        ]

    def __str__(self) -> str:
        return f"{self.proposal_id} awaits {self.lens_id}"


class Judgement(models.Model):
    class Verdict(models.TextChoices):
        PASS = "pass"
        FAIL = "fail"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="judgements")
    lens = models.ForeignKey(Lens, on_delete=models.PROTECT, related_name="judgements")
    lens_name = models.CharField(max_length=100)
    lens_version = models.PositiveIntegerField()
    verdict = models.CharField(max_length=4, choices=Verdict.choices)
    rationale = models.TextField(blank=True)
    raw_response = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=1)
    requote_rounds = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["proposal", "id"]
        constraints = [
            models.UniqueConstraint(fields=["proposal", "lens"], name="one_judgement_per_lens"),
        ]

    def __str__(self) -> str:
        return f"{self.lens_name} v{self.lens_version}: {self.verdict}"


class Claim(models.Model):
    class Assessment(models.TextChoices):
        VERIFIED = "verified"
        CONTESTED = "contested"
        REFUTED = "refuted"

    class AnchorKind(models.TextChoices):
        ANSWER_BODY = "answer_body"
        THOUGHT_WINDOW = "thought_window"
        UNRESOLVED = "unresolved"

    judgement = models.ForeignKey(Judgement, on_delete=models.CASCADE, related_name="claims")
    position = models.PositiveIntegerField()
    claim_id = models.CharField(max_length=64, blank=True)
    cite = models.TextField(help_text="The cite as submitted.")
    # NULL means "did not resolve"; "" would be a resolved empty span.
    text = models.TextField(null=True, blank=True, help_text="The resolved original span.")  # noqa: DJ001
    # The lens's own word, for unresolved cites too. Blank only on cites dropped
    # before it was recorded whose answer no longer says (see migration 0005).
    assessment = models.CharField(max_length=10, choices=Assessment.choices, blank=True)
    note = models.TextField(blank=True)
    anchor_kind = models.CharField(max_length=16, choices=AnchorKind.choices)
    start_utf16 = models.PositiveIntegerField(null=True, blank=True)
    end_utf16 = models.PositiveIntegerField(null=True, blank=True)
    # An unresolved cite the Reject policy dropped after the re-quote budget:
    # kept for the record, never counted as a grounded claim.
    dropped = models.BooleanField(default=False)

    class Meta:
        ordering = ["judgement", "position"]
        constraints = [
            models.UniqueConstraint(fields=["judgement", "position"], name="claim_position_once"),
            models.CheckConstraint(
                condition=(
                    Q(
                        anchor_kind="answer_body",
                        start_utf16__isnull=False,
                        end_utf16__gte=models.F("start_utf16"),
                    )
                    | (~Q(anchor_kind="answer_body") & Q(start_utf16__isnull=True))
                ),
                name="claim_offsets_match_anchor",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.claim_id or '—'}: {self.cite[:60]}"


class LensFailure(models.Model):
    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="lens_failures")
    lens = models.ForeignKey(Lens, on_delete=models.PROTECT, related_name="failures")
    lens_name = models.CharField(max_length=100)
    lens_version = models.PositiveIntegerField()
    error = models.TextField()
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["proposal", "lens"], name="one_failure_per_lens"),
        ]

    def __str__(self) -> str:
        return f"{self.lens_name} failed on proposal {self.proposal_id}"


class Evidence(models.Model):
    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="evidence")
    checker = models.ForeignKey(CheckerConfig, on_delete=models.PROTECT, related_name="evidence")
    checker_name = models.CharField(max_length=100)
    checker_version = models.PositiveIntegerField()
    verdict = models.CharField(max_length=12)
    reason = models.TextField(blank=True)
    digests = models.JSONField(default=dict)
    unenforced = models.JSONField(default=list, blank=True)
    payload = models.TextField(help_text="The exact signed bytes (RFC 8785 JSON).")
    signature = models.CharField(max_length=128)
    key_id = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "evidence"
        constraints = [
            models.UniqueConstraint(
                fields=["proposal", "checker"], name="one_evidence_per_checker"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.checker_name} v{self.checker_version}: {self.verdict}"


class EscalationManager(models.Manager):
    def get_queryset(self):
        # The search vector is for the database's index alone: never read it into Python.
        return super().get_queryset().defer("search")


class Escalation(models.Model):
    class Reason(models.TextChoices):
        NO_QUORUM = "no_quorum", "No quorum"
        INCONCLUSIVE = "inconclusive", "Inconclusive checker"
        LENS_FAILED = "lens_failed", "Lens failed"
        SIGN_OFF = "sign_off", "Sign-off"
        FINAL_STEP_FAILED = "final_step_failed", "Final step kept failing"

    class Status(models.TextChoices):
        OPEN = "open"
        CLAIMED = "claimed"
        RESOLVED = "resolved"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="escalations")
    reasons = models.JSONField(default=list)
    detail = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.OPEN, db_index=True
    )
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="claimed_escalations",
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # The proposal's search vector while the escalation is open, NULL once
    # resolved (PostgreSQL; NULL on SQLite): see reviewapp.review.search.
    search = SearchVectorField(null=True, editable=False)

    objects = EscalationManager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["proposal"],
                condition=~Q(status="resolved"),
                name="one_open_escalation_per_proposal",
            ),
        ]
        # The inbox: open and claimed escalations, newest first. PostgreSQL
        # also has one such index per reason and a GIN index on `search`
        # (migration 0011; SQLite has neither GIN nor JSON containment).
        indexes = [
            models.Index(
                fields=["-created_at", "-id"],
                condition=Q(status__in=["open", "claimed"]),
                name="inbox_open",
            )
        ]

    def __str__(self) -> str:
        return f"Escalation {self.pk} ({', '.join(self.reasons)}, {self.status})"


class SigningKey(models.Model):
    """The public half of a server signing key. The private half never enters the database."""

    key_id = models.CharField(max_length=64, unique=True)
    public_key = models.CharField(max_length=64, help_text="base64")
    created_at = models.DateTimeField(auto_now_add=True)
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.key_id


class Decision(models.Model):
    class Outcome(models.TextChoices):
        APPROVED = "approved"
        REJECTED = "rejected"

    class Basis(models.TextChoices):
        SYSTEM = "system"
        REVIEWER = "reviewer"

    proposal = models.OneToOneField(Proposal, on_delete=models.PROTECT, related_name="decision")
    escalation = models.OneToOneField(
        Escalation, null=True, blank=True, on_delete=models.PROTECT, related_name="decision"
    )
    outcome = models.CharField(max_length=8, choices=Outcome.choices)
    basis = models.CharField(max_length=8, choices=Basis.choices)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT
    )
    decided_by_name = models.CharField(max_length=150, blank=True)
    rationale = models.TextField(blank=True)
    payload = models.TextField(help_text="The exact signed bytes (RFC 8785 JSON).")
    signature = models.CharField(max_length=128)
    key_id = models.CharField(max_length=64)
    # The chain cannot fork: two decisions can never claim the same predecessor.
    prev_hash = models.CharField(max_length=64, unique=True)
    hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.outcome} #{self.pk} ({self.basis})"


class ChainHead(models.Model):
    """A single row locked while a decision is appended, so appends take turns."""

    singleton = models.BooleanField(default=True, unique=True)
    last_hash = models.CharField(max_length=64)

    def __str__(self) -> str:
        return self.last_hash


class EndpointCall(models.Model):
    """An LLM call in flight at an endpoint, or started there within the last minute.

    The embedded default's shared state for per-endpoint limits; with Redis
    the same state lives in Redis instead (reviewapp/review/endpoint_limits.py).
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
    it lives in Redis instead (reviewapp/review/endpoint_limits.py). Times are
    epoch seconds.
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
