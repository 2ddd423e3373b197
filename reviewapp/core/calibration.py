"""How far a lens agrees with the humans who adjudicated what it judged.

Pure arithmetic over counts the database sums: the lens's verdict (pass/fail)
against the final human decision (approve counts as pass, reject as fail).
Nothing here knows where the counts came from.
"""

import math
from dataclasses import dataclass

from .agreement import PairTable, chance_agreement, cohen_kappa

# Two-sided 95 %: the 0.975 quantile of the standard normal.
Z_95 = 1.959963984540054

# Below this many adjudicated proposals kappa is reported as undefined ("too
# few"): its large-sample interval would be wider than the scale it lives on.
MIN_KAPPA_ITEMS = 10

TOO_FEW = "too_few"
ONE_CLASS = "one_class"
KAPPA_REASONS = {
    TOO_FEW: f"fewer than {MIN_KAPPA_ITEMS} human-adjudicated proposals in the window",
    ONE_CLASS: "every verdict and decision fell in one class (chance agreement is 1)",
}


@dataclass(frozen=True)
class HumanTable:
    """A lens's verdicts against the human decisions on the same proposals."""

    pass_approved: int = 0
    pass_rejected: int = 0
    fail_approved: int = 0
    fail_rejected: int = 0

    @property
    def n(self) -> int:
        return self.pass_approved + self.pass_rejected + self.fail_approved + self.fail_rejected

    @property
    def agreed(self) -> int:
        return self.pass_approved + self.fail_rejected

    @property
    def approved(self) -> int:
        return self.pass_approved + self.fail_approved

    @property
    def rejected(self) -> int:
        return self.pass_rejected + self.fail_rejected

    def as_pair(self) -> PairTable:
        """The same counts as two raters' table: the lens first, the human second."""
        return PairTable(
            pass_pass=self.pass_approved,
            pass_fail=self.pass_rejected,
            fail_pass=self.fail_approved,
            fail_fail=self.fail_rejected,
        )

    def __add__(self, other: "HumanTable") -> "HumanTable":
        return HumanTable(
            self.pass_approved + other.pass_approved,
            self.pass_rejected + other.pass_rejected,
            self.fail_approved + other.fail_approved,
            self.fail_rejected + other.fail_rejected,
        )


@dataclass(frozen=True)
class Kappa:
    value: float | None
    low: float | None = None
    high: float | None = None
    reason: str | None = None  # a KAPPA_REASONS key when value is None

    @property
    def reason_text(self) -> str | None:
        return KAPPA_REASONS.get(self.reason) if self.reason else None


def kappa_with_interval(table: HumanTable, *, z: float = Z_95) -> Kappa:
    """Cohen's kappa and its large-sample confidence interval (kappa ± z·SE, clipped to ±1).

    The standard error is the non-null asymptotic one of Fleiss, Cohen &
    Everitt (1969), "Large sample standard errors of kappa and weighted kappa",
    Psychological Bulletin 72(5):323–327, as given in Fleiss, Levin & Paik,
    Statistical Methods for Rates and Proportions (3rd ed., 2003), eq. 18.15:

        var = [Σ_i p_ii (1 − (p_i· + p_·i)(1 − κ))²
               + (1 − κ)² Σ_{i≠j} p_ij (p_·i + p_j·)²
               − (κ − p_e (1 − κ))²] / (n (1 − p_e)²)

    It is what SAS PROC FREQ reports as the kappa ASE.
    """
    n = table.n
    if n < MIN_KAPPA_ITEMS:
        return Kappa(None, reason=TOO_FEW)
    pair = table.as_pair()
    kappa = cohen_kappa(pair)
    if kappa is None:
        return Kappa(None, reason=ONE_CLASS)
    expected = chance_agreement(pair)
    # Rows: the lens (pass, fail); columns: the human (approved, rejected).
    cells = [
        [table.pass_approved / n, table.pass_rejected / n],
        [table.fail_approved / n, table.fail_rejected / n],
    ]
    rows = [sum(r) for r in cells]
    cols = [cells[0][j] + cells[1][j] for j in range(2)]
    diagonal = sum(cells[i][i] * (1 - (rows[i] + cols[i]) * (1 - kappa)) ** 2 for i in range(2))
    off = (1 - kappa) ** 2 * sum(
        cells[i][j] * (cols[i] + rows[j]) ** 2 for i in range(2) for j in range(2) if i != j
    )
    variance = (diagonal + off - (kappa - expected * (1 - kappa)) ** 2) / (n * (1 - expected) ** 2)
    # Rounding can leave a hair below zero when agreement is perfect.
    se = math.sqrt(max(variance, 0.0))
    return Kappa(kappa, max(-1.0, kappa - z * se), min(1.0, kappa + z * se))


@dataclass(frozen=True)
class LensAgreement:
    table: HumanTable
    kappa: Kappa

    @property
    def n(self) -> int:
        return self.table.n

    @property
    def agreement(self) -> float | None:
        return self.table.agreed / self.table.n if self.table.n else None

    @property
    def true_pass_rate(self) -> float | None:
        """Of what humans approved, the share the lens passed."""
        t = self.table
        return t.pass_approved / t.approved if t.approved else None

    @property
    def true_fail_rate(self) -> float | None:
        """Of what humans rejected, the share the lens failed."""
        t = self.table
        return t.fail_rejected / t.rejected if t.rejected else None


def lens_agreement(table: HumanTable) -> LensAgreement:
    return LensAgreement(table=table, kappa=kappa_with_interval(table))


# "These lenses fail together": a pair is flagged when, over proposals both
# judged and a human decided, (1) at least CO_ERROR_MIN_ITEMS such proposals,
# (2) at least CO_ERROR_MIN_BOTH both wrong, and (3) both wrong at least
# CO_ERROR_LIFT times as often as independent errors would be (the product of
# each lens's own error rate on those proposals). (3) is compared in integers,
# both × items ≥ CO_ERROR_LIFT × first × second: the float lift of a pair at
# exactly twice the independent rate can land a hair below 2.
CO_ERROR_MIN_ITEMS = 20
CO_ERROR_MIN_BOTH = 5
CO_ERROR_LIFT = 2


@dataclass(frozen=True)
class CoErrors:
    items: int
    first_wrong: int
    second_wrong: int
    both_wrong: int

    @property
    def observed_rate(self) -> float | None:
        return self.both_wrong / self.items if self.items else None

    @property
    def expected_rate(self) -> float | None:
        """What independence predicts: P(first wrong) × P(second wrong)."""
        if not self.items:
            return None
        return (self.first_wrong / self.items) * (self.second_wrong / self.items)

    @property
    def expected_both(self) -> float | None:
        rate = self.expected_rate
        return None if rate is None else rate * self.items

    @property
    def lift(self) -> float | None:
        expected = self.expected_rate
        if not expected:
            return None
        return self.observed_rate / expected

    def error_rate(self, wrong: int) -> float | None:
        return wrong / self.items if self.items else None

    @property
    def fail_together(self) -> bool:
        if self.items < CO_ERROR_MIN_ITEMS or self.both_wrong < CO_ERROR_MIN_BOTH:
            return False
        independent = self.first_wrong * self.second_wrong
        return independent > 0 and (self.both_wrong * self.items >= CO_ERROR_LIFT * independent)


def co_errors_reading(e: CoErrors) -> str:
    """What a pair's shared errors mean, in a sentence an admin can act on."""
    if e.items < CO_ERROR_MIN_ITEMS:
        return f"Too few decided proposals to tell (fewer than {CO_ERROR_MIN_ITEMS})."
    if e.fail_together:
        return (
            f"They fail together: both wrong on {e.both_wrong}, where independent errors would "
            f"give {e.expected_both:.1f}. A second opinion from this pair adds little."
        )
    if e.both_wrong < CO_ERROR_MIN_BOTH:
        return f"Rarely wrong together (fewer than {CO_ERROR_MIN_BOTH} shared errors)."
    return (
        f"Both wrong on {e.both_wrong}, about what each lens's own error rate predicts "
        f"({e.expected_both:.1f}) if they err independently: not a shared blind spot."
    )


# What an admin should do with a lens, from its kappa with the reviewers.
TRUST, WATCH, DO_NOT_TRUST = "trust", "watch", "do_not_trust"
STANDING_LABELS = {TRUST: "Trust", WATCH: "Watch", DO_NOT_TRUST: "Do not trust"}


@dataclass(frozen=True)
class Standing:
    level: str  # TRUST, WATCH or DO_NOT_TRUST
    why: str

    @property
    def label(self) -> str:
        return STANDING_LABELS[self.level]


def lens_standing(
    kappa: Kappa, *, floor: float, drifting: bool, rolling: float | None, window: int
) -> Standing:
    """Trust, watch or do not trust a lens, and why.

    `kappa` is over the figures' window; `rolling` is the drift check's kappa
    over the lens's last `window` decisions, which decides `drifting`. A lens
    below its floor now is not trusted whatever its longer record says.
    """
    if drifting:
        shown = "undefined" if rolling is None else f"{rolling:.2f}"
        return Standing(
            DO_NOT_TRUST,
            f"its kappa over its last {window} decisions is {shown}, below its floor {floor:g}.",
        )
    if kappa.value is None:
        return Standing(WATCH, f"no kappa yet: {kappa.reason_text}.")
    if kappa.value < 0:
        return Standing(
            DO_NOT_TRUST,
            f"kappa {kappa.value:.2f} is below 0: it agrees with the reviewers less often "
            "than chance would.",
        )
    interval = f"its 95 % interval ({kappa.low:.2f} to {kappa.high:.2f})"
    if kappa.high < floor:
        return Standing(DO_NOT_TRUST, f"{interval} lies wholly below its floor {floor:g}.")
    if kappa.low >= floor:
        return Standing(TRUST, f"{interval} lies wholly at or above its floor {floor:g}.")
    return Standing(
        WATCH,
        f"kappa {kappa.value:.2f}, but {interval} straddles its floor {floor:g}: "
        "more decisions will settle it.",
    )


# Drift: the defaults an admin sees beside a lens's floor.
DEFAULT_FLOOR = 0.4  # kappa below 0.4 is "fair" or worse on Landis & Koch's (1977) scale
DEFAULT_WINDOW = 50  # the last 50 adjudications: a 95 % interval about ±0.22 wide at kappa 0.6

DRIFTED = "drifted"
RECOVERED = "recovered"


def drift_transition(*, drifting: bool, kappa: float | None, floor: float) -> str | None:
    """What one new rolling kappa changes: DRIFTED on crossing below, RECOVERED on coming back.

    An undefined kappa (too few adjudications, one class only) changes nothing:
    it is no evidence either way.
    """
    if kappa is None:
        return None
    if not drifting and kappa < floor:
        return DRIFTED
    if drifting and kappa >= floor:
        return RECOVERED
    return None
