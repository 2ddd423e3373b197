"""The ledger's witnesses, read-only: what each last cosigned, and its alerts."""

from django.contrib import admin

from .models import LedgerCosignature, LedgerWitness


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
