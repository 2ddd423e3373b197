"""The decision tags reviewers pick from (hallucination, policy, tone, …)."""

from django.contrib import admin

from ..models import Tag
from .mixins import AuditedAdminMixin

TAG_AUDIT_FIELDS = ("name", "description", "active")


@admin.register(Tag)
class TagAdmin(AuditedAdminMixin, admin.ModelAdmin):
    audit_target_type = "tag"
    audit_fields = TAG_AUDIT_FIELDS
    list_display = ("name", "description", "active")
    list_filter = ("active",)
    search_fields = ("name",)

    def has_delete_permission(self, request, obj=None):
        # A tag signed into decisions stays; retire it by clearing "active".
        if obj is not None and obj.decision_tags.exists():
            return False
        return super().has_delete_permission(request, obj)
