"""Two runs compared: the compare page's pickers and shortcuts, tonight's baseline, a pull request's review."""


from collections.abc import Sequence
from dataclasses import dataclass, field, replace


from django.db.models import (
    Case,
    F,
    Q,
    Value,
    When,
)

from ..baselines import pull_request_bases
from ..stored_rows import stored_rows
from ..models import (
    Comparison,
    ComparisonMethod,
    FailedResult,
    Result,
    Run,
    series_nights,
)
from .. import access, machine_state, presentation
from ..rows import ComparisonRow
from .table_rows import _sparklines, _with_sparklines


RECENT_RUNS = 200


def recent_runs(*, viewer, search: str = "", include: Sequence[int] = (), limit: int = RECENT_RUNS) -> list[dict]:
    """The newest ``limit`` runs `viewer` may read, for the compare page's pickers, by project then newest first:
    those whose commit starts with `search` or whose branch contains it (case-insensitive; empty: every run),
    and the runs `include` names whatever they are (the ones chosen). One query of plain rows."""
    queryset = access.visible(Run.objects.all(), viewer)
    if search:
        queryset = queryset.filter(Q(revision__commit__istartswith=search) | Q(revision__branch__icontains=search)
                                   | Q(pk__in=include))
    newest = ["-started_at", "-id"]
    if include:
        queryset = queryset.annotate(chosen=Case(When(pk__in=include, then=Value(0)), default=Value(1)))
        newest.insert(0, "chosen")
    rows = list(queryset.order_by(*newest).values(
        "pk", "kind", "started_at", project_name=F("project__name"), machine_name=F("machine__name"),
        commit=F("revision__commit"), branch=F("revision__branch"))[:limit])
    rows.sort(key=lambda row: (row["started_at"], row["pk"]), reverse=True)
    rows.sort(key=lambda row: row["project_name"])
    return rows


COMPARE_SHORTCUTS = {"nightly": "against tonight's baseline", "base": "against its base"}
"""The compare page's shortcuts: a run against the newest nightly before it, a pull request against its base."""


def shortcut_baseline(*, candidate_id: int, against: str, viewer) -> int:
    """The run a compare shortcut (:data:`COMPARE_SHORTCUTS`) takes as the baseline of run `candidate_id`.

    ``nightly``: the newest completed nightly run of the project's default branch on the same machine
    started before it that measured one of its series (several suites may post a run each night). ``base``:
    for a pull-request run, the newest run of the base results its own comparison takes, series by series
    (:func:`results.baselines.pull_request_bases`, leaving out the series that fell back to the default
    branch). A few queries. Raises Run.DoesNotExist, saying which run is
    missing; ValueError for ``base`` of a run without a base commit, or an unknown shortcut.
    """
    if against not in COMPARE_SHORTCUTS:
        raise ValueError(f"Unknown shortcut {against!r}: choose {' or '.join(COMPARE_SHORTCUTS)}.")
    run = access.visible(Run.objects.select_related("project", "machine", "revision"), viewer).filter(
        pk=candidate_id).first()
    if run is None:
        raise Run.DoesNotExist(f"No run {candidate_id}.")
    if against == "nightly":
        found = nightly_before(run)
        if found is None:
            raise Run.DoesNotExist(no_nightly_before(run))
        return found
    base_commit = run.revision.base_commit if run.kind == Run.Kind.PR and run.revision else ""
    if not base_commit:
        raise ValueError(f"Run #{run.pk} is not a pull request's with a base commit: it has no base to compare with.")
    # The base the pull request's own comparison took, series by series: the newest run holding one of them.
    bases = pull_request_bases(run, list(Result.objects.filter(run=run).values_list("metric_id", flat=True)))
    found = (Run.objects.filter(pk__in=[base.run_id for base in bases.values() if not base.fallback])
             .order_by("-started_at", "-id").values_list("pk", flat=True).first())
    if found is None:
        raise Run.DoesNotExist(f"No run of the base commit {presentation.short_commit(base_commit)} on "
                               f"{run.machine.name}.")
    return found


def nightly_before(run: Run) -> int | None:
    """The newest completed nightly run of the project's default branch on `run`'s machine, started before it,
    that measured one of its series (several suites may post a run each night): tonight's baseline; one
    query."""
    return (Run.objects.filter(
        series_nights(branch=run.project.default_branch), project_id=run.project_id, machine_id=run.machine_id,
        kind=Run.Kind.NIGHTLY, started_at__lt=run.started_at,
        pk__in=Result.objects.filter(metric_id__in=Result.objects.filter(run=run).values("metric_id"))
        .values("run_id"),
    ).exclude(pk=run.pk).order_by("-started_at", "-id").values_list("pk", flat=True).first())


def no_nightly_before(run: Run) -> str:
    """Why a run has no nightly baseline, saying what was looked for."""
    return (f"No nightly run of {run.project.default_branch} on {run.machine.name} started before run #{run.pk} "
            "measured any of its benchmarks (runs of other kinds, branches or machines are not its baseline).")


@dataclass(frozen=True)
class PullRequestReview:
    """A pull-request run against its base: the stored pairwise comparisons, and the runs their base
    results came from (each series is compared with its own newest base-commit result, so a base
    measured by several suites has several runs); ``fallbacks`` counts the series compared with a
    default-branch result because the base commit has none of them on this machine."""

    run: Run
    base_runs: list[Run]
    rows: list[ComparisonRow]
    counts: dict[str, int]
    fallbacks: int = 0
    failures: list[FailedResult] = field(default_factory=list)
    nightly_baseline: int | None = None

    @property
    def compared(self) -> bool:
        return self.run.compared_at is not None

    @property
    def state_differences(self) -> list[str]:
        """How the machine's state differed between the base run and the head, enough to move their numbers
        (:func:`results.machine_state.state_differences`)."""
        base = self.base_run
        return [] if base is None else machine_state.state_differences(base.environment, self.run.environment)

    @property
    def base_run(self) -> Run | None:
        """The newest base run (the Compare page's baseline)."""
        return self.base_runs[-1] if self.base_runs else None


def pr_review(*, run_id: int, viewer) -> PullRequestReview:
    """A pull-request run with its stored pairwise comparisons, worst first; a fixed number of queries.

    Raises Run.DoesNotExist when there is no pull-request run with that id that `viewer` may read.
    """
    run = access.visible(Run.objects.select_related("project", "machine", "revision"), viewer).get(
        pk=run_id, kind=Run.Kind.PR)
    both = list(Comparison.objects.filter(candidate__run_id=run_id,
                                          method__in=[ComparisonMethod.PAIRWISE, ComparisonMethod.BOOTSTRAP])
                .select_related("candidate__metric__benchmark", "baseline__run__revision", "baseline__run__machine")
                .defer("candidate__samples", "baseline__samples"))
    stored = [c for c in both if c.method == ComparisonMethod.PAIRWISE]
    bootstrapped = {row.metric_id: row.bootstrap for row in stored_rows(
        [(c.candidate, c) for c in both if c.method == ComparisonMethod.BOOTSTRAP])}
    base_runs = sorted({c.baseline.run.pk: c.baseline.run for c in stored if c.baseline is not None}.values(),
                       key=lambda base: (base.started_at, base.pk))
    sparklines = _sparklines({(c.candidate.metric_id, run.machine_id) for c in stored}, projects={run.project_id})
    rows = [replace(row, bootstrap=bootstrapped.get(row.metric_id))
            for row in stored_rows([(c.candidate, c) for c in stored], machines={run.pk: run.machine.name})]
    rows = _with_sparklines(rows, sparklines, machine_ids={run.pk: run.machine_id})
    failures = list(FailedResult.objects.filter(run=run).select_related("metric__benchmark")
                    .order_by("metric__benchmark__name", "metric__name"))
    return PullRequestReview(run=run, base_runs=base_runs, rows=rows, counts=presentation.verdict_counts(rows),
                             fallbacks=sum(1 for c in stored if (c.inputs or {}).get("base_fallback")),
                             failures=failures, nightly_baseline=nightly_before(run))
