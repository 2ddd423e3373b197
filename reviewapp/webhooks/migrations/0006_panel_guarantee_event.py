# The webhook event panel.guarantee (issue 45): endpoints may subscribe to it.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('webhooks', '0005_deadline_and_withdrawal_events'),
    ]

    operations = [
        migrations.AlterField(
            model_name='endpoint',
            name='events',
            field=models.JSONField(default=list, help_text='Any of: proposal.decided, proposal.escalated, proposal.withdrawn, judgement.requested, escalation.claimed, escalation.released, escalation.review_submitted, escalation.reconcile, escalation.expired, lens.drift, lens.recovered, decision.disputed, panel.guarantee'),
        ),
    ]
