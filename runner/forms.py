"""The job form: a ModelForm over Job whose list and mapping fields are typed as plain lines.

Only parsing lives here (lines to lists and dicts, the cron expression's shape); what a valid job is
stays in ``Job.clean()`` and the model's constraints, which the ModelForm runs and shows by field.
"""

import json
import re

from django import forms
from django.core.exceptions import ValidationError
from django_celery_beat.validators import crontab_validator

from . import workloads
from .models import Job, WorkloadKind

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
CRON_SHAPE = ('A schedule has five fields, "minute hour day-of-month month day-of-week" '
              '(e.g. "0 2 * * *" for 02:00 every night); leave it blank for no schedule.')


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


class ArgumentLinesField(forms.CharField):
    """An argument list, one argument per line (never run through a shell)."""

    widget = forms.Textarea(attrs={"rows": 4, "spellcheck": "false", "class": "mono"})

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, list):
            return "\n".join(str(argument) for argument in value)
        return value

    def to_python(self, value) -> list[str]:
        return _lines(super().to_python(value))


class EnvironmentField(forms.CharField):
    """Environment variables, one ``NAME=value`` per line."""

    widget = forms.Textarea(attrs={"rows": 3, "spellcheck": "false", "class": "mono"})

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

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


class MetricsField(forms.CharField):
    """Declared metrics: a JSON list, or one ``name,unit[,direction]`` per line."""

    widget = forms.Textarea(attrs={"rows": 3, "spellcheck": "false", "class": "mono"})

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

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
            try:
                metrics = json.loads(text)
            except json.JSONDecodeError as error:
                raise ValidationError(f"Not valid JSON: {error.msg} (line {error.lineno}, column {error.colno}).",
                                      code="metrics_json") from None
            return metrics
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


class ParametersField(forms.CharField):
    """Parameters of a built-in workload, as a JSON object."""

    widget = forms.Textarea(attrs={"rows": 2, "spellcheck": "false", "class": "mono"})

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, dict):
            return json.dumps(value) if value else ""
        return value

    def to_python(self, value) -> dict:
        text = super().to_python(value).strip()
        if not text:
            return {}
        try:
            parameters = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValidationError(f"Not valid JSON: {error.msg}.", code="parameters_json") from None
        if not isinstance(parameters, dict):
            raise ValidationError('Give the parameters as a JSON object, e.g. {"seed": 1}.', code="parameters_object")
        return parameters


def clean_cron(value: str) -> str:
    """The cron expression normalised to single spaces, or "" (no schedule); the validator is the
    one :func:`runner.services.set_schedule` applies."""
    cron = " ".join(value.split())
    if not cron:
        return ""
    if len(cron.split()) != 5:
        raise ValidationError(CRON_SHAPE, code="cron_shape")
    try:
        crontab_validator(cron)
    except ValidationError as error:
        details = "; ".join(message.strip("\"'") for message in error.messages)
        raise ValidationError(f"Invalid schedule: {details}.", code="cron_invalid") from None
    return cron


class JobForm(forms.ModelForm):
    builtin = forms.ChoiceField(
        required=False, label="Built-in workload",
        choices=[("", "—")] + [(name, f"{name}: {workload.description}")
                               for name, workload in sorted(workloads.BUILTIN_WORKLOADS.items())],
        help_text="For a built-in workload.",
    )
    parameters = ParametersField(help_text='Parameters of the built-in workload as JSON, e.g. {"seed": 1}.')
    command = ArgumentLinesField(
        help_text="One argument per line, never run through a shell; placeholders {work_amount} and {revision}.")
    setup_command = ArgumentLinesField(
        label="Setup command",
        help_text="Run once per revision before the rounds, one argument per line; placeholder {revision}.")
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

    def clean_cron(self) -> str:
        return clean_cron(self.cleaned_data["cron"])

    def clean(self):
        cleaned = super().clean()
        # A command job has no built-in: the hidden choice left over from a switch is dropped, not an error.
        if cleaned.get("workload_kind") == WorkloadKind.COMMAND:
            cleaned["builtin"] = ""
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
