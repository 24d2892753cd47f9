"""What a session's progress bar shows, worded once: the page renders it and the API serves it (``display``),
so the live bar (static/runner/progress.js) only draws what the server wrote."""

from results.presentation import format_duration

from .models import Session, SessionStatus


def progress_view(session: Session) -> dict:
    """The bar's fraction and percent (None: indeterminate), its figures line, and one entry per metric."""
    progress = session.progress or {}
    rounds, elapsed, remaining = progress.get("rounds_done", 0), progress.get("elapsed"), \
        progress.get("estimated_remaining")
    if session.finished:
        fraction = 1.0
    elif session.status == SessionStatus.RUNNING and elapsed is not None and remaining is not None:
        fraction = elapsed / (elapsed + remaining) if elapsed + remaining > 0 else 0.0
    else:
        fraction = None
    figures = [f"{rounds} round{'s' if rounds != 1 else ''}"]
    if session.status == SessionStatus.QUEUED:
        figures.append("waiting for a worker")
    else:
        figures.append(f"{format_duration(elapsed or 0)} elapsed")
        if not session.finished:
            figures.append(f"~{format_duration(remaining)} left" if remaining is not None else "time left unknown")
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
            "state": "✓ within target" if item.get("converged") else "… narrowing",
        })
    return {"status": session.status, "status_label": session.get_status_display(), "fraction": fraction,
            "percent": None if fraction is None else round(100 * fraction), "figures": " · ".join(figures),
            "metrics": metrics}
