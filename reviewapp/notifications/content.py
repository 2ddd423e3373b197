"""What a notification says, as plain text for email and as a chat post.

Blind review holds here too: a line names the escalation, its panel, why it
needs a person and its deadline, and links into the desk, which checks who may
open it. It never carries a reviewer's verdict or who gave it, and carries the
agent's own words (the proposal's title and the start of its content) only
where the panel's `notify_with_text` allows. Chat text is escaped for the room's
markup, so a hostile title cannot ping a whole room or forge a link.
"""

from django.conf import settings

from reviewapp.review.models import Escalation

from .models import Channel, Event

# Lines in one message; past it the message says how many more and links the inbox.
MAX_LINES = 50
EXCERPT_CHARS = 200

_THEN = {"reject": "then rejected", "approve": "then approved", "keep_open": "then reminded"}
_WHAT = {
    Event.ASSIGNED: "assigned to you or your group",
    Event.RECONCILE: "the reviews disagree: a reconciler decides",
    Event.DEADLINE_NEAR: "its review deadline is near",
    Event.DEADLINE_PASSED: "its review deadline passed; it is kept open",
}


def public_url(path: str) -> str:
    return settings.REVIEWAPP_PUBLIC_URL.rstrip("/") + path


def escalation_path(escalation: Escalation) -> str:
    return f"/proposals/{escalation.proposal_id}"


def escalation_line(event: str, escalation: Escalation, *, panel_name: str, with_text: bool) -> str:
    """One line about `escalation`: nothing blind review hides, the agent's words only
    `with_text`."""
    reasons = ", ".join(r.replace("_", " ") for r in escalation.reasons)
    line = f"Escalation {escalation.pk} (panel {panel_name}, {reasons}): {_WHAT[event]}."
    if escalation.due_at is not None:
        line += f" Due {escalation.due_at:%Y-%m-%d %H:%M} UTC, {_THEN[escalation.on_deadline]}."
    if with_text:
        proposal = escalation.proposal
        title = " ".join(proposal.title.split())
        excerpt = " ".join(proposal.content.split())[:EXCERPT_CHARS]
        line += f' "{title}": {excerpt}' if title else f" {excerpt}"
    return line


def drift_line(lens_name: str, kappa: float | None, floor: float) -> str:
    figure = "unknown" if kappa is None else f"{kappa:.2f}"
    return (
        f"Lens {lens_name} drifted from the reviewers: kappa {figure}, below its floor {floor:.2f}."
    )


def subject(lines: list[str]) -> str:
    if len(lines) == 1:
        return f"[reviewapp] {lines[0][:150]}"
    return f"[reviewapp] {len(lines)} updates on review work"


def email_body(items: list[tuple[str, str]]) -> str:
    """Each line with its link, at most MAX_LINES, then the inbox."""
    shown = items[:MAX_LINES]
    parts = [f"- {line}\n  {public_url(path)}" for line, path in shown]
    if len(items) > len(shown):
        parts.append(f"… and {len(items) - len(shown)} more.")
    parts.append(f"\nThe inbox: {public_url('/')}")
    parts.append(
        f"Choose how often you hear from reviewapp: {public_url('/settings/notifications')}"
    )
    return "\n".join(parts) + "\n"


def chat_text(items: list[tuple[str, str]], style: str) -> str:
    shown = items[:MAX_LINES]
    parts = [f"• {_link(_escaped(line, style), public_url(path), style)}" for line, path in shown]
    if len(items) > len(shown):
        parts.append(f"… and {len(items) - len(shown)} more.")
    parts.append(_link("The inbox", public_url("/"), style))
    return "\n".join(parts)


def _link(label: str, url: str, style: str) -> str:
    if style == Channel.Style.MATTERMOST:
        return f"[{label}]({url})"
    return f"<{url}|{label}>"


def _escaped(text: str, style: str) -> str:
    """Text the room shows as written: no mention, link or markup of its own."""
    if style == Channel.Style.MATTERMOST:
        # Markdown: every character that opens markup, and @ (mentions: @channel, @all).
        for char in "\\`*_{}[]()#+-.!|~>&<":
            text = text.replace(char, "\\" + char)
        return text.replace("@", "@\u200b")
    # Slack mrkdwn: &, < and > are all its escaping needs (<!channel>, <url|label>);
    # the zero-width space keeps a bare @here from being read as a mention.
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("@", "@\u200b")
