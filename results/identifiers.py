"""Revision identifiers (commits, branches) as they may enter: posted runs, imports, commands, jobs.

A stored commit can reach a command line: a job's ``{revision}`` placeholder is filled with it when an
alert's confirmation session checks the revision out (``git fetch origin {revision}``). A value such as
``--upload-pack=touch pwned`` would then be an option of that command, so identifiers are held to a
strict shape where they enter; :mod:`runner.workloads` refuses a leading ``-`` again when it substitutes.
"""

import re

from django.core.exceptions import ValidationError

COMMIT_MAX_LENGTH = 64
BRANCH_MAX_LENGTH = 200
# A hash, a tag or a ref name: what git accepts as a revision, minus anything an option or a shell could use,
# and minus ".." and path components starting with "." (git's ref-name rules), so that a job placing
# {revision} in a path cannot be led out of its directory.
COMMIT_PATTERN = re.compile(r"(?!.*(?:\.\.|/\.))[A-Za-z0-9_][A-Za-z0-9_./+~^@-]*")
# git's ref-name rules (git check-ref-format) for the characters, plus no leading "-".
BRANCH_FORBIDDEN = re.compile(r"[\s\x00-\x1f\x7f~^:?*\[\\]")

COMMIT_RULE = (f"must be a commit hash, tag or ref of at most {COMMIT_MAX_LENGTH} characters: letters, digits and "
               "_ . / + ~ ^ @ -, not starting with '-' or '.', without '..' or a '/.'")
BRANCH_RULE = (f"must be a branch name of at most {BRANCH_MAX_LENGTH} characters, not starting with '-', without "
               "whitespace, control characters or ~ ^ : ? * [ \\")


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


def validate_commit(value: str) -> None:
    """Django validator form of :func:`check_commit` (model fields, forms, the admin)."""
    try:
        check_commit(value)
    except ValueError as error:
        raise ValidationError(str(error), code="invalid_commit") from None


def validate_branch(value: str) -> None:
    """Django validator form of :func:`check_branch`."""
    try:
        check_branch(value)
    except ValueError as error:
        raise ValidationError(str(error), code="invalid_branch") from None
