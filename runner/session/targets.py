"""What a session aims for: the metrics it reads and the targets it stops at (level, width, budget,
warm-up removal, the subsession analysis's bounds)."""

import enum
from dataclasses import dataclass

from results.stats import Direction

from .levels import LevelCheck


class WarmupMethod(enum.StrEnum):
    """How non-stable phases are removed (Pilot §III-A; spec §4)."""

    EDM = "edm"  # stable phase of each round's unit readings
    WPS = "wps"  # regression t = α + w/v over rounds
    NONE = "none"


class ComparisonRule(enum.StrEnum):
    """How an A/B session decides that two workloads differ (spec §5).

    ``anytime``: the normal-mixture confidence sequence (:func:`results.stats.sequential_comparison`),
    wrong at most α of the time however often the session looks. ``pilot``: Pilot's rule (CIs that do
    not overlap, or Welch's p < α, after every round), kept for Pilot's numbers: looking after every
    round, it declared identical workloads different in 6–22% of sessions at α = 1%.
    """

    ANYTIME = "anytime"
    PILOT = "pilot"


@dataclass(frozen=True)
class MetricSpec:
    """A performance index (spec §1): a name, a unit and the direction that is better."""

    name: str
    unit: str
    direction: str = Direction.LOWER_IS_BETTER

    def __post_init__(self):
        if not self.name:
            raise ValueError("A metric needs a name.")
        try:
            object.__setattr__(self, "direction", Direction(self.direction))
        except ValueError:
            raise ValueError(
                f"`direction` of {self.name!r} must be 'lower_is_better' or 'higher_is_better'; "
                f"got {self.direction!r}."
            ) from None


@dataclass(frozen=True)
class SessionTargets:
    """What a session must reach, and what it may spend (Pilot §IV's benchmark declaration).

    Attributes
    ----------
    confidence : float
        Confidence level c of every interval.
    target_width : float
        Desired *full* CI width relative to |mean| (Pilot default 10%).
    max_autocorrelation : float
        ρ_max of subsession analysis (spec §2).
    min_subsessions : int
        Fewest subsessions that make r_1 and a CI meaningful (spec §2).
    work_range : tuple of float
        Valid work amounts (a, b), ``0 < a < b``.
    min_round_duration : float
        Seconds; a shorter round is stored but not analysed and the next work amount doubles
        (Pilot §III-A).
    budget_seconds, budget_rounds : float, int
        The session stops when either is spent (checked before every round).
    warmup : {"edm", "wps", "none"}
        Non-stable phase removal: EDM on each round's unit readings, the WPS regression on round
        durations, or nothing.
    alpha : float
        Comparisons: the probability of a wrong decision about a pair (default 1%, Pilot's). Under the
        ``pilot`` rule, Welch's p < alpha at a look resolves a pair whose CIs overlap (§III-F).
    comparison_rule : {"anytime", "pilot"}
        Comparisons: how a pair is decided (:class:`ComparisonRule`).
    threshold : float
        Comparisons: θ, the smallest relative difference that matters (spec §7; default 2%). The anytime
        rule is tuned to a difference of 2θ (:attr:`mixture_scale`), ends a pair whose ratio interval lies
        within 1 ± θ as "no difference larger than θ", and estimates the time still needed from θ.
    require_width_in_comparison : bool
        Comparisons: also require every CI to reach `target_width` (Pilot's optional third rule).
    trial_rounds : int
        Long-enough rounds run at the lowest work amount to learn the duration per work unit
        (Pilot §III-E).
    first_estimate_rounds : int
        n of Pilot eq. 5: rounds that grow linearly in duration before the midpoint sequence.
    first_estimate_seconds : float
        T of Pilot eq. 5: the time by which those rounds should give a first estimate (60 s).
    edm_min_size : int
        Minimum segment length of EDM (BreakoutDetection's ``min.size``). With EDM, a round with
        at most twice as many unit readings cannot have a warm-up split off and a dominant stable
        phase left: it is stored but not analysed, like a short round, and the next round is made
        long enough.
    whole_units : bool
        Round work amounts up to whole work units.
    level_check : LevelCheck or None
        A bisection's session (:mod:`.levels`): its three workloads are decided by which level the candidate is
        at, and the session ends when that is decided (the pairs and the widths are not waited for).
    """

    confidence: float = 0.95
    target_width: float = 0.10
    max_autocorrelation: float = 0.1
    min_subsessions: int = 10
    work_range: tuple[float, float] = (1, 1000)
    min_round_duration: float = 0.05
    budget_seconds: float = 600.0
    budget_rounds: int = 1000
    warmup: str = WarmupMethod.EDM
    alpha: float = 0.01
    comparison_rule: str = ComparisonRule.ANYTIME
    threshold: float = 0.02
    require_width_in_comparison: bool = True
    trial_rounds: int = 3
    first_estimate_rounds: int = 50
    first_estimate_seconds: float = 60.0
    edm_min_size: int = 30
    whole_units: bool = True
    level_check: LevelCheck | None = None

    @property
    def mixture_scale(self) -> float:
        """τ of the anytime rule (:func:`results.stats.sequential_comparison`), relative: 2θ. Tuned to θ
        itself, the rule spends its evidence on differences a session rarely resolves within its budget;
        measured looking every 15 readings a side at 10% noise (2,000 sessions, 750 readings), τ = 2θ decides a
        5% difference after a median of 120 readings a side instead of 135 (the fixed-sample Welch test at
        α = 1% and 90% power needs 121), and a 2% one by 750 readings in 64% of sessions instead of 67%."""
        return 2.0 * self.threshold

    def __post_init__(self):
        try:
            object.__setattr__(self, "warmup", WarmupMethod(self.warmup))
        except ValueError:
            raise ValueError(f"`warmup` must be 'edm', 'wps' or 'none'; got {self.warmup!r}.") from None
        try:
            object.__setattr__(self, "comparison_rule", ComparisonRule(self.comparison_rule))
        except ValueError:
            raise ValueError(
                f"`comparison_rule` must be 'anytime' or 'pilot'; got {self.comparison_rule!r}.") from None
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"`threshold` must be in (0, 1); got {self.threshold!r}.")
        for name in ("confidence", "alpha"):
            if not 0.0 < getattr(self, name) < 1.0:
                raise ValueError(f"`{name}` must be in (0, 1); got {getattr(self, name)!r}.")
        if not self.target_width > 0.0:
            raise ValueError(f"`target_width` must be positive; got {self.target_width!r}.")
        if not 0.0 <= self.max_autocorrelation < 1.0:
            raise ValueError(f"`max_autocorrelation` must be in [0, 1); got {self.max_autocorrelation!r}.")
        low, high = self.work_range
        if not 0.0 < low < high:
            raise ValueError(f"`work_range` must be (a, b) with 0 < a < b; got {self.work_range!r}.")
        object.__setattr__(self, "work_range", (float(low), float(high)))
        for name, minimum in (("min_subsessions", 3), ("budget_rounds", 1), ("trial_rounds", 1),
                              ("first_estimate_rounds", 2), ("edm_min_size", 2)):
            if getattr(self, name) < minimum:
                raise ValueError(f"`{name}` must be at least {minimum}; got {getattr(self, name)!r}.")
        for name in ("min_round_duration", "budget_seconds", "first_estimate_seconds"):
            if not getattr(self, name) >= 0.0:
                raise ValueError(f"`{name}` must be at least 0; got {getattr(self, name)!r}.")


def check_metrics(metrics):
    metrics = tuple(metrics)
    if not metrics:
        raise ValueError("A session needs at least one metric.")
    names = [spec.name for spec in metrics]
    if len(set(names)) != len(names):
        raise ValueError(f"Metric names must be unique; got {names}.")
    return metrics
