"""The one row type of every comparison shown anywhere: a series' candidate against its baseline.

Computed by :mod:`results.comparisons` (stored or on the fly, from runs or from files) and read by the
pages, the API, the ``compare`` command and the pull-request Markdown. Missing numbers are None, never
NaN; an unbounded interval has ``bounded=False`` and no limits. What a row shows is formatted by
:mod:`results.presentation` and decided by :mod:`results.decisions`; the properties below only delegate.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from . import decisions, presentation


@dataclass(frozen=True)
class Side:
    """One side of a row: a mean, the statistics it came from and the half-width of its interval at the
    comparison's confidence level (None where there is none)."""

    mean: float | None
    variance: float | None = None
    n: int | None = None
    subsession_size: int | None = None
    half_width: float | None = None
    independent: bool = True


@dataclass(frozen=True)
class Interval:
    """A ratio of means with its interval: no limits when unbounded."""

    ratio: float | None
    low: float | None
    high: float | None
    bounded: bool

    @property
    def change(self) -> str:
        """``+5.5% [+3.0%, +8.0%]``; empty without a ratio."""
        if self.ratio is None:
            return ""
        return presentation.format_change(self.ratio, self.low if self.bounded else None,
                                          self.high if self.bounded else None)


@dataclass(frozen=True)
class Sparkline:
    """Recent run means as an SVG polyline in a WIDTH × HEIGHT box, the newest point marked."""

    WIDTH = 100
    HEIGHT = 24
    points: str
    last_x: str
    last_y: str
    count: int
    low: float
    high: float

    means: tuple[float, ...] = ()
    dates: tuple[str, ...] = ()

    @classmethod
    def of(cls, means: list[float], dates: list[str] | None = None) -> "Sparkline":
        """Oldest to newest means scaled into the box, 2 px of padding; a flat series is drawn mid-height.
        ``dates`` label each point's hover (its night)."""
        pad = 2.0
        low, high = min(means), max(means)
        span = high - low
        step = (cls.WIDTH - 2 * pad) / max(len(means) - 1, 1)
        coordinates = [
            (pad + i * step, cls.HEIGHT / 2 if span == 0 else pad + (high - mean) / span * (cls.HEIGHT - 2 * pad))
            for i, mean in enumerate(means)
        ]
        # Coordinates as text: the template shows them as they are, without number localization.
        return cls(points=" ".join(f"{x:.1f},{y:.1f}" for x, y in coordinates), last_x=f"{coordinates[-1][0]:.1f}",
                   last_y=f"{coordinates[-1][1]:.1f}", count=len(means), low=low, high=high, means=tuple(means),
                   dates=tuple(dates or ()))

    def hover(self, scale: tuple[float, str]) -> list[tuple[str, str, str]]:
        """``(x, y, "2026-10-01: 1.00 s")`` of each point, in the series' scale."""
        coordinates = [pair.split(",") for pair in self.points.split()]
        dates = self.dates or ("",) * len(self.means)
        return [(x, y, f"{day}: {presentation.format_quantity(mean, None, scale)}".removeprefix(": "))
                for (x, y), day, mean in zip(coordinates, dates, self.means)]

    def label(self, scale: tuple[float, str]) -> str:
        return (f"{self.count} recent nightly means, {presentation.format_quantity(self.low, None, scale)} to "
                f"{presentation.format_quantity(self.high, None, scale)}")


@dataclass(frozen=True)
class ComparisonRow:
    """A series' candidate against its baseline, with every number the tables show.

    ``method`` says what the baseline is (history of K runs, one pairwise run, files). ``ratio``,
    ``low``, ``high`` and ``bounded`` are Fieller's interval (spec §6); ``bootstrap`` the resampled one
    where it was computed, and ``verdict_from`` which of the two the verdict was drawn from. The
    confidence level was decided when the row was computed and is the one of both sides' half-widths.
    """

    benchmark: str
    metric: str
    unit: str
    direction: str
    method: str
    baseline: Side
    candidate: Side
    ratio: float | None
    low: float | None
    high: float | None
    bounded: bool
    statistic: float | None
    df: float | None
    pvalue: float | None
    qvalue: float | None
    verdict: str
    threshold: float
    confidence_level: float
    alpha: float = decisions.ALPHA
    bootstrap: Interval | None = None
    verdict_from: str = "fieller"
    note: str = ""
    metric_id: int | None = None
    machine: str = ""
    run_id: int | None = None
    comparison_id: int | None = None
    alert_id: int | None = None
    alert_status: str | None = None
    inputs: Mapping = field(default_factory=dict)
    sparkline: Sparkline | None = None
    display_unit: str = ""

    @property
    def label(self) -> str:
        return f"{self.benchmark} ({self.metric})"

    @property
    def interval(self) -> Interval:
        """Fieller's interval, as an :class:`Interval`."""
        return Interval(self.ratio, self.low, self.high, self.bounded)

    @property
    def decisive(self) -> Interval:
        """The interval the verdict was drawn from."""
        return self.bootstrap if self.verdict_from == "bootstrap" and self.bootstrap is not None else self.interval

    @cached_property
    def change(self) -> str:
        return self.interval.change

    @property
    def bootstrap_change(self) -> str:
        return "" if self.bootstrap is None else self.bootstrap.change

    @property
    def significant(self) -> bool:
        return decisions.is_significant(self.pvalue, self.qvalue, self.alpha)

    @property
    def high_p(self) -> bool:
        return decisions.is_high_p(self.pvalue, self.qvalue, self.alpha)

    @property
    def verdict_label(self) -> str:
        return presentation.verdict_label(self.verdict)

    @property
    def verdict_slug(self) -> str:
        return presentation.verdict_slug(self.verdict)

    @property
    def verdict_icon(self) -> str:
        return presentation.VERDICT_ICONS.get(self.verdict, "")

    @property
    def sort_key(self) -> tuple:
        return decisions.worst_first(self.verdict, self.ratio, self.benchmark, self.metric)

    @cached_property
    def scale(self) -> tuple[float, str]:
        """The series' one scale (its metric's display unit); chosen from the row's means for files."""
        if self.display_unit:
            return presentation.series_scale(self.unit, self.display_unit)
        reference = self.baseline.mean if self.baseline.mean is not None else self.candidate.mean
        return presentation.unit_scale(self.unit, reference)

    @property
    def sparkline_label(self) -> str:
        return "" if self.sparkline is None else self.sparkline.label(self.scale)

    @property
    def sparkline_points(self) -> list[tuple[str, str, str]]:
        return [] if self.sparkline is None else self.sparkline.hover(self.scale)

    @property
    def sparkline_points_html(self) -> str:
        return presentation.sparkline_points_html(self.sparkline_points)

    @property
    def baseline_text(self) -> str:
        return presentation.format_quantity(self.baseline.mean, self.baseline.half_width, self.scale)

    @property
    def candidate_text(self) -> str:
        return presentation.format_quantity(self.candidate.mean, self.candidate.half_width, self.scale)

    @property
    def pvalue_text(self) -> str:
        return presentation.format_probability(self.pvalue)

    @property
    def qvalue_text(self) -> str:
        return presentation.format_probability(self.qvalue)

    @property
    def probabilities_said(self) -> str:
        """``p = 0.012, q = 0.030`` (``p < 0.001``) for a sentence."""
        return f"{presentation.said_probability('p', self.pvalue)}, {presentation.said_probability('q', self.qvalue)}"

    @property
    def threshold_text(self) -> str:
        return presentation.format_threshold(self.threshold)

    @cached_property
    def evidence(self) -> list[tuple[str, str]]:
        return presentation.evidence(self)

    @property
    def evidence_html(self) -> str:
        return presentation.evidence_html(self)

    @property
    def level_text(self) -> str:
        return presentation.format_level(self.confidence_level)
