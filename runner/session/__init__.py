"""Pilot's adaptive benchmark session, framework-free: driven by callables, testable without Celery.

A session runs rounds of one workload (or interleaved rounds of several, to compare them) and
re-analyses after every round until the confidence intervals say enough (Y. Li et al., "Pilot: a
framework that understands how to do performance benchmarks the right way", §III-A, §III-E, §III-F;
the formulas are ``shared/spec/statistics.md`` §2–§5). Everything is a function of the rounds
measured so far, so a session resumed from stored rounds reaches the decisions an uninterrupted one
would have reached.

- :mod:`.targets`: what a session aims for (metrics, level, width, budget, warm-up removal);
- :mod:`.rounds`: one round's outcome and its stored record;
- :mod:`.plan`: how much work the next round does;
- :mod:`.estimates`: what one metric's estimate holds (:class:`MetricEstimate`: its interval on the
  variance of the mean of spec §2a, the samples still needed) and a round's stable phase
  (:func:`round_stable_phase`);
- :mod:`.comparison`: A/B pairs (:class:`PairComparison`) decided by :func:`compare`, by default with an
  anytime-valid sequential rule (spec §5);
- :mod:`.analysis`: the rounds analysed (:func:`analyse`, :func:`analysed_samples`, :func:`progress`; pages
  replay stored rounds with them): every metric estimated, and the state after each round that the loop
  decides from;
- :mod:`.levels`: a bisection's session, three commits decided by which level the candidate is at
  (:class:`LevelCheck` in the targets, :func:`decide_level`);
- :mod:`.loop`: :func:`run_session`, the loop itself.
"""

from .analysis import MetricProgress, Progress, analyse, analysed_samples, progress
from .comparison import PairComparison, compare
from .estimates import MetricEstimate, round_stable_phase
from .loop import SessionOutcome, SessionStatus, run_session
from .plan import work_amount_plan
from .rounds import RoundOutcome, RoundRecord, Workload
from .targets import ComparisonRule, MetricSpec, SessionTargets, WarmupMethod

__all__ = [
    "ComparisonRule",
    "MetricEstimate",
    "MetricProgress",
    "MetricSpec",
    "PairComparison",
    "Progress",
    "RoundOutcome",
    "RoundRecord",
    "SessionOutcome",
    "SessionStatus",
    "SessionTargets",
    "WarmupMethod",
    "Workload",
    "analyse",
    "analysed_samples",
    "compare",
    "progress",
    "round_stable_phase",
    "run_session",
    "work_amount_plan",
]
