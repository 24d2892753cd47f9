"""How results and comparisons are shown, in one place: verdict labels and icons (the verdicts and the rules
that decide them are :mod:`results.decisions`'), probabilities, changes, quantities with their unit scaled once
per series, and durations.

Pages, the API, the ``compare`` command, the pull-request Markdown, charts and the runner's progress all
format through here, so a number reads the same wherever it is shown. Pure functions of values: no
models, no queries. Nothing here imports Django at import time (the two HTML helpers and the file-size one
import it when called), so ``manage.py compare --files`` formats its tables without starting Django.
"""

import html
import math
import re
from collections import Counter
from datetime import date
from urllib.parse import quote, urlsplit

from .decisions import INSUFFICIENT_HISTORY, NOT_COMPARED, SUSPECTED_IMPROVEMENT, SUSPECTED_REGRESSION, VERDICT_ORDER
from .stats import Verdict, format_change

__all__ = [
    "COMMIT_PLACEHOLDER",
    "VERDICT_ICONS",
    "commit_subject",
    "commit_url",
    "compare_commits_url",
    "format_change",
    "format_relative_change",
    "interval_in_scale",
    "quantity_in_scale",
    "format_duration",
    "format_level",
    "format_probability",
    "format_threshold",
    "evidence",
    "in_verdict_order",
    "verdict_counts",
    "format_quantity",
    "short_commit",
    "display_unit",
    "metric_scale",
    "format_interval",
    "format_number",
    "series_scale",
    "unit_scale",
    "verdict_label",
    "verdict_slug",
]

VERDICT_ICONS = {Verdict.REGRESSION: "▲", SUSPECTED_REGRESSION: "△", Verdict.IMPROVEMENT: "▼",
                 SUSPECTED_IMPROVEMENT: "▽", Verdict.INCONCLUSIVE: "?", Verdict.NO_CHANGE: "≈",
                 INSUFFICIENT_HISTORY: "·", NOT_COMPARED: "–"}
"""An icon beside every verdict, so colour is never the only signal."""

def quantity_in_scale(value, metric, half_width=None) -> str:
    """A value of a series in the series' one scale (:func:`metric_scale`), three significant digits."""
    return format_quantity(value, half_width, metric_scale(metric, value))


def interval_in_scale(low, high, metric) -> str:
    """An interval of a series in the series' one scale: ``[1.21, 1.25] ms``."""
    return format_interval(low, high, metric_scale(metric, low))


def format_relative_change(change: float | None, low: float | None, high: float | None) -> str:
    """A relative change (0.1: 10% more) and its interval as every page writes a change ("+10.0% [+8.9%,
    +11.4%]"); empty for none, "[unbounded]" for a missing limit."""
    if change is None:
        return ""
    return format_change(1.0 + change, None if low is None else 1.0 + low, None if high is None else 1.0 + high)


TIME_SCALES = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def verdict_label(verdict: str | None) -> str:
    """``"▲ regression"``: the verdict with its icon; empty for none."""
    if not verdict:
        return ""
    icon = VERDICT_ICONS.get(verdict)
    return f"{icon} {verdict}" if icon else str(verdict)


def in_verdict_order(counts: dict[str, int]) -> dict[str, int]:
    """Counts by verdict in display order, verdicts counted zero times left out."""
    return {str(verdict): counts[verdict] for verdict in VERDICT_ORDER if counts.get(verdict)}


def verdict_counts(rows) -> dict[str, int]:
    """Rows per verdict, in display order, verdicts without rows left out."""
    return in_verdict_order(Counter(row.verdict for row in rows))


def verdict_slug(verdict: str | None) -> str:
    """The verdict as a CSS class suffix: ``"no change"`` → ``"no-change"``."""
    return (verdict or "none").replace(" ", "-")


def format_probability(value: float | None) -> str:
    """A p- or q-value: three decimals, ``<0.001`` below that, ``—`` for none (a table's cell)."""
    if value is None or not math.isfinite(value):
        return "—"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def said_probability(name: str, value: float | None) -> str:
    """A p- or q-value in a sentence: ``p = 0.012``, ``p < 0.001`` (never ``p = <0.001``), ``p = —``."""
    shown = format_probability(value)
    return f"{name} < {shown[1:]}" if shown.startswith("<") else f"{name} = {shown}"


def said_night(day: date) -> str:
    """A night as every page names it: by the date it starts on (:func:`results.nights.night_of` gives it)."""
    return f"night of {day:%Y-%m-%d}"


def said_alert(alert_id: int, status: str) -> str:
    """An alert as a row or a point that opened it names it, with its triage status (worded)."""
    return f"alert #{alert_id} · {status}"


def said_drift(per_night: float) -> str:
    """A change point read as a drift, in words, everywhere: ``a drift: the level moves +0.50% a night, no step at
    its night`` (``results.models.ChangePoint.drift_per_night``)."""
    return f"a drift: the level moves {per_night * 100:+.2f}% a night, no step at its night"


TIME_UNITS = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "us": 1e-6, "ns": 1e-9}
"""Time units a metric may be stored in, in seconds."""


def display_unit(unit: str, reference: float | None) -> str:
    """The unit a series is shown in, chosen once from one of its values (``reference``): a time gets the
    prefix that suits the value's magnitude in seconds (33.8e-6 s → ``µs``), as benchstat does; other
    units are shown as they are."""
    factor = TIME_UNITS.get(unit)
    if factor is None:
        return unit
    if reference is None or not math.isfinite(reference) or reference == 0:
        return ""  # not chosen yet: the next value chooses
    # A little below a prefix still takes it: a 0.9998 s series reads 1.00 s, not 1000 ms.
    seconds = abs(reference) * factor
    return next((prefix for size, prefix in TIME_SCALES if seconds >= 0.95 * size), TIME_SCALES[-1][1])


def series_scale(unit: str, shown_in: str) -> tuple[float, str]:
    """The factor a series' stored values are divided by, and the unit they are then shown in."""
    if shown_in == unit or unit not in TIME_UNITS or shown_in not in TIME_UNITS:
        return 1.0, unit
    return TIME_UNITS[shown_in] / TIME_UNITS[unit], shown_in


def metric_scale(metric, reference: float | None = None) -> tuple[float, str]:
    """A stored series' one scale: its metric's display unit (chosen from ``reference`` for a metric stored
    before display units were)."""
    return series_scale(metric.unit, metric.display_unit or display_unit(metric.unit, reference))


def in_scale(value: float | None, factor: float) -> float | None:
    """A stored value in its series' scale (None stays None)."""
    return None if value is None else value / factor


def unit_scale(unit: str, reference: float | None) -> tuple[float, str]:
    """The scale of a series without a stored display unit (two files compared): chosen from ``reference``."""
    return series_scale(unit, display_unit(unit, reference))


def format_number(value: float, digits: int = 3) -> str:
    """At least `digits` significant digits, never an exponent: ``33.8``, ``0.00412``, ``1099``."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    rounded = float(f"{value:.{digits}g}")  # 0.9998 rounds to 1.00, not 1.000
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(rounded))))
    return f"{value:.{decimals}f}"


def format_quantity(mean: float | None, half_width: float | None, scale: tuple[float, str]) -> str:
    """``"1.23 ± 0.05 ms"``: three significant digits (trailing zeros kept, so a column lines up), the
    half-width of its interval with two, in the series' scale; ``—`` for no mean."""
    if mean is None or not math.isfinite(mean):
        return "—"
    factor, unit = scale
    text = format_number(mean / factor)
    if half_width is not None and math.isfinite(half_width):
        text += f" ± {format_number(half_width / factor, 2)}"
    return f"{text} {unit}".rstrip()


def format_interval(low: float | None, high: float | None, scale: tuple[float, str]) -> str:
    """``"[1.21, 1.25] ms"`` in the series' scale; ``—`` without limits."""
    if low is None or high is None:
        return "—"
    factor, unit = scale
    return f"[{format_number(low / factor)}, {format_number(high / factor)}] {unit}".rstrip()


def format_duration(seconds: float | None) -> str:
    """Seconds as ``"42 s"``, ``"3 min 05 s"`` or ``"1 h 02 min"``; ``—`` for none."""
    if seconds is None:
        return "—"
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds // 60 % 60:02d} min"


# --- Commits: links to the project's forge ----------------------------------------------------------------

SHORT_COMMIT = 12
"""Characters of a commit hash shown (git's abbreviations stay unique far beyond a project's history)."""
COMMIT_PLACEHOLDER = "{commit}"
SUBJECT_LENGTH = 80
_FORGE_PATHS = {"github": ("/commit/", "/compare/"), "gitlab": ("/-/commit/", "/-/compare/"),
                "gitea": ("/commit/", "/compare/")}
"""Per forge: where a commit is shown, where two are compared (``base...head``)."""


def short_commit(commit: str) -> str:
    """The commit as shown: its first :data:`SHORT_COMMIT` characters."""
    return commit[:SHORT_COMMIT]


def commit_subject(message: str) -> str:
    """The first line of a commit message (shortened to :data:`SUBJECT_LENGTH` characters with ``…``)."""
    subject = next((line.strip() for line in message.splitlines() if line.strip()), "")
    return subject if len(subject) <= SUBJECT_LENGTH else subject[:SUBJECT_LENGTH - 1].rstrip() + "…"


def commit_url(commit: str, *, repository_url: str = "", template: str = "") -> str | None:
    """Where `commit` is shown: the project's `template` with :data:`COMMIT_PLACEHOLDER` replaced, else the
    forge's commit page detected from `repository_url` (github.com, any host named gitlab, gitea or
    codeberg); None for no commit, another host, or an address that is not http(s)."""
    if not commit:
        return None
    if template:
        return template.replace(COMMIT_PLACEHOLDER, _quoted(commit)) if _is_web(template) else None
    forge = _forge(repository_url)
    return None if forge is None else f"{forge[1]}{_FORGE_PATHS[forge[0]][0]}{_quoted(commit)}"


def compare_commits_url(base: str, head: str, *, repository_url: str = "") -> str | None:
    """The forge's page of the commits from `base` to `head` (GitHub and Gitea ``/compare/a...b``, GitLab
    ``/-/compare/a...b``); None where the host is not one of them or either commit is unknown or they are equal."""
    forge = _forge(repository_url)
    if forge is None or not base or not head or base == head:
        return None
    return f"{forge[1]}{_FORGE_PATHS[forge[0]][1]}{_quoted(base)}...{_quoted(head)}"


def _forge(repository_url: str) -> tuple[str, str] | None:
    """(forge, repository address without credentials, ``.git`` or a trailing slash) of a repository URL;
    ``git@host:owner/name.git`` and ``ssh://`` addresses are read as the host's https address."""
    address = repository_url.strip()
    scp = re.fullmatch(r"[\w.-]+@([\w.-]+):(?!/)(.+)", address)
    if scp:
        address = f"https://{scp[1]}/{scp[2]}"
    try:
        parts = urlsplit(address)
        port = f":{parts.port}" if parts.port and parts.scheme != "ssh" else ""
    except ValueError:  # a malformed port or IPv6 address
        return None
    host = (parts.hostname or "").lower()
    path = parts.path.rstrip("/").removesuffix(".git").rstrip("/")
    if parts.scheme not in ("http", "https", "ssh") or not host or not path.strip("/"):
        return None
    scheme = "http" if parts.scheme == "http" else "https"
    if host in ("github.com", "www.github.com"):
        forge = "github"
    elif "gitlab" in host:
        forge = "gitlab"
    elif "gitea" in host or "codeberg" in host:
        forge = "gitea"
    else:
        return None
    return forge, f"{scheme}://{host}{port}{path}"


def _is_web(address: str) -> bool:
    try:
        return urlsplit(address).scheme in ("http", "https")
    except ValueError:
        return False


def _quoted(commit: str) -> str:
    return quote(commit, safe="/@")

# --- Why a row has its verdict ------------------------------------------------------------------------------

_BASELINES = {"history": "the last nights of the series", "shift": "the nights before the shift",
              "pairwise": "the base run", "previous": "the previous night", "bootstrap": "the base run",
              "files": "the baseline file", "change_point": "the segment before the change point"}


def format_threshold(threshold: float) -> str:
    """θ as a band: ``±2%``."""
    return f"±{threshold * 100:g}%"


def verdict_reason(row) -> str:
    """The verdict rule (spec §7) as it applied to this row, in words."""
    band = format_threshold(row.threshold)
    worse = "slower" if row.direction == "lower_is_better" else "lower"
    reasons = {
        Verdict.REGRESSION: f"the whole interval lies beyond the {band} band on the worse side ({worse})",
        Verdict.IMPROVEMENT: f"the whole interval lies beyond the {band} band on the better side",
        Verdict.NO_CHANGE: f"the whole interval lies within the {band} band",
        SUSPECTED_REGRESSION: f"significant (q < {row.alpha:g}) and the estimate lies beyond the {band} band on the "
                              "worse side, but the interval still crosses the band's edge",
        SUSPECTED_IMPROVEMENT: f"significant (q < {row.alpha:g}) and the estimate lies beyond the {band} band on "
                               "the better side, but the interval still crosses the band's edge",
        Verdict.INCONCLUSIVE: f"the interval straddles an edge of the {band} band and the change is not "
                              f"significant (q ≥ {row.alpha:g}): neither a change nor its absence is shown",
    }
    if not row.bounded and row.ratio is not None and row.verdict == Verdict.INCONCLUSIVE:
        return "the interval is unbounded (the baseline's mean is not clearly away from zero)"
    return reasons.get(row.verdict, row.note or str(row.verdict))


def evidence_html(row) -> str:
    """:func:`evidence` as the ``<dt>``/``<dd>`` pairs of a definition list (escaped), built here in one pass:
    two hundred rows of template loops cost more than the rest of the overview."""
    from django.utils.safestring import mark_safe

    return mark_safe("".join(f"<dt>{html.escape(label)}</dt><dd>{html.escape(text)}</dd>"
                             for label, text in evidence(row)))


def sparkline_points_html(points) -> str:
    """Each sparkline point as an SVG circle whose title gives its night and value (escaped); four thousand
    points on an overview, so plain string building."""
    from django.utils.safestring import mark_safe

    return mark_safe("".join(f'<circle class="spark-point" cx="{x}" cy="{y}" r="4"><title>{html.escape(text)}'
                             "</title></circle>" for x, y, text in points))


def evidence(row) -> list[tuple[str, str]]:
    """What a row's verdict rests on, as (label, text) lines: the baseline and what it holds, the run-to-run
    spread, both sides, the interval, θ and the rule, p and q. Every page expands a row into these."""
    inputs = row.inputs or {}
    scale = row.scale
    lines = [("Verdict", f"{verdict_label(row.verdict)}: {verdict_reason(row)}.")]
    baseline = _BASELINES.get(row.method, "the baseline")
    if row.method in ("history", "shift") and inputs.get("history_runs"):
        runs = inputs["history_runs"]
        held = f"{len(runs)} night{'s' if len(runs) != 1 else ''} (runs #{min(runs)}–#{max(runs)})"
        if row.method == "shift" and inputs.get("pooled_runs"):
            pooled = inputs["pooled_runs"]
            held = (f"{len(pooled)} night{'s' if len(pooled) != 1 else ''} since run #{pooled[0]} pooled against "
                    f"{held} before, {inputs.get('starts_tried', 0)} first nights tried")
        lines.append(("Baseline", f"{baseline}: {held}; mean {format_quantity(row.baseline.mean, None, scale)}"))
    elif row.method == "change_point" and inputs.get("first_run"):
        since = inputs.get("nights_since", 0)
        lines.append(("Baseline", f"{baseline}: the daily scan's segments either side of run #{inputs['first_run']}"
                                  f" ({since} night{'s' if since != 1 else ''} since it), their night means"))
    elif row.baseline.mean is not None:
        count = "" if row.baseline.n is None else f" from {row.baseline.n} units"
        lines.append(("Baseline", f"{baseline}: {row.baseline_text}{count}"))
    between = inputs.get("between_variance")
    if between is not None and row.baseline.mean:
        spread = math.sqrt(max(between, 0.0)) / abs(row.baseline.mean)
        lines.append(("Run-to-run", "none beyond each night's own noise (σ_b² = 0)" if spread == 0 else
                      f"sd {spread:.2%} of the mean between nights (σ_b², carried into the interval)"))
    run_variance = inputs.get("run_variance")
    if run_variance is not None and row.baseline.mean:
        spread = math.sqrt(max(run_variance, 0.0)) / abs(row.baseline.mean)
        lines.append(("Run-to-run", f"sd {spread:.2%} of the mean between runs, as the series' nightly history "
                                    f"on this machine measured it (run #{inputs.get('run_noise_from')}), carried "
                                    "into both runs' means"))
    if row.candidate.mean is not None:
        count = "" if row.candidate.n is None else f" from {row.candidate.n} units"
        lines.append(("Candidate", f"{row.candidate_text}{count}"))
    if row.ratio is not None:
        df = "" if row.df is None else f", ν = {row.df:.3g}"
        interval = "the bootstrap" if row.verdict_from == "bootstrap" else f"Fieller{df}"
        lines.append(("Change", f"{row.decisive.change or 'unbounded'} at {format_level(row.confidence_level)} "
                                f"({interval}); θ = {format_threshold(row.threshold)}"))
    if row.pvalue is not None:
        q = "" if row.qvalue is None else f", {said_probability('q', row.qvalue)} (Benjamini–Hochberg)"
        starts = inputs.get("starts_tried") or 0
        adjusted = (f"; p is adjusted for the {starts} first nights tried, the interval is the chosen night's "
                    "and is not" if row.method == "shift" and starts > 1 else "")
        if row.method == "shift" and inputs.get("newest_weight"):
            weight = inputs["newest_weight"]
            older = f"the {starts - 1} first nights" if starts > 2 else "the first night"
            adjusted = (f"; tonight alone against the nights before it, beside the scan of {older} before tonight: "
                        f"its own p ×{1 / weight:g} (it is tested at {weight:g} of the series' level)")
        lines.append(("Test", f"{said_probability('p', row.pvalue)}{q}{adjusted}"))
    if row.note and row.method != "shift" and not row.note.startswith("mean of"):
        lines.append(("Note", row.note))
    return lines


# --- Text that tables and messages share -------------------------------------------------------------------

def format_level(level: float) -> str:
    """A confidence level as a percentage: ``95%``."""
    return f"{level * 100:g}%"


def level_text(rows) -> str:
    """The confidence level shared by the rows, as a percentage (``per-series`` when they differ)."""
    levels = {row.confidence_level for row in rows}
    return format_level(levels.pop()) if len(levels) == 1 else "per-series"


# Control characters, line and paragraph separators and bidirectional overrides: what a stored name held
# before names were held to one line (results.result_schema.check_single_line).
_LINE_BREAKING = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]+")


def single_line(text: str) -> str:
    """`text` on one line: any control character (a line break, a tab) becomes a space."""
    return _LINE_BREAKING.sub(" ", text)


def markdown_code(text: str) -> str:
    """`text` shown as itself in Markdown (GitHub's, CommonMark): an inline code span on one line, fenced by more
    backticks than it holds, inside which nothing is Markdown or HTML (no heading, link, image, tag, emphasis
    or @mention)."""
    text = single_line(text)
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


# --- A machine's hardware ---------------------------------------------------------------------------------

# The hardware details a worker records (runner.monitor.describe_host) by name; other keys are worded from
# their own name, a unit suffix (``_mhz``, ``_bytes``, …) becoming the unit of the value.
HARDWARE_LABELS = {"physical_cores": "Physical cores", "cpu_max_mhz": "CPU max frequency",
                   "numa_nodes": "NUMA nodes", "python": "Python"}
UNIT_SUFFIXES = {"_mhz": "MHz", "_ghz": "GHz", "_bytes": "bytes", "_kb": "KB", "_mb": "MB", "_gb": "GB",
                 "_seconds": "s", "_percent": "%"}


def hardware_facts(details: object) -> list[tuple[str, list[str]]]:
    """A machine's free-form hardware JSON as a definition list: (label, one text per value), the known
    details first, then the others by name (a JSON column need not keep its keys' order).

    Empty and zero values (a frequency psutil could not read is 0.0) are left out; numbers carry their unit.
    """
    if not isinstance(details, dict):
        details = {"details": details}
    known = list(HARDWARE_LABELS)
    facts = []
    for key, value in sorted(details.items(), key=lambda item: (
            known.index(item[0]) if item[0] in known else len(known), str(item[0]))):
        label, unit = _hardware_label(str(key))
        values = value if isinstance(value, list) else [value]
        texts = [text for text in (_hardware_text(item, unit) for item in values) if text]
        if texts:
            facts.append((label, texts))
    return facts


def _hardware_label(key: str) -> tuple[str, str]:
    """A hardware key's label and the unit of its value ("" for none)."""
    suffix = next((suffix for suffix in UNIT_SUFFIXES if key.endswith(suffix) and len(key) > len(suffix)), "")
    label = HARDWARE_LABELS.get(key) or key[:len(key) - len(suffix)].replace("_", " ").capitalize()
    return label, UNIT_SUFFIXES.get(suffix, "")


def _hardware_text(value: object, unit: str = "") -> str:
    """One value as text; "" for an empty or zero one."""
    if value is None or value == "" or value == [] or value == {}:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        if value == 0:
            return ""
        if unit == "MHz" and value >= 1000:
            return f"{value / 1000:.2f} GHz"
        if unit == "bytes":
            from django.template.defaultfilters import filesizeformat

            return filesizeformat(value)
        number = f"{value:g}" if isinstance(value, float) else str(value)
        return number + unit if unit in ("", "%") else f"{number} {unit}"
    if isinstance(value, dict):
        if {"device", "mountpoint"} <= value.keys():  # a disk partition as runner.monitor records it
            return f"{value['device']} on {value['mountpoint']}" + (f" ({value['fstype']})" if value.get("fstype")
                                                                     else "")
        parts = []
        for key, item in value.items():
            label, item_unit = _hardware_label(str(key))
            text = _hardware_text(item, item_unit)
            if text:
                parts.append(f"{label.lower()} {text}")
        return ", ".join(parts)
    if isinstance(value, list):
        return ", ".join(text for text in (_hardware_text(item) for item in value) if text)
    return str(value)
