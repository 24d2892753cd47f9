#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    # Comparing two files touches no database: it runs before Django starts, in a fraction of the time. A
    # command line it does not take (run ids, --help, a mistake) goes on to Django's command, which reports it.
    if sys.argv[1:2] == ["compare"] and "--files" in sys.argv[2:]:
        from results.compare_cli import main as compare_files

        if compare_files(sys.argv[2:]):
            return
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
