"""A checker: a deterministic check of a proposal's content, signed as evidence."""

from django.core.exceptions import ValidationError
from django.db import models

from reviewapp.core import checkers as core_checkers

from ..evaluation.checker_sandbox import checker_sandbox


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
