"""Receivers of the signals results sends: the runner re-measures what results flagged."""

from .services import confirm_alerts


def confirm_opened_alerts(sender, *, alert_ids: list[int], **kwargs) -> None:
    """Queue interleaved A/B confirmation sessions for alerts a comparison has just opened."""
    confirm_alerts(alert_ids=alert_ids)
