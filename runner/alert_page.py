"""The runner's part of the alert list (registered with :func:`results.extensions.add_to_alerts`): the
interleaved A/B sessions that re-measured each alert, with what they found."""

from collections import defaultdict
from collections.abc import Sequence

from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from results.models import Alert

from .models import Session
from .pairs import session_pairs


def confirmation_sessions(alerts: Sequence[Alert]) -> dict[int, SafeString]:
    """HTML by alert id for the alerts a session confirmed or is confirming; one query."""
    sessions = defaultdict(list)
    for session in (Session.objects.filter(confirms__in=alerts).select_related("job__machine")
                    .order_by("queued_at", "id")):
        sessions[session.confirms_id].append((session, session_pairs(session)))
    return {alert_id: mark_safe(render_to_string("runner/_alert_confirmations.html", {"confirmations": listed}))
            for alert_id, listed in sessions.items()}


def confirmation_session_ids(alerts: Sequence[Alert]) -> dict[int, list[int]]:
    """Ids of the sessions confirming each alert, oldest first; one query."""
    found = defaultdict(list)
    for alert_id, session_id in (Session.objects.filter(confirms__in=alerts).order_by("queued_at", "id")
                                 .values_list("confirms_id", "pk")):
        found[alert_id].append(session_id)
    return dict(found)
