"""Assignments: the rules for new escalations (by panel and/or reason), and escalations."""

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db.models import Q

from ..groups import REVIEWERS_GROUP
from ..models import AssignmentRule, Escalation
from ..services.assignments import escalation_assign
from .forms.assignment import AssignmentRuleForm
from .mixins import AuditedAdminMixin


class ReviewerChoicesMixin:
    """Only someone who may decide escalations can be assigned them."""

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "assigned_user":
            kwargs["queryset"] = (
                get_user_model()
                .objects.filter(
                    Q(groups__name=REVIEWERS_GROUP) | Q(is_superuser=True), is_active=True
                )
                .distinct()
            )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


@admin.register(AssignmentRule)
class AssignmentRuleAdmin(ReviewerChoicesMixin, AuditedAdminMixin, admin.ModelAdmin):
    form = AssignmentRuleForm
    audit_target_type = "assignment rule"
    audit_fields = ("panel", "reason", "assigned_user", "assigned_group")
    list_display = ("__str__", "panel", "reason", "assigned_user", "assigned_group")
    list_filter = ("reason", "panel")
    list_select_related = ("panel", "assigned_user", "assigned_group")
    fields = ("panel", "reason", "assigned_user", "assigned_group")


@admin.register(Escalation)
class EscalationAssignmentAdmin(ReviewerChoicesMixin, admin.ModelAdmin):
    """Assigning escalations from the admin: the assignment is the only thing it changes."""

    list_display = ("pk", "proposal", "status", "reasons", "assigned_user", "assigned_group")
    list_filter = ("status", "assigned_group")
    list_select_related = ("proposal", "assigned_user", "assigned_group")
    fields = ("proposal", "status", "reasons", "assigned_user", "assigned_group")
    readonly_fields = ("proposal", "status", "reasons")

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.is_resolved:
            return self.fields  # a decided escalation is no one's work any more
        return self.readonly_fields

    def has_add_permission(self, request):
        return False  # escalations are opened by the pipeline

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        # Through the service: staff only, the row locked, the change audited.
        escalation_assign(
            escalation=obj,
            user=form.cleaned_data.get("assigned_user"),
            group=form.cleaned_data.get("assigned_group"),
            by=request.user,
        )
