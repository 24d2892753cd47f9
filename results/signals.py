"""Signals results sends to the apps built on it (the runner confirms regressions)."""

from django.dispatch import Signal

# Sent after commit when a comparison opened alerts: keyword arguments group_id, alert_ids.
alerts_opened = Signal()
