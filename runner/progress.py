"""What a session's progress bar shows, worded once: the page renders it and the API serves it (``display``),
so the live bar (static/runner/progress.js) only draws what the server wrote.

A session ends when its intervals are narrow enough or its budget (seconds or rounds) is spent, whichever
comes first, so the bar shows the further of the two and the time left is never more than the budget leaves.
"""

from results.presentation import format_duration

from . import heartbeat
from .models import Session, SessionStatus

BUDGET_SPENT = "budget spent · finishing the round"


def progress_view(session: Session) -> dict:
    """The bar's fraction and percent (None: indeterminate), its figures line, and one entry per metric.

    The fraction is the largest of the intervals' progress (elapsed over elapsed plus the estimated time
    still needed), the time budget spent and the round budget spent; the time left is the smallest of the
    estimate, the time budget left and the rounds left at the mean round time so far.
    """
    progress = session.progress or {}
    rounds, elapsed, remaining = progress.get("rounds_done", 0), progress.get("elapsed"), \
        progress.get("estimated_remaining")
    job = session.job
    running = session.status == SessionStatus.RUNNING and elapsed is not None
    spent = running and (elapsed >= job.budget_seconds or rounds >= job.budget_rounds)
    if session.finished:
        fraction = 1.0
    elif running:
        shares = [elapsed / job.budget_seconds, rounds / job.budget_rounds]
        if remaining is not None:
            shares.append(elapsed / (elapsed + remaining) if elapsed + remaining > 0 else 0.0)
        fraction = min(1.0, max(shares))
    else:
        fraction = None
    figures = [f"{rounds} round{'s' if rounds != 1 else ''}"]
    if session.status == SessionStatus.QUEUED:
        machine = session.job.machine
        figures.append("waiting for a worker" if heartbeat.worker_alive(machine)
                       else f"waiting for a worker: none is consuming queue {machine.queue}")
    else:
        figures.append(f"{format_duration(elapsed or 0)} elapsed")
        if spent:
            figures.append(BUDGET_SPENT)
        elif running:
            figures.append(_time_left(remaining, budget_left=_budget_left(job, rounds=rounds, elapsed=elapsed)))
        elif not session.finished:
            figures.append("time left unknown")
    metrics = []
    for item in progress.get("metrics", []):
        width, target = item.get("relative_width"), item.get("target_width")
        if item.get("converged"):
            percent = 100
        elif width and target:
            percent = min(100, round(100 * target / width))
        else:
            percent = 0
        metrics.append({
            "workload": item.get("workload", ""), "metric": item.get("metric", ""),
            "width": "—" if width is None else f"{100 * width:.1f}%",
            "target": "—" if target is None else f"{100 * target:.1f}%", "percent": percent,
            "state": "✓ within target" if item.get("converged") else (
                "✗ not within target" if session.finished else "… narrowing"),
        })
    return {"status": session.status, "status_label": session.get_status_display(), "fraction": fraction,
            "percent": None if fraction is None else round(100 * fraction), "figures": " · ".join(figures),
            "metrics": metrics}


def _budget_left(job, *, rounds: int, elapsed: float) -> float:
    """Seconds until the first budget runs out: the time budget, or the rounds left at the mean round time."""
    left = job.budget_seconds - elapsed
    if rounds:
        left = min(left, (job.budget_rounds - rounds) * elapsed / rounds)
    return left


def _time_left(remaining: float | None, *, budget_left: float) -> str:
    if remaining is None or remaining > budget_left:
        return f"at most ~{format_duration(budget_left)} left (budget)"
    return f"~{format_duration(remaining)} left"


def round_records(rounds, scales: dict[str, tuple[float, str]]) -> list[dict]:
    """A session's rounds as its table shows them, for a download: each metric's reading in its one scale
    (a column ``<metric> (<unit>)``)."""
    records = []
    for row in rounds:
        readings = {}
        for name, value in row.readings.items():
            factor, unit = scales.get(name, (1.0, ""))
            readings[f"{name} ({unit})" if unit else name] = None if value is None else value / factor
        records.append({"index": row.index, "workload": row.workload, "work_amount": row.work_amount,
                        "duration_seconds": row.duration, **readings, "analysed": row.analysed,
                        "warnings": (row.monitor or {}).get("warnings", [])})
    return records
