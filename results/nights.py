"""Nights: the unit of the nightly overview.

A night starts at ``settings.PILOTWEB_NIGHT_STARTS_AT`` o'clock (in ``settings.TIME_ZONE``) and ends at the
same hour the next day; it is named by the date it starts on. Every suite of a project that posts on one
machine between those hours belongs to the same night, however many runs it stores.
"""

from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.exceptions import ValidationError

FIRST_DAY = date(1, 1, 2)
"""The first night a page names: a day earlier, its start (in any time zone) cannot be represented."""
LAST_DAY = date(9998, 12, 31)
"""The last day a page accepts: a day later, its end (the next day, in any time zone) cannot be represented."""


def validate_day(day: date) -> None:
    """A day a page can bound a query by: never so late that its end overflows (a 400, not a 500)."""
    if day > LAST_DAY:
        raise ValidationError(f"Choose a day up to {LAST_DAY.isoformat()}.")


def _zone() -> ZoneInfo:
    return ZoneInfo(settings.TIME_ZONE)


def night_of(moment: datetime) -> date:
    """The night an aware moment belongs to. Runs are posted from 1970 to 2100 (:mod:`results.schemas`); a
    moment stored before that rule near the ends of the calendar is given the first or last night a page can
    name, rather than overflowing (which took the overview down for everyone)."""
    try:
        local = moment.astimezone(_zone())
        return (local - timedelta(hours=settings.PILOTWEB_NIGHT_STARTS_AT)).date()
    except OverflowError:
        return FIRST_DAY if moment.year < 2 else LAST_DAY


def night_bounds(night: date) -> tuple[datetime, datetime]:
    """The night's start (included) and end (excluded), as aware datetimes (a night outside
    [FIRST_DAY, LAST_DAY] is taken as the nearest of them)."""
    night = min(max(night, FIRST_DAY), LAST_DAY)
    start = datetime.combine(night, time(settings.PILOTWEB_NIGHT_STARTS_AT), tzinfo=_zone())
    return start, datetime.combine(night + timedelta(days=1), time(settings.PILOTWEB_NIGHT_STARTS_AT),
                                   tzinfo=_zone())
