"""Template filters that show what :mod:`results.presentation` words, so templates word nothing themselves."""

from django import template

from results import presentation

register = template.Library()


@register.filter
def confidence_level(rows) -> str:
    """The confidence level the rows share (``95%``), or ``per-series`` when they differ."""
    return presentation.level_text(rows)


@register.filter
def probability(value) -> str:
    """A p- or q-value as everywhere else: three decimals, ``<0.001`` below."""
    return presentation.format_probability(value)
