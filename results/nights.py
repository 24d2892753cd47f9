"""Nights: the unit of the nightly overview.

A night starts at ``settings.PILOTWEB_NIGHT_STARTS_AT`` o'clock (in ``settings.TIME_ZONE``) and ends at the
same hour the next day; it is named by the date it starts on. Every suite of a project that posts on one
machine between those hours belongs to the same night, however many runs it stores.
"""

from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings


def _zone() -> ZoneInfo:
    return ZoneInfo(settings.TIME_ZONE)


def night_of(moment: datetime) -> date:
    """The night an aware moment belongs to."""
    local = moment.astimezone(_zone())
    return (local - timedelta(hours=settings.PILOTWEB_NIGHT_STARTS_AT)).date()


def night_bounds(night: date) -> tuple[datetime, datetime]:
    """The night's start (included) and end (excluded), as aware datetimes."""
    start = datetime.combine(night, time(settings.PILOTWEB_NIGHT_STARTS_AT), tzinfo=_zone())
    return start, datetime.combine(night + timedelta(days=1), time(settings.PILOTWEB_NIGHT_STARTS_AT),
                                   tzinfo=_zone())


def night_label(night: date) -> str:
    """``night of 2026-11-23 (12:00 to 12:00 UTC)``."""
    hour = settings.PILOTWEB_NIGHT_STARTS_AT
    return f"night of {night.isoformat()} ({hour:02d}:00 to {hour:02d}:00 {settings.TIME_ZONE})"
