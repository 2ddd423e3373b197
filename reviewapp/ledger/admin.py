"""The ledger, read-only: its entries (and those waiting for an index), its witnesses, what
each last cosigned, and their alerts."""

from django.contrib import admin, messages

from .models import LedgerCosignature, LedgerEntry, LedgerWitness
from .services import sequencer_backlog


class _Sequenced(admin.SimpleListFilter):
    title = "sequenced"
    parameter_name = "sequenced"

    def lookups(self, request, model_admin):
        return (("no", "waiting for an index"), ("yes", "in the log"))

    def queryset(self, request, queryset):
        if self.value() in ("no", "yes"):
            return queryset.filter(leaf_index__isnull=self.value() == "no")
        return queryset


@admin.register(LedgerEntry)
class LedgerEntryAdmin(admin.ModelAdmin):
    """The log's entries; an entry waiting longer than REVIEWAPP_LEDGER_SEQUENCE_LATE_SECONDS
    for its index is an alert at the top of the list (and in /healthz)."""

    list_display = ("leaf_index", "kind", "decision_id", "evidence_id", "created_at",
                    "sequenced_at")  # fmt: skip
    list_filter = (_Sequenced, "kind")
    readonly_fields = ("leaf_index", "kind", "decision_id", "evidence_id", "entry", "leaf_hash",
                       "created_at", "sequenced_at")  # fmt: skip
    show_full_result_count = False  # the log only grows: no COUNT(*) on every page

    def changelist_view(self, request, extra_context=None):
        alert = sequencer_backlog().alert
        if alert:
            messages.error(request, f"Sequencer alert: {alert}")
        return super().changelist_view(request, extra_context)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # append-only: the database refuses it too


@admin.register(LedgerWitness)
class LedgerWitnessAdmin(admin.ModelAdmin):
    """Rows come from REVIEWAPP_LEDGER_WITNESSES; an alert clears when the witness cosigns again."""

    list_display = ("name", "known_size", "last_cosigned_at", "alert", "unreachable",
                    "unreachable_since")  # fmt: skip
    readonly_fields = ("vkey", "name", "known_size", "last_cosigned_at", "alert", "alert_at",
                       "unreachable", "unreachable_since")  # fmt: skip

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(LedgerCosignature)
class LedgerCosignatureAdmin(admin.ModelAdmin):
    list_display = ("checkpoint", "witness", "key_id", "timestamp", "created_at")
    list_filter = ("witness",)
    readonly_fields = ("checkpoint", "witness", "key_id", "timestamp", "line", "created_at")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # insert-only: the database refuses it too
