"""A job's two commands in the bisection tests, as a real job that builds revisions has them: ``build`` exports a
revision of the checkout into its own directory and runs the revision's ``build.py`` there (failing as it fails);
``run`` runs the built revision's ``bench.py``, which prints its reading as a JSON line. Each revision is built
apart, so an interleaved session reads every revision it names, round by round."""

import io
import subprocess
import sys
import tarfile
from pathlib import Path

mode = sys.argv[1]
if mode == "build":
    checkout, builds, revision = sys.argv[2:5]
    target = Path(builds) / revision
    if not target.exists():
        exported = subprocess.run(["git", "-C", checkout, "archive", "--format=tar", revision], check=True,
                                  capture_output=True).stdout
        staging = target.with_name(revision + ".partial")
        with tarfile.open(fileobj=io.BytesIO(exported)) as archive:
            archive.extractall(staging, filter="data")
        subprocess.run([sys.executable, "build.py"], check=True, cwd=staging)
        staging.rename(target)
    with open(Path(builds) / "built.log", "a") as log:
        log.write(revision + "\n")
else:
    builds, revision = sys.argv[2:4]
    subprocess.run([sys.executable, str(Path(builds) / revision / "bench.py")], check=True)
