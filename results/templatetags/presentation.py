"""Template filters that show what :mod:`results.presentation` words, so templates word nothing themselves."""

from django import template
from django.utils.html import format_html

from results import machine_state, presentation

register = template.Library()


@register.filter
def confidence_level(rows) -> str:
    """The confidence level the rows share (``95%``), or ``per-series`` when they differ."""
    return presentation.level_text(rows)


@register.filter
def probability(value) -> str:
    """A p- or q-value as everywhere else: three decimals, ``<0.001`` below."""
    return presentation.format_probability(value)


@register.simple_tag
def commit_link(commit: str | None, project=None) -> str:
    """``{% commit_link revision.commit project %}``: the commit as ``<a href=…><code title=full>short</code></a>``
    on the project's forge (:func:`results.presentation.commit_url`), a plain ``<code>`` where it has no
    address; empty for no commit."""
    if not commit:
        return ""
    code = format_html('<code title="{}">{}</code>', commit, presentation.short_commit(commit))
    url = presentation.commit_url(commit, repository_url=getattr(project, "repository_url", ""),
                                  template=getattr(project, "commit_url_template", ""))
    return format_html('<a class="commit" href="{}" rel="noreferrer">{}</a>', url, code) if url else code


@register.simple_tag
def compare_commits_url(base: str | None, head: str | None, project=None) -> str:
    """``{% compare_commits_url base head project as url %}``: the forge's page of the commits from `base` to
    `head`, empty where the host has none."""
    return presentation.compare_commits_url(base or "", head or "",
                                            repository_url=getattr(project, "repository_url", "")) or ""


@register.simple_tag
def revision_note(revision) -> str:
    """``{% revision_note run.revision %}``: “the first line of its message” by its author, as far as the
    revision has them (the whole message on hover); empty otherwise."""
    message, author = getattr(revision, "message", ""), getattr(revision, "author", "")
    if not message and not author:
        return ""
    if not message:
        return format_html('<span class="revision-note">by {}</span>', author)
    subject = format_html("“{}”", presentation.commit_subject(message))
    if author:
        subject = format_html("{} by {}", subject, author)
    return format_html('<span class="revision-note" title="{}">{}</span>', message.strip(), subject)


@register.filter
def shared_threshold(rows) -> str:
    """θ the rows share (``±2%``), or ``per-series`` when they differ."""
    thresholds = {row.threshold for row in rows}
    return presentation.format_threshold(thresholds.pop()) if len(thresholds) == 1 else "per-series"


@register.simple_tag
def quantity(value, metric, half_width=None) -> str:
    """``{% quantity result.mean result.metric %}``: a value in its series' one scale, three significant digits."""
    return presentation.format_quantity(value, half_width, presentation.metric_scale(metric, value))


@register.simple_tag
def interval(low, high, metric) -> str:
    """``{% interval result.ci_low result.ci_high result.metric %}``: ``[1.21, 1.25] ms`` in the series' scale."""
    return presentation.format_interval(low, high, presentation.metric_scale(metric, low))


@register.filter
def percent_level(level) -> str:
    """A confidence level as everywhere else: ``95%``."""
    return presentation.format_level(level)


@register.simple_tag(takes_context=True)
def download_href(context, format_name: str) -> str:
    """``{% download_href "csv" %}``: this page's address as a download, its filters kept (not its page: a
    download holds every row)."""
    query = context["request"].GET.copy()
    for name in ("page", "format"):
        query.pop(name, None)
    query["format"] = format_name
    return "?" + query.urlencode()


@register.simple_tag
def reading(value, metric: str, scales: dict) -> str:
    """``{% reading value name scales %}``: a session's reading of a metric in that metric's one scale."""
    return presentation.format_quantity(value, None, scales.get(metric, (1.0, "")))


@register.filter
def environment_note(run) -> str:
    """The machine environment the night was recognised in (results.environment), or ""."""
    return machine_state.environment_note(run.environment_match) or ""


@register.filter
def neighbour_warning(run) -> str:
    """What the run's machine had besides the benchmark (other processes' cores), or ""."""
    return machine_state.neighbour_warning(run.environment, "this run") or ""
