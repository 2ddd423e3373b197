"""Notification channels per group or panel, people's preferences, and the outbox."""

from django import forms
from django.contrib import admin

from reviewapp.webhooks.addresses import endpoint_url_refusal

from .models import Channel, Event, Message, Preference


class ChannelForm(forms.ModelForm):
    events = forms.MultipleChoiceField(
        choices=Event.choices, widget=forms.CheckboxSelectMultiple, required=True
    )

    class Meta:
        model = Channel
        fields = ("name", "kind", "group", "panel", "events", "url", "style", "digest_minutes",
                  "active")  # fmt: skip
        widgets = {"url": forms.URLInput(attrs={"size": 80})}
        help_texts = {
            "url": "Chat only: the room's incoming-webhook URL (Slack, or Mattermost). It must "
            "reach a public address, as a webhook endpoint must; it is the room's secret.",
        }

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("kind") == Channel.Kind.CHAT:
            url = (cleaned.get("url") or "").strip()
            problem = endpoint_url_refusal(url) if url else "a chat channel needs its URL"
            if problem:
                self.add_error("url", problem)
            cleaned["url"] = url
        elif cleaned.get("url"):
            self.add_error("url", "Email goes to each person's address: leave the URL empty.")
        return cleaned


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    form = ChannelForm
    list_display = ("name", "kind", "group", "panel", "event_names", "digest_minutes", "active")
    list_filter = ("kind", "active")

    @admin.display(description="events")
    def event_names(self, obj):
        return ", ".join(obj.events)


@admin.register(Preference)
class PreferenceAdmin(admin.ModelAdmin):
    list_display = ("user", "mode", "digest_minutes")
    list_filter = ("mode",)


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    """The outbox, read-only: what went out, to whom, and why a send failed."""

    list_display = ("subject", "to", "status", "attempts", "created_at", "delivered_at")
    list_filter = ("status",)
    readonly_fields = [f.name for f in Message._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
