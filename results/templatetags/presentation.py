"""Template filters that show what :mod:`results.presentation` words, so templates word nothing themselves."""

from django import template

from results import presentation

register = template.Library()


@register.filter
def confidence_level(rows) -> str:
    """The confidence level the rows share (``95%``), or ``per-series`` when they differ."""
    return presentation.level_text(rows)
