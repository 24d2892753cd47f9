#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import gc
import os
import sys


def main() -> None:
    # Comparing two files touches no database: it runs before Django starts, in a fraction of the time. A
    # command line it does not take (run ids, --help, a mistake) goes on to Django's command, which reports it.
    if sys.argv[1:2] == ["compare"] and "--files" in sys.argv[2:]:
        # A short-lived process with little cyclic garbage: no collections while numpy, scipy and pydantic are
        # imported and the files compared, and the heap frozen before the exit, whose collections would walk it
        # again (together about 60 ms of the 0.3 s that one benchmark takes).
        gc.disable()
        from results.compare_cli import main as compare_files

        if compare_files(sys.argv[2:]):
            gc.freeze()
            return
        gc.enable()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
