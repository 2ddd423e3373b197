"""Demo content: agent output that looks like the real thing, and what each lens said of it.

Every proposal names, per lens, a verdict and the cites it quoted. The cites
deliberately hit every rung of the citation ladder (exact, quote-wrapped,
blockquote and label prefixes, re-wrapped whitespace, emphasis on either side,
case drift) and some quote nothing at all, so the highlights, the re-quote loop
and the unresolved-cite warnings all have something to show.
"""

SUPPORT_MANDATE = "must not contain 'guaranteed'; no refund without order number"
HOUSE_STYLE = (
    "must not contain 'lorem ipsum'; must not contain 'TODO'; "
    "no SELECT * without LIMIT; write in a friendly tone"
)
# Exit 0 unless the proposal asks for the legacy exporter, which never answers
# in time: the demo's inconclusive checker.
LEGACY_EXPORT_PROBE = (
    "import sys, time\n"
    "text = sys.stdin.read()\n"
    "if 'LEGACY-EXPORT' in text:\n"
    "    time.sleep(30)\n"
    "sys.exit(0)\n"
)

PANELS = [
    {
        "name": "regulatory",
        "description": "Regulatory statements: three distinct lenses must all agree, "
        "and a human signs off every approval.",
        "need": 3,
        "grounding_policy": "repair",
        "requires_sign_off": True,
        "lenses": ["reg-accuracy", "reg-compliance", "reg-risk"],
        "checkers": ["no-personal-ids"],
    },
    {
        "name": "support-answers",
        "description": "Customer support replies: two of three lenses decide.",
        "need": 2,
        "grounding_policy": "reject",
        "requires_sign_off": False,
        "lenses": ["support-accuracy", "support-tone", "support-policy"],
        "checkers": ["support-mandate", "legacy-export-probe"],
    },
    {
        "name": "house-style",
        "description": "Engineering docs checked against the house-style mandate alone.",
        "need": 1,
        "grounding_policy": "reject",
        "requires_sign_off": False,
        "lenses": ["house-style-mandate"],
        "checkers": [],
    },
]

LENSES = {
    "reg-accuracy": "Is every factual statement about the regulation accurate and current?",
    "reg-compliance": "Would acting on this statement keep us compliant in every named market?",
    "reg-risk": "Does the statement understate any legal or financial risk?",
    "support-accuracy": "Is the reply factually correct about our products and policies?",
    "support-tone": "Is the reply courteous, clear and free of blame?",
    "support-policy": "Does the reply follow the refund and privacy policy?",
}

CHECKERS = [
    {
        "name": "no-personal-ids",
        "kind": "regex",
        # A US social security number shape must never appear.
        "settings": {"pattern": r"\b\d{3}-\d{2}-\d{4}\b", "must_match": False},
        "grants": [],
    },
    {
        "name": "support-mandate",
        "kind": "constraints",
        "settings": {"mandate": SUPPORT_MANDATE},
        "grants": [],
    },
    {
        "name": "legacy-export-probe",
        "kind": "command",
        "settings": {
            "argv": ["/usr/bin/python3", "-c", LEGACY_EXPORT_PROBE],
            "timeout_seconds": 2,
        },
        "grants": ["proc:exec:/usr/bin/python3"],
    },
]

REGULATORY_DOCS = [
    (
        "GDPR breach notification window",
        "## Data-breach notification\n\n"
        "Under the GDPR, a controller must notify the supervisory authority **without undue "
        "delay and, where feasible, not later than 72 hours** after becoming aware of a "
        "personal-data breach.\r\nWhere notification is late, it must be accompanied by "
        "reasons for the delay.\r\n\r\n| Market | Authority | Window |\n|---|---|---|\n"
        "| 🇩🇪 Germany | BfDI | 72 h |\n| 🇫🇷 France | CNIL | 72 h |\n\n"
        "Die Meldung muss „unverzüglich“ erfolgen — also ohne schuldhaftes Zögern.\n",
        "I checked Art. 33(1) first, then the national authorities.",
        "not later than 72 hours",
        "Die Meldung muss „unverzüglich“ erfolgen",
    ),
    (
        "Cookie consent in the EU",
        "### Consent banners\n\nStrictly necessary cookies need *no* consent; analytics "
        "cookies do.\nA pre-ticked box is **not valid consent** (CJEU, Planet49, C‑673/17).\n\n"
        "En France, la CNIL exige un bouton « Tout refuser » aussi visible que « Tout accepter ».\n"
        "🍪 Re-ask for consent at most every 13 months.\n",
        "Planet49 settled the pre-ticked question in 2019.",
        "A pre-ticked box is not valid consent",
        "la CNIL exige un bouton « Tout refuser »",
    ),
    (
        "Record retention for invoices",
        "## Retention\n\nInvoices must be kept for **10 years** in Germany (§ 147 AO) and "
        "for 6 years in the UK.\n\n```sql\nDELETE FROM invoices WHERE issued_at < now() - "
        "interval '10 years';\n```\n\n請求書の保存期間は日本では7年間です。 📚\n",
        "HGB and AO agree on ten years for invoices.",
        "Invoices must be kept for 10 years in Germany",
        "請求書の保存期間は日本では7年間です。",
    ),
    (
        "Accessibility deadline",
        "The European Accessibility Act applies from **28 June 2025**; e-commerce sites "
        "must meet EN 301 549.\n\nМикропредприятия, оказывающие услуги, освобождены от "
        "требований.\nSmall shops — fewer than 10 staff — are exempt for services. ♿\n",
        "Micro-enterprise exemption is in Art. 4(5).",
        "The European Accessibility Act applies from 28 June 2025",
        "Микропредприятия, оказывающие услуги, освобождены",
    ),
]

SUPPORT_DOCS = [
    (
        "Late parcel refund",
        "Hi Dana,\n\nI'm sorry your parcel arrived late 📦. You can request a refund from "
        "your order page; please quote your order number so we can find it quickly.\n\n"
        "Refunds usually reach your card within **5–7 business days**.\n\nBest,\nSam",
        "Customer is eligible under the late-delivery policy.",
        "please quote your order number",
        "Refunds usually reach your card within 5–7 business days.",
    ),
    (
        "Password reset loop",
        "Hello!\n\nThe reset link expires after *30 minutes* — if it already did, request "
        "a new one from the sign-in page.\nClear your browser cache if the loop continues. 🔁\n\n"
        "Cheers,\nAmélie",
        "Known issue with stale session cookies.",
        "The reset link expires after 30 minutes",
        "Clear your browser cache if the loop continues.",
    ),
    (
        "Changing the billing address",
        "Hi Kenji,\n\nYou can change the billing address under **Settings → Billing**.\n"
        "Changes apply to the *next* invoice, not the current one.\n\n"
        "お問い合わせありがとうございます。🙏",
        "Billing changes are not retroactive.",
        "Changes apply to the next invoice, not the current one.",
        "Settings → Billing",
    ),
    (
        "Exporting account data",
        "Hi Priya,\n\nYou can export everything as a ZIP from **Privacy → Download my data**; "
        "the file is ready within 24 hours and the link is valid for 7 days.\n\n"
        "Un saludo,\nLucía",
        "GDPR Art. 20 export flow.",
        "the file is ready within 24 hours",
        "the link is valid for 7 days",
    ),
]

HOUSE_STYLE_DOCS = [
    (
        "Query guide: recent orders",
        "# Recent orders\n\nUse a bounded query:\n\n```sql\nSELECT id, total FROM orders "
        "ORDER BY created_at DESC LIMIT 50;\n```\n\nThat keeps the page fast. 🚀",
    ),
    (
        "Query guide: everything",
        "# All orders\n\n```sql\nSELECT * FROM orders;\n```\n\nTODO: add pagination.",
    ),
    (
        "Deploy checklist",
        "# Deploy\n\n1. Run the migrations.\n2. Warm the cache.\n3. Watch the error rate "
        "for 10 minutes — roll back if it doubles.\n",
    ),
    (
        "Placeholder page",
        "# Pricing\n\nLorem ipsum dolor sit amet. Prices coming soon.",
    ),
]


def _cite_variants(cite: str) -> list[str]:
    """The same quote as different evaluators type it: one per rung of the ladder."""
    return [
        cite,  # exact
        f"“{cite}”",  # typographic quotes around it
        f"> {cite}",  # blockquote
        f'Evidence: "{cite}"',  # label prefix
        cite.lower(),  # case drift
        f"**{cite}**",  # emphasis the source does not have
    ]


def proposals() -> list[dict]:
    """Forty-odd proposals, each with the recorded answer of every lens, numbered in turn."""
    out = _regulatory(first=1)
    out += _support(first=len(out) + 1)
    return out + _house_style(first=len(out) + 1)


def _proposal(ref: str, panel: str, title: str, content: str, thought: str, judgements) -> dict:
    return {
        "ref": ref,
        "panel": panel,
        "title": title,
        "content": content,
        "thought_process": thought,
        "judgements": judgements,
    }


# Regulatory: unanimous pass → sign-off; split → no quorum; unanimous fail →
# rejected; a personal id in the text → the regex checker rejects.
REGULATORY_ROUTES = [
    ("pass", "pass", "pass"),
    ("pass", "pass", "fail"),
    ("fail", "fail", "fail"),
    ("pass", "fail", "pass"),
    ("pass", "pass", "pass"),
]


def _regulatory(*, first: int) -> list[dict]:
    out, n, lenses = [], first - 1, PANELS[0]["lenses"]
    for doc_i, (title, body, thought, cite_a, cite_b) in enumerate(REGULATORY_DOCS):
        for route_i, verdicts in enumerate(REGULATORY_ROUTES):
            n += 1
            content = f"{body}\nRef. REG-{1000 + n}"
            if route_i == 4:
                content += "\nContact: case officer 078-05-1120"
            variants = _cite_variants(cite_a)
            judgements = {}
            for lens_i, (lens, verdict) in enumerate(zip(lenses, verdicts, strict=True)):
                cites = [variants[(doc_i + lens_i + route_i) % len(variants)], cite_b]
                if lens_i == 2:
                    cites.append("The regulation was repealed in 2024.")  # fabricated
                if lens_i == 1:
                    cites.append(thought)  # quotes the reasoning trace
                judgements[lens] = {"verdict": verdict, "cites": cites}
            out.append(
                _proposal(f"demo-reg-{n:03d}", "regulatory", title, content, thought, judgements)
            )
    return out


# Support (2 of 3): approvals, a panel rejection, a mandate rejection, the
# legacy exporter timing out (inconclusive) and a lens that answers garbage.
SUPPORT_ROUTES = [
    ("approved", ("pass", "pass", "fail")),
    ("approved", ("pass", "pass", "pass")),
    ("panel_rejects", ("fail", "fail", "pass")),
    ("mandate_rejects", ("pass", "pass", "pass")),
    ("inconclusive", ("pass", "pass", "pass")),
    ("lens_failed", ("pass", "fail", "garbage")),
]


def _support(*, first: int) -> list[dict]:
    out, n, lenses = [], first - 1, PANELS[1]["lenses"]
    for doc_i, (title, body, thought, cite_a, cite_b) in enumerate(SUPPORT_DOCS):
        for route, verdicts in SUPPORT_ROUTES:
            n += 1
            content = f"{body}\n\nTicket #{4000 + n}"
            if route == "mandate_rejects":
                content += "\nDelivery next time is guaranteed."
            if route == "inconclusive":
                content += "\n(Attached via LEGACY-EXPORT.)"
            variants = _cite_variants(cite_a)
            judgements = {}
            for lens_i, (lens, verdict) in enumerate(zip(lenses, verdicts, strict=True)):
                cites = [variants[(doc_i + lens_i) % len(variants)], cite_b]
                if lens_i == 1 and doc_i % 2 == 0:
                    cites.append("We apologise for any inconvenience caused.")  # fabricated
                judgements[lens] = {"verdict": verdict, "cites": cites}
            out.append(
                _proposal(
                    f"demo-sup-{n:03d}", "support-answers", title, content, thought, judgements
                )
            )
    return out


def _house_style(*, first: int) -> list[dict]:
    return [
        _proposal(
            f"demo-doc-{n:03d}", "house-style", title, f"{body}\n\n— docs bot, run {n}", "", {}
        )
        for n, (title, body) in enumerate(HOUSE_STYLE_DOCS, start=first)
    ]
