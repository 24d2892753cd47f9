"""A job's setup step in the trusted-revision tests: check a revision out in a git checkout and build it (run the
revision's own ``build.py``), recording each revision built in a log. What a real job's setup does, and why a
posted commit must never reach it unchecked: the code it builds is the revision's."""

import subprocess
import sys
from pathlib import Path

checkout, revision, log = sys.argv[1:4]
subprocess.run(["git", "-C", checkout, "checkout", "--quiet", "--detach", revision], check=True)
subprocess.run([sys.executable, str(Path(checkout) / "build.py")], check=True, cwd=checkout)
with open(log, "a") as built:
    built.write(revision + "\n")
