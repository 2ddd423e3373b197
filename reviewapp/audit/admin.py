"""Read-only views of the audit log and of trial runs."""

import json

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from .models import AuditEntry, Trial


def _short(value, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ("created_at", "actor_name", "action", "target_type", "target_repr", "summary")
    list_filter = ("action", "target_type")
    search_fields = ("target_repr", "actor_name", "note")
    date_hierarchy = "created_at"
    fields = (
        "created_at",
        "actor_name",
        "action",
        "target_type",
        "target_id",
        "target_repr",
        "diff",
        "note",
    )
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="Changed fields")
    def summary(self, obj):
        return ", ".join(obj.changes) or "—"

    @admin.display(description="Changes")
    def diff(self, obj):
        if not obj.changes:
            return "—"
        rows = format_html_join(
            "",
            "<tr><th>{}</th><td><pre>{}</pre></td><td><pre>{}</pre></td></tr>",
            (
                (
                    name,
                    _short(change.get("old"), 2000) if isinstance(change, dict) else "",
                    _short(change.get("new"), 2000) if isinstance(change, dict) else change,
                )
                for name, change in obj.changes.items()
            ),
        )
        return format_html(
            "<table class='audit-diff'><thead><tr><th>Field</th><th>Before</th><th>After</th>"
            "</tr></thead><tbody>{}</tbody></table>",
            rows,
        )


def utf16_to_index(text: str, offset: int) -> int:
    """The Python string index at UTF-16 code unit `offset` of `text`."""
    units = 0
    for index, char in enumerate(text):
        if units >= offset:
            return index
        units += 2 if ord(char) > 0xFFFF else 1
    return len(text)


def highlighted_segments(text: str, claims: list[dict]) -> list[tuple[str, bool]]:
    """`text` cut into (segment, highlighted) by the answer-body anchors of `claims`."""
    spans = []
    for claim in claims:
        anchor = claim.get("anchor") or {}
        if anchor.get("kind") == "answer_body":
            start = utf16_to_index(text, anchor["start_utf16"])
            end = utf16_to_index(text, anchor["end_utf16"])
            if end > start:
                spans.append((start, end))
    spans.sort()
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    segments, cursor = [], 0
    for start, end in merged:
        if start > cursor:
            segments.append((text[cursor:start], False))
        segments.append((text[start:end], True))
        cursor = end
    if cursor < len(text):
        segments.append((text[cursor:], False))
    return segments


@admin.register(Trial)
class TrialAdmin(admin.ModelAdmin):
    list_display = ("created_at", "kind", "target_name", "target_version", "status", "created_by")
    list_filter = ("kind", "status")
    search_fields = ("target_name",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def get_urls(self):
        return [
            path(
                "<path:object_id>/result/",
                self.admin_site.admin_view(self.result_view),
                name="audit_trial_result",
            ),
            path(
                "<path:object_id>/status/",
                self.admin_site.admin_view(self.status_view),
                name="audit_trial_status",
            ),
            *super().get_urls(),
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        return self.result_view(request, object_id)

    def _trial(self, request, object_id) -> Trial:
        if not self.has_view_permission(request):
            raise PermissionDenied
        trial = Trial.objects.filter(pk=unquote(object_id)).first()
        if trial is None:
            raise Http404
        return trial

    def _context(self, trial: Trial) -> dict:
        result = trial.result or {}
        claims = result.get("claims", [])
        back = (
            reverse("admin:review_lens_try", args=[trial.target_id])
            if trial.kind == Trial.Kind.LENS
            else reverse("admin:review_checkerconfig_try", args=[trial.target_id])
        )
        return {
            "trial": trial,
            "result": result,
            "claims": claims,
            "segments": highlighted_segments(trial.sample, claims) if claims else None,
            "details_json": json.dumps(result.get("details", {}), indent=2, ensure_ascii=False),
            "again_url": back,
            "status_url": reverse("admin:audit_trial_status", args=[trial.pk]),
        }

    def result_view(self, request, object_id):
        trial = self._trial(request, object_id)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Trial of {trial.kind} “{trial.target_name}”",
            **self._context(trial),
        }
        return TemplateResponse(request, "admin/audit/trial/result.html", context)

    def status_view(self, request, object_id):
        """The htmx fragment; it keeps polling itself until the trial has finished."""
        trial = self._trial(request, object_id)
        return TemplateResponse(request, "admin/audit/trial/_status.html", self._context(trial))
