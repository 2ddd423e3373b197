"""A lens: one angle a proposal is judged from, and the endpoint or rule that judges it."""

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from reviewapp.core import constraints as core_constraints
from reviewapp.core.llm_endpoints import base_url_problem
from reviewapp.core.whitespace import is_blank

from ..evaluation import llm_keys
from ..evaluation.endpoint_policy import endpoint_policy


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
        "API key variable",
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
    # worker process: see reviewapp/review/evaluation/endpoint_limits.py. Not versioned:
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
            elif problem := base_url_problem(self.base_url, endpoint_policy()):
                errors["base_url"] = problem[0].upper() + problem[1:] + "."
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
