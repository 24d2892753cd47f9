"""Identifiers as they may enter (posted runs, imports, commands, jobs): revisions (commits, branches), names
and machines' queues.

A stored commit can reach a command line: a job's ``{revision}`` placeholder is filled with it when an
alert's confirmation session checks the revision out (``git fetch origin {revision}``). A value such as
``--upload-pack=touch pwned`` would then be an option of that command, so identifiers are held to a
strict shape where they enter; :mod:`runner.workloads` refuses a leading ``-`` again when it substitutes.
"""

import re

from django.core.exceptions import ValidationError

from .result_schema import check_single_line

COMMIT_MAX_LENGTH = 64
BRANCH_MAX_LENGTH = 200
# A hash, a tag or a ref name: what git accepts as a revision, minus anything an option or a shell could use,
# and minus ".." and path components starting with "." (git's ref-name rules), so that a job placing
# {revision} in a path cannot be led out of its directory.
COMMIT_PATTERN = re.compile(r"(?!.*(?:\.\.|/\.))[A-Za-z0-9_][A-Za-z0-9_./+~^@-]*")
# git's ref-name rules (git check-ref-format --branch): no whitespace, control character, ~ ^ : ? * [ \ or "@{";
# nor, shown on every page as they are, line separators and the bidirectional overrides;
# no "..", "//", component starting with "." or ending in ".lock"; not "@"; no leading or trailing "/" or
# trailing "."; plus no leading "-".
BRANCH_FORBIDDEN = re.compile("[\\s\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069~^:?*\\[\\\\]"
                              r"|@\{|\.\.|//|(?:^|/)\.|\.lock(?:/|$)|^/|/$|\.$|^@$")

COMMIT_RULE = (f"must be a commit hash, tag or ref of at most {COMMIT_MAX_LENGTH} characters: letters, digits and "
               "_ . / + ~ ^ @ -, not starting with '-' or '.', without '..' or a '/.'")
BRANCH_RULE = (f"must be a branch name of at most {BRANCH_MAX_LENGTH} characters, not starting with '-', as git "
               "accepts it: without whitespace, control characters, ~ ^ : ? * [ \\, '@{' or '..', no part starting "
               "with '.' or ending in '.lock', not starting or ending with '/' or ending with '.'")
QUEUE_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
RESERVED_QUEUES = ("analysis", "celery")
"""The system's own Celery queues (the analysis worker's, Celery's default): no machine may consume them, or
the analysis worker would run its sessions and the machine's worker the analysis."""
QUEUE_RULE = ("must be a queue name of at most 100 characters (letters, digits and _ . -, starting with a letter or "
              f"digit), not one of the system's queues ({', '.join(RESERVED_QUEUES)})")


def check_commit(value: str) -> str:
    """``value`` if it is a valid commit identifier, else a ValueError stating the rule."""
    if not isinstance(value, str) or len(value) > COMMIT_MAX_LENGTH or not COMMIT_PATTERN.fullmatch(value):
        leading_dash = isinstance(value, str) and value.startswith("-")
        raise ValueError(COMMIT_RULE + ("; it starts with '-' and would be read as an option" if leading_dash else ""))
    return value


def check_branch(value: str) -> str:
    """``value`` if it is a valid branch name (empty means none), else a ValueError stating the rule."""
    if not isinstance(value, str) or len(value) > BRANCH_MAX_LENGTH or value.startswith("-") \
            or BRANCH_FORBIDDEN.search(value):
        raise ValueError(BRANCH_RULE)
    return value


def check_queue(value: str) -> str:
    """``value`` if it may be a machine's Celery queue, else a ValueError stating the rule."""
    if not isinstance(value, str) or not QUEUE_PATTERN.fullmatch(value) or value in RESERVED_QUEUES:
        raise ValueError(QUEUE_RULE)
    return value


def validate_commit(value: str) -> None:
    """Django validator form of :func:`check_commit` (model fields, forms, the admin)."""
    _validated(check_commit, value, code="invalid_commit")


def validate_branch(value: str) -> None:
    """Django validator form of :func:`check_branch`."""
    _validated(check_branch, value, code="invalid_branch")


def validate_queue(value: str) -> None:
    """Django validator form of :func:`check_queue`."""
    _validated(check_queue, value, code="invalid_queue")


def validate_name(value: str) -> None:
    """Django validator of a name shown as one line (:func:`results.result_schema.check_single_line`)."""
    _validated(check_single_line, value, code="invalid_name", message="The name {error}.")


def _validated(check, value: str, *, code: str, message: str = "{error}") -> None:
    """``check(value)``, its ValueError raised as a ValidationError with `code` (Django's validators' form)."""
    try:
        check(value)
    except ValueError as error:
        raise ValidationError(message.format(error=error), code=code) from None
