"""The job form: a ModelForm over Job whose list and mapping fields are typed as plain text.

Parsing lives here (a command line to its arguments, lines to dicts, a percentage to the stored fraction,
the cron expression's fields), and so do the bounds the model's constraints hold, checked first so they are
shown next to the field they are about rather than as a constraint's name; what else a valid job is stays in
``Job.clean()``, which the ModelForm runs and shows by field.
"""

import json
import re
import shlex
from dataclasses import dataclass

from django import forms
from django.core.exceptions import ValidationError
from django.forms import BoundField
from django_celery_beat.validators import crontab_validator

from results import json_input

from . import workloads
from .models import Job, WorkloadKind

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
CRON_SHAPE = ('A schedule has five fields, "minute hour day-of-month month day-of-week" '
              '(e.g. "0 2 * * *" for 02:00 every night); leave it blank for no schedule.')
# The cron fields in order, each with the values it takes.
CRON_FIELDS = (("minute", "0-59"), ("hour", "0-23"), ("day of month", "1-31"), ("month", "1-12 or jan-dec"),
               ("day of week", "0-6 or sun-sat"))

# Words a shell reads as operators: typed unquoted into a command that no shell runs, they would reach the
# program as arguments (a pipe's second command would never run).
SHELL_OPERATORS = frozenset({"|", "||", "&", "&&", ";", ";;", "<", ">", ">>", "<<", "<<<", "2>", "2>>", "2>&1",
                             ">&", "&>", "&>>", "(", ")", "|&"})
# A shell word as written (the boundaries shlex.split keeps): unquoted text, quoted strings, escapes.
SHELL_WORD = re.compile(r"""(?:[^\s'"\\]+|'[^']*'|"(?:[^"\\]|\\.)*"|\\.)+""", re.DOTALL)
# Characters shlex.split treats specially: an argument holding one is shown quoted so it reads back the same.
SHELL_SPECIAL = re.compile(r"""[\s'"\\]""")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def split_command(text: str) -> list[str]:
    """A command typed as a shell line (or one argument per line) as its argument list.

    Words are split as a POSIX shell splits them (quotes and backslashes group; shlex), but nothing is
    expanded and nothing is run through a shell, so what a shell would read as an operator or a variable
    assignment is refused rather than passed on as an argument.

    Raises
    ------
    ValidationError
        Unbalanced quotes, an unquoted shell operator, or a leading ``NAME=value``.
    """
    try:
        arguments = shlex.split(text)
    except ValueError as error:
        raise ValidationError(f"The command does not split into arguments: {str(error).lower()} "
                              "(close every quote; end no line with a backslash).", code="command_split") from None
    # Read as written: a quoted word is an argument whatever it holds.
    words = SHELL_WORD.findall(text)
    operators = [word for word in words if word in SHELL_OPERATORS]
    if operators:
        raise ValidationError(
            f"“{operators[0]}” is a shell operator, but the command is never run through a shell: put the "
            f"pipeline or redirection in a script and run that, or quote it ('{operators[0]}') to pass it as an "
            "argument.", code="command_operator")
    if words and ASSIGNMENT.match(words[0]):
        raise ValidationError(f"“{arguments[0]}” sets a variable, which only a shell does: put it in "
                              "Environment instead (or quote it to run a program of that name).",
                              code="command_assignment")
    return arguments


def shell_words(arguments: list[str]) -> str:
    """Arguments one per line, quoted only where :func:`split_command` would otherwise split, strip or refuse them."""
    def needs_quotes(index: int, argument: str) -> bool:
        return (not argument or bool(SHELL_SPECIAL.search(argument)) or argument in SHELL_OPERATORS
                or (index == 0 and bool(ASSIGNMENT.match(argument))))

    return "\n".join("'" + argument.replace("'", "'\"'\"'") + "'" if needs_quotes(index, argument) else argument
                     for index, argument in enumerate(arguments))


@dataclass(frozen=True)
class CommandPreview:
    """What a typed command runs as: its arguments, or why it does not split."""

    arguments: tuple[str, ...] = ()
    error: str = ""


def command_preview(text: str) -> CommandPreview:
    try:
        return CommandPreview(arguments=tuple(split_command(text)))
    except ValidationError as error:
        return CommandPreview(error=" ".join(error.messages))


class CommandBoundField(BoundField):
    @property
    def preview(self) -> CommandPreview:
        """The arguments the field's current text (submitted, or the stored list) runs as."""
        return command_preview(self.value() or "")


class TextAreaField(forms.CharField):
    """A value typed into a monospaced text area of `rows` lines, optional unless said otherwise; each subclass
    parses its text (``to_python``) and writes a stored value back as text (``prepare_value``)."""

    rows = 3

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        if kwargs.get("widget") is None:
            kwargs["widget"] = forms.Textarea(attrs={"rows": self.rows, "spellcheck": "false", "class": "mono"})
        super().__init__(**kwargs)


class CommandField(TextAreaField):
    """An argument list typed as a shell line or one argument per line, split here (never run through a shell)."""

    bound_field_class = CommandBoundField
    previews_command = True  # the form shows the arguments it splits into under it

    def prepare_value(self, value):
        if isinstance(value, list):
            return shell_words([str(argument) for argument in value])
        return value

    def to_python(self, value) -> list[str]:
        return split_command(super().to_python(value))


class PercentField(forms.FloatField):
    """A fraction the model stores, typed and shown as a percentage (10 for 0.10)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("error_messages", {
            "min_value": "Give at least %(limit_value)s%%.", "max_value": "Give at most %(limit_value)s%%."})
        super().__init__(**kwargs)

    def prepare_value(self, value):
        # The stored fraction arrives as a number, a submitted percentage as the text typed.
        if isinstance(value, float | int) and not isinstance(value, bool):
            return f"{100 * value:.10g}"
        return value

    def clean(self, value) -> float | None:
        percent = super().clean(value)
        return None if percent is None else percent / 100

    def has_changed(self, initial, data) -> bool:
        return super().has_changed(None if initial is None else float(self.prepare_value(initial)), data)


class EnvironmentField(TextAreaField):
    """Environment variables, one ``NAME=value`` per line."""

    def prepare_value(self, value):
        if isinstance(value, dict):
            return "\n".join(f"{name}={setting}" for name, setting in value.items())
        return value

    def to_python(self, value) -> dict[str, str]:
        environment: dict[str, str] = {}
        for number, line in enumerate(super().to_python(value).splitlines(), start=1):
            if not line.strip():
                continue
            name, equals, setting = line.partition("=")
            name = name.strip()
            if not equals:
                raise ValidationError(f'Line {number} ("{line.strip()}") has no "=": write one NAME=value per line.',
                                      code="environment_line")
            if not ENV_NAME.match(name):
                raise ValidationError(f'Line {number}: "{name}" is not a variable name (letters, digits and _, '
                                      "not starting with a digit).", code="environment_name")
            if name in environment:
                raise ValidationError(f'Line {number}: {name} is set twice.', code="environment_duplicate")
            environment[name] = setting
        return environment


class MetricsField(TextAreaField):
    """Declared metrics: a JSON list, or one ``name,unit[,direction]`` per line."""

    def prepare_value(self, value):
        if isinstance(value, list):
            if all(isinstance(metric, dict) and set(metric) <= {"name", "unit", "direction"}
                   and all("," not in str(part) for part in metric.values()) for metric in value):
                return "\n".join(",".join(str(metric[key]) for key in ("name", "unit", "direction") if key in metric)
                                 for metric in value)
            return json.dumps(value)
        return value

    def to_python(self, value) -> list:
        text = super().to_python(value).strip()
        if text.startswith("["):
            return _json_field(text, code="metrics_json")
        metrics = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            parts = [part.strip() for part in line.split(",")]
            if len(parts) not in (2, 3) or not all(parts):
                raise ValidationError(f'Line {number} ("{line.strip()}"): write name,unit or name,unit,direction.',
                                      code="metrics_line")
            metrics.append(dict(zip(("name", "unit", "direction"), parts, strict=False)))
        return metrics


class ParametersField(TextAreaField):
    """Parameters of a built-in workload, as a JSON object."""

    rows = 2

    def prepare_value(self, value):
        if isinstance(value, dict):
            return json.dumps(value) if value else ""
        return value

    def to_python(self, value) -> dict:
        text = super().to_python(value).strip()
        if not text:
            return {}
        parameters = _json_field(text, code="parameters_json")
        if not isinstance(parameters, dict):
            raise ValidationError('Give the parameters as a JSON object, e.g. {"seed": 1}.', code="parameters_object")
        return parameters


def _json_field(text: str, *, code: str):
    """A field's JSON, parsed as every JSON entering is (:mod:`results.json_input`): bounded nesting, finite
    numbers in range."""
    try:
        value = json_input.loads(text, max_depth=json_input.MAX_FIELD_DEPTH)
    except json.JSONDecodeError as error:
        raise ValidationError(f"Not valid JSON: {error.msg} (line {error.lineno}, column {error.colno}).",
                              code=code) from None
    except ValueError as error:
        raise ValidationError(f"Not accepted: the JSON is {error}.", code=code) from None
    problem = json_input.field_problem(value)
    if problem is not None:
        raise ValidationError(f"Not accepted: the JSON {problem}.", code=code)
    return value


def clean_cron(value: str) -> str:
    """The cron expression normalised to single spaces, or "" (no schedule); the validator is the
    one :func:`runner.services.set_schedule` applies, asked field by field so the message names the field
    (its own messages quote values unevenly)."""
    cron = " ".join(value.split())
    if not cron:
        return ""
    fields = cron.split()
    if len(fields) != 5:
        raise ValidationError(CRON_SHAPE, code="cron_shape")
    for position, ((name, values), text) in enumerate(zip(CRON_FIELDS, fields, strict=True)):
        try:
            crontab_validator(" ".join(text if index == position else "*" for index in range(5)))
        except ValidationError:
            raise ValidationError(
                f"Invalid schedule: the {name} “{text}” is not valid; the {name} takes {values}, "
                "as a value, a range (1-5), a list (1,3) or a step (*/15).", code="cron_invalid") from None
    try:
        crontab_validator(cron)
    except ValidationError as error:
        raise ValidationError(f"Invalid schedule: {'; '.join(error.messages)}.", code="cron_invalid") from None
    return cron


# Bounds the model's constraints hold, checked in the form to be shown next to their field.
def _open_unit_interval(value: float) -> bool:
    return 0 < value < 1


DAY = 86_400.0
MAX_WORK = 1e12
FIELD_BOUNDS = {
    "confidence_level": (_open_unit_interval, "Give a level between 0 and 1, e.g. 0.95 for 95%."),
    "max_autocorrelation": (_open_unit_interval, "Give a bound between 0 and 1, e.g. 0.1."),
    "comparison_alpha": (_open_unit_interval, "Give a probability between 0 and 1, e.g. 0.01 for 1%."),
    "comparison_threshold": (_open_unit_interval, "Give a fraction of the mean between 0 and 1, e.g. 0.02 for 2%."),
    "round_timeout": (lambda value: 0 < value <= DAY, "Give a positive number of seconds, at most a day (86400)."),
    "budget_seconds": (lambda value: 0 < value <= 7 * DAY,
                       "Give a positive number of seconds, at most a week (604800)."),
    "min_round_duration": (lambda value: 0 <= value <= 3600, "Give zero or a positive number of seconds, at most 3600."),
    "budget_rounds": (lambda value: 1 <= value <= 1_000_000, "Give from 1 to 1,000,000 rounds."),
    "overhead_rounds": (lambda value: value == 0 or 2 <= value <= 10_000,
                        "Give 0 (no overhead measurement) or at least 2 rounds (at most 10,000)."),
    "work_min": (lambda value: 0 < value <= MAX_WORK, f"Work min must be positive, at most {MAX_WORK:g}."),
    "work_max": (lambda value: 0 < value <= MAX_WORK, f"Work max must be positive, at most {MAX_WORK:g}."),
}
"""Every number a job holds, bounded: the model's constraints, and limits that keep each finite in the
database and in the session loop (a budget of 10^400 seconds overflowed a timer)."""


class IdChoiceField(forms.ModelChoiceField):
    """A row chosen by its id: a number no id can be (infinite, a thousand digits) is an invalid choice, where
    Django's own field lets the lookup's OverflowError through."""

    def to_python(self, value):
        try:
            return super().to_python(value)
        except OverflowError:
            raise ValidationError(self.error_messages["invalid_choice"], code="invalid_choice",
                                  params={"value": value}) from None


class JobForm(forms.ModelForm):
    builtin = forms.ChoiceField(
        required=False, label="Built-in workload",
        choices=[("", "—")] + [(name, f"{name}: {workload.description}")
                               for name, workload in sorted(workloads.BUILTIN_WORKLOADS.items())],
        help_text="For a built-in workload.",
    )
    parameters = ParametersField(help_text='Parameters of the built-in workload as JSON, e.g. {"seed": 1}.')
    command = CommandField(
        help_text="Typed as in a shell (quotes group words) or one argument per line; it is split into the "
                  "arguments shown below and never run through a shell: no pipes, redirections, $VARIABLES or ~. "
                  "Placeholders {work_amount} and {revision}; put -- before {revision}.")
    setup_command = CommandField(
        label="Setup command",
        help_text="Run once per revision before the rounds (e.g. check out and build), written like the command; "
                  "placeholder {revision}.")
    target_width = PercentField(
        label="Target CI width (%)", min_value=0.1, max_value=50, initial=Job._meta.get_field("target_width").default,
        help_text="The full width of each confidence interval a session aims for, in percent of the mean "
                  "(0.1–50; 10 means ±5%).")
    environment = EnvironmentField(help_text="One NAME=value per line, over a minimal PATH, HOME and LANG.")
    metrics = MetricsField(
        help_text="For a command printing JSON lines: one name,unit,direction per line "
                  "(direction lower_is_better or higher_is_better), or a JSON list.")
    cron = forms.CharField(
        required=False, label="Schedule (cron)", max_length=200,
        widget=forms.TextInput(attrs={"placeholder": "0 2 * * *", "spellcheck": "false", "class": "mono"}),
        help_text='"minute hour day-of-month month day-of-week" in the server\'s time zone; blank: not scheduled.',
    )

    class Meta:
        model = Job
        fields = (
            "project", "name", "benchmark", "machine", "enabled",
            "workload_kind", "builtin", "parameters", "command", "setup_command", "working_directory", "environment",
            "reading_mode", "metrics", "component",
            "confidence_level", "target_width", "max_autocorrelation", "work_min", "work_max", "min_round_duration",
            "round_timeout", "budget_seconds", "budget_rounds", "warmup", "overhead_rounds",
            "comparison_rule", "comparison_alpha", "comparison_threshold", "require_width_in_comparison",
            "repository", "trusted_branch", "allow_pull_requests",
        )
        field_classes = {"project": IdChoiceField, "machine": IdChoiceField}

    FIELDSETS = (
        # (legend, CSS class, a paragraph under the legend, the fields in the order shown)
        ("What and where", "", "", ("project", "name", "benchmark", "machine", "cron", "enabled")),
        ("Workload", "", "", ("workload_kind", "builtin", "parameters", "command", "setup_command",
                              "working_directory", "environment", "reading_mode", "metrics", "component")),
        ("Precision and budget", "grid", "", ("confidence_level", "target_width", "max_autocorrelation", "warmup",
                                              "work_min", "work_max", "min_round_duration", "round_timeout",
                                              "budget_seconds", "budget_rounds", "overhead_rounds")),
        ("A/B comparisons", "grid", "", ("comparison_rule", "comparison_alpha", "comparison_threshold",
                                         "require_width_in_comparison")),
        ("Revisions automatic sessions may build", "",
         "An alert's confirmation session measures the revisions posted runs name. One runs only if its poster "
         "vouched for it (staff, or a maintainer posting with the jobs scope), or if the machine finds it on the "
         "trusted branch of this repository's origin before anything is built.",
         ("repository", "trusted_branch", "allow_pull_requests")),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        kind = self.fields["workload_kind"]
        kind.widget = forms.RadioSelect(choices=kind.choices)
        self.fields["component"].choices = [("", "— (a built-in workload knows its own)"),
                                            *self.fields["component"].choices[1:]]
        schedule = self.instance.schedule if self.instance.pk else None
        if schedule is not None and schedule.crontab is not None:
            crontab = schedule.crontab
            self.fields["cron"].initial = (f"{crontab.minute} {crontab.hour} {crontab.day_of_month} "
                                           f"{crontab.month_of_year} {crontab.day_of_week}")

    def fieldsets(self) -> list[dict]:
        """The form's fields as the page groups them (``FIELDSETS``), each field bound."""
        return [{"legend": legend, "css_class": css_class, "intro": intro, "fields": [self[name] for name in names]}
                for legend, css_class, intro, names in self.FIELDSETS]

    def clean_cron(self) -> str:
        return clean_cron(self.cleaned_data["cron"])

    def clean(self):
        cleaned = super().clean()
        # A command job has no built-in: the hidden choice left over from a switch is dropped, not an error.
        if cleaned.get("workload_kind") == WorkloadKind.COMMAND:
            cleaned["builtin"] = ""
        for name, (valid, message) in FIELD_BOUNDS.items():
            if cleaned.get(name) is not None and not valid(cleaned[name]):
                self.add_error(name, ValidationError(message, code="out_of_bounds"))
        work_min, work_max = cleaned.get("work_min"), cleaned.get("work_max")
        if work_min is not None and work_max is not None and work_max <= work_min and not self.has_error("work_min"):
            message = f"Work min ({work_min:g}) must be smaller than work max ({work_max:g})."
            self.add_error("work_min", ValidationError(message, code="work_range"))
            self.add_error("work_max", ValidationError(message, code="work_range"))
        return cleaned

    def job_fields(self) -> dict:
        """The cleaned values the runner services take."""
        return {name: self.cleaned_data[name] for name in self.Meta.fields}

    def add_service_errors(self, error: ValidationError) -> None:
        """Show a service's ValidationError by field (unknown keys become form-wide errors)."""
        if hasattr(error, "error_dict"):
            for field, errors in error.error_dict.items():
                self.add_error(field if field in self.fields else None, errors)
        else:
            self.add_error(None, error)
