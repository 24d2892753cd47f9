"""Template filters that show what :mod:`results.presentation` words, so templates word nothing themselves."""

from html import escape

from django import template
from django.template.defaultfilters import urlencode
from django.urls import reverse
from django.utils.formats import localize
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from results import machine_state, nights, presentation
from results.decisions import INSUFFICIENT_HISTORY, NOT_COMPARED

register = template.Library()


@register.filter
def confidence_level(rows) -> str:
    """The confidence level the rows share (``95%``), or ``per-series`` when they differ."""
    return presentation.level_text(rows)


@register.simple_tag
def comparison_rows(rows, *, level: str, theta: str, show_bootstrap: bool, show_q: bool, show_run: bool,
                    alpha: float) -> str:
    """The ``<tr>`` of each row of a comparison table (:class:`results.rows.ComparisonRow`; the table's heading is
    ``results/_comparison_table.html``), built here in one pass, as :func:`results.presentation.evidence_html`
    builds the rows' evidence: two hundred rows of template lookups, tags and filters cost the overview more than
    its queries (about 40 ms of 230 at 1M results). Every text is escaped; sort keys are the numbers as a template
    shows them (localized)."""
    high_p_badge = (f'<span class="badge high-p-badge" title="q ≥ {_number(alpha)} (or p ≥ {_number(alpha)} where '
                    'there is no q): not statistically significant">high p</span>')
    history_path, run_path = _path_of("results:history"), _path_of("results:run")
    alerts_path = reverse("results:alerts")
    shown = []
    for index, row in enumerate(rows):
        verdict, slug, high_p = row.verdict, row.verdict_slug, row.high_p
        quiet = verdict in (INSUFFICIENT_HISTORY, NOT_COMPARED)
        history = f"{history_path(row.metric_id)}?machine={urlencode(row.machine)}"
        name = f'<a href="{escape(history)}">{_breakable(row.benchmark)}</a>'
        unit = f" ({escape(row.scale[1])})" if row.unit else ""
        from_run = (f'\n        <a class="quiet small from-run" href="{run_path(row.run_id)}">'
                    f'run #{row.run_id}</a>'
                    if show_run and row.run_id else "")
        spark = row.sparkline
        trend = (f'<svg class="sparkline" width="100" height="24" viewBox="0 0 100 24" role="img"><title>'
                 f'{escape(row.sparkline_label)}</title><polyline points="{escape(spark.points)}"/><circle '
                 f'cx="{escape(spark.last_x)}" cy="{escape(spark.last_y)}" r="2"/>{row.sparkline_points_html}</svg>'
                 if spark else '<span class="quiet">—</span>')
        note = f'<br><span class="quiet small">{escape(row.note)}</span>' if row.note and not quiet else ""
        change = escape(row.change or "—")
        if level == "per-series" and row.change:
            change += f' <span class="quiet small">{escape(row.level_text)}</span>'
        if theta == "per-series":
            change += f' <span class="quiet small theta">θ {escape(row.threshold_text)}</span>'
        bootstrap = (f'\n      <td class="num" data-sort="{_number(row.bootstrap.ratio if row.bootstrap else None)}">'
                     f'{escape(row.bootstrap_change or "—")}</td>' if show_bootstrap else "")
        qvalue = (f'\n      <td class="num" data-sort="{_number(row.qvalue)}">{escape(row.qvalue_text)}</td>'
                  if show_q else "")
        shown.append(
            f'<tr class="verdict-row verdict-{escape(slug)}{" high-p" if high_p else ""}" '
            f'data-verdict="{escape(verdict)}">'
            f'\n      <td class="name">\n        {name}\n        <span class="metric">{escape(row.metric)}{unit}</span>'
            f'{from_run}\n      </td>'
            f'\n      <td class="trend">{trend}</td>'
            f'\n      <td class="num" data-sort="{_number(row.baseline.mean)}">{escape(row.baseline_text)}{note}</td>'
            f'\n      <td class="num" data-sort="{_number(row.candidate.mean)}">{escape(row.candidate_text)}</td>'
            f'\n      <td class="num change" data-sort="{_number(row.ratio)}">{change}</td>{bootstrap}'
            f'\n      <td class="num" data-sort="{_number(row.pvalue)}">{escape(row.pvalue_text)}</td>{qvalue}'
            f'\n      <td class="verdict-cell" data-sort="{index}">'
            f'\n        <span class="verdict verdict-{escape(slug)}">{escape(row.verdict_label)}</span>'
            + (f"\n        {high_p_badge}" if high_p else "")
            + (f'\n        <a class="flag" href="{alerts_path}#alert-{row.alert_id}" title="Opened by this night: the '
               'nights since a shift against those before it">'
               f'{escape(presentation.said_alert(row.alert_id, row.alert_status))}</a>' if row.alert_id else "")
            + (f'\n        <br><span class="quiet small">{escape(row.note)}</span>' if quiet else "")
            + ("" if verdict == NOT_COMPARED else
               f'\n        <details class="why"><summary>why</summary><dl>{row.evidence_html}</dl></details>')
            + "\n      </td>\n    </tr>")
    return mark_safe("\n    ".join(shown))


def _path_of(name: str):
    """The address of the page `name` for any id, from the URLconf once per table (reverse() for each row would
    cost more than the row)."""
    head, tail = reverse(name, args=[1]).rsplit("/1/", 1)
    return lambda pk: f"{head}/{pk}/{tail}"


def _number(value) -> str:
    """A number as a template shows it (localized), "" for None."""
    return "" if value is None else localize(value)


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
    return presentation.quantity_in_scale(value, metric, half_width)


@register.simple_tag
def interval(low, high, metric) -> str:
    """``{% interval result.ci_low result.ci_high result.metric %}``: ``[1.21, 1.25] ms`` in the series' scale."""
    return presentation.interval_in_scale(low, high, metric)


@register.filter
def said_drift(per_night) -> str:
    """A change point read as a drift, in words, as the history chart says it."""
    return presentation.said_drift(per_night)


@register.filter
def breakable(name) -> str:
    """A benchmark's name, escaped, that may break after each dot (asv's dotted names are one long word)."""
    return mark_safe(_breakable(str(name)))


def _breakable(name: str) -> str:
    return escape(name).replace(".", ".<wbr>")


@register.filter
def said_alert(alert_id, status) -> str:
    """An alert as the row that opened it names it (:func:`results.presentation.said_alert`)."""
    return presentation.said_alert(alert_id, status)


@register.filter
def night_of(moment) -> str:
    """The night a run started in, as every page names nights ("night of 2026-11-27": a run started at 02:00
    belongs to the night before; :mod:`results.nights`)."""
    return presentation.said_night(nights.night_of(moment))


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
