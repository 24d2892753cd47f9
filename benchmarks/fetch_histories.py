"""Rebuild the public history files that `benchmarks/injected_steps.py` reads (``var/histories/``, not committed)
from local git copies of their source repositories.

    .venv/bin/python benchmarks/fetch_histories.py --mirrors DIR
    PILOTWEB_MIRRORS=DIR .venv/bin/python benchmarks/fetch_histories.py
    .venv/bin/python benchmarks/fetch_histories.py --repo django/django-asv=PATH --repo mozilla/treeherder=PATH

A repository is a git directory, bare or not, that holds the pinned commit below: a ``git clone`` of
``https://github.com/OWNER/NAME`` does. Under ``--mirrors DIR`` it is looked for as ``DIR/OWNER+NAME/repo``,
``DIR/OWNER+NAME``, ``DIR/OWNER/NAME`` or ``DIR/NAME`` (with or without ``.git``); ``--repo OWNER/NAME=PATH``
names one directly. Files are read with ``git cat-file`` at the pinned commit, whatever the copy's HEAD is.

Files written (the schema and the provenance of each are in benchmarks/histories.md):

- ``asv_django_samples.json``: github:django/django-asv, the 200 newest asv runs of the ``ubuntu-latest``
  machine (``conda-py3.12``), in the order they ran, every timing benchmark with its 10 samples on all 200
  runs; ``series`` holds each run's mean of the samples, ``samples`` the samples.
- ``perfherder_graphs.json``: github:mozilla/treeherder, the 7 Talos histories of graphs.mozilla.org that
  Perfherder's own tests analyse (one value per run, in push-time order), with the changes its test expects.
- ``tcpd_annotated.json``: github:alan-turing-institute/TCPD, the univariate datasets stored in the repository
  with every annotator's change points (``annotations``) and their union (``labels``).

Standard library only.
"""

import argparse
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "var" / "histories"

DJANGO_ASV = "django/django-asv"
DJANGO_ASV_COMMIT = "e1d1c74426b3bf2a030ddc8e0ab65cf445dd2fc1"
DJANGO_ASV_MACHINE = "ubuntu-latest"
DJANGO_ASV_ENVIRONMENT = "conda-py3.12"
DJANGO_ASV_NIGHTS = 200

TREEHERDER = "mozilla/treeherder"
TREEHERDER_COMMIT = "dc3080dd746d4732d5e06c0272471834d4639da0"
TREEHERDER_GRAPHS = "tests/sample_data/artifacts/performance/graphs"
TREEHERDER_TEST = "tests/perfalert/test_analyze.py"
# tests/perfalert/test_analyze.py::test_detect_changes_historical_data at that commit: the push timestamps at
# which Perfherder's analysis (fore window 12, back window 12-24, t threshold 7) must find a change.
TREEHERDER_EXPECTED = {
    "runs1": [1365019665],
    "runs2": [1357704596, 1358971894, 1365014104],
    "runs3": [1335293827, 1338839958],
    "runs4": [1364922838],
    "runs5": [],
    "a11y": [1366197637, 1367799757],
    "tp5rss": [1372846906, 1373413365, 1373424974],
}

TCPD = "alan-turing-institute/TCPD"
TCPD_COMMIT = "83b3039b5c67eaf21a720e3eac4ffdade3fb421c"
TCPD_ANNOTATIONS = "annotations.json"


class Repository:
    """Reads blobs of one commit of a local git directory through one ``git cat-file --batch`` process."""

    def __init__(self, path: Path, commit: str):
        self.path, self.commit = path, commit
        found = subprocess.run(["git", "-C", str(path), "cat-file", "-t", commit], capture_output=True, text=True,
                               check=False)
        if found.returncode != 0 or found.stdout.strip() != "commit":
            raise SystemExit(f"{path} does not hold commit {commit}: fetch or clone the repository again")
        self._batch = subprocess.Popen(["git", "-C", str(path), "cat-file", "--batch"],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def names(self, directory: str) -> list[str]:
        listed = subprocess.run(["git", "-C", str(self.path), "ls-tree", "--name-only", self.commit,
                                 directory.rstrip("/") + "/"], capture_output=True, text=True, check=True)
        return sorted(listed.stdout.split())

    def read(self, path: str) -> bytes:
        self._batch.stdin.write(f"{self.commit}:{path}\n".encode())
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().split()
        if len(header) != 3:
            raise SystemExit(f"{path} is missing at {self.commit}")
        data = self._batch.stdout.read(int(header[2]))
        self._batch.stdout.read(1)
        return data

    def json(self, path: str):
        return json.loads(self.read(path))

    def close(self) -> None:
        self._batch.stdin.close()
        self._batch.wait()


def locate(repo: str, mirrors: Path | None, given: dict[str, str]) -> Path:
    if repo in given:
        return Path(given[repo])
    if mirrors is None:
        raise SystemExit(f"No copy of {repo}: give --mirrors DIR (or PILOTWEB_MIRRORS) or --repo {repo}=PATH")
    owner, name = repo.split("/")
    for candidate in (mirrors / f"{owner}+{name}" / "repo", mirrors / f"{owner}+{name}", mirrors / owner / name,
                      mirrors / name, mirrors / f"{name}.git", mirrors / owner / f"{name}.git"):
        if candidate.is_dir():
            return candidate
    raise SystemExit(f"No copy of {repo} under {mirrors}")


def rounded(value: float) -> float:
    return float(f"{value:.6g}")


def iso(milliseconds: int) -> str:
    return datetime.fromtimestamp(milliseconds / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def django_asv(repository: Repository) -> dict:
    """The newest DJANGO_ASV_NIGHTS runs of the machine, by the time they started, and the timing benchmarks
    (unit seconds, not parameterized) with samples on every one of them."""
    results = f"results/{DJANGO_ASV_MACHINE}"
    benchmarks = repository.json("results/benchmarks.json")
    timing = sorted(name for name, entry in benchmarks.items()
                    if isinstance(entry, dict) and entry.get("unit") == "seconds" and not entry.get("params"))
    runs = []
    for name in repository.names(results):
        if not name.endswith(f"-{DJANGO_ASV_ENVIRONMENT}.json"):
            continue
        document = repository.json(name)
        columns = document["result_columns"]
        started = [row[columns.index("started_at")] for row in document["results"].values()
                   if row[columns.index("started_at")]]
        if not started:
            continue
        samples = {}
        for benchmark in timing:
            row = document["results"].get(benchmark)
            drawn = row[columns.index("samples")] if row is not None else None
            if drawn and drawn[0] and all(isinstance(value, (int, float)) and value > 0 for value in drawn[0]):
                samples[benchmark] = [rounded(value) for value in drawn[0]]
        runs.append({"path": name, "commit": document["commit_hash"], "date": document["date"],
                     "started": min(started), "samples": samples})
    runs.sort(key=lambda run: (run["started"], run["date"], run["commit"]))
    window = runs[-DJANGO_ASV_NIGHTS:]
    complete = [benchmark for benchmark in timing if all(benchmark in run["samples"] for run in window)]
    return {
        "source": f"github:{DJANGO_ASV}",
        "commit": repository.commit,
        "paths": ["results/benchmarks.json", f"{results}/machine.json", *(run["path"] for run in window)],
        "description": (f"django-asv: the {len(window)} newest asv runs of machine {DJANGO_ASV_MACHINE} "
                        f"(GitHub-hosted runners), environment {DJANGO_ASV_ENVIRONMENT}, in the order they ran; "
                        f"the {len(complete)} timing benchmarks with samples on every run. series: each run's mean "
                        "of its samples; samples: the samples asv recorded."),
        "unit": "seconds",
        "lower_is_better": True,
        "series": {b: [rounded(sum(run["samples"][b]) / len(run["samples"][b])) for run in window] for b in complete},
        "samples": {b: [run["samples"][b] for run in window] for b in complete},
        "labels": {},
        "commits": [[run["commit"], iso(run["date"]), iso(run["started"])] for run in window],
        "skipped_benchmarks": [b for b in timing if b not in complete],
    }


def perfherder_graphs(repository: Repository) -> dict:
    """Every run of each graphs.mozilla.org history, in push-time order, as Perfherder's test reads them."""
    series, labels, runs, paths = {}, {}, {}, []
    for name in repository.names(TREEHERDER_GRAPHS):
        stem = Path(name).stem
        payload = repository.json(name)
        ordered = sorted(payload["test_runs"], key=lambda run: (run[2], run[0]))
        values = [rounded(float(run[3])) for run in ordered]
        timestamps = [run[2] for run in ordered]
        series[stem] = values
        labels[stem] = [timestamps.index(stamp) for stamp in TREEHERDER_EXPECTED.get(stem, []) if stamp in timestamps]
        runs[stem] = [[run[1][2], run[2], run[6]] for run in ordered]
        paths.append(name)
    test = repository.read(TREEHERDER_TEST).decode()
    for stem, stamps in TREEHERDER_EXPECTED.items():
        if f'("{stem}.json", {stamps})' not in test:
            raise SystemExit(f"{TREEHERDER_TEST} at {repository.commit} no longer expects {stamps} for {stem}")
    return {
        "source": f"github:{TREEHERDER}",
        "commit": repository.commit,
        "paths": [*paths, TREEHERDER_TEST],
        "description": ("Firefox Talos histories from graphs.mozilla.org (2012-2013) that Perfherder's tests "
                        "analyse: one value per run, runs in push-time order (test_runs sorted by push timestamp)."),
        "unit": "unknown",
        "lower_is_better": None,
        "series": series,
        "labels": labels,
        "runs": runs,
    }


def tcpd_annotated(repository: Repository) -> dict:
    """The Turing Change Point Dataset's univariate series stored in its repository, with every annotator's
    change points (benchmarks/histories.md, ``tcpd_annotated.json``)."""
    annotations = repository.json(TCPD_ANNOTATIONS)
    series, labels, per_annotator, skipped, paths = {}, {}, {}, {}, [TCPD_ANNOTATIONS]
    for directory in repository.names("datasets"):
        name = Path(directory).name
        path = f"{directory}/{name}.json"
        try:
            dataset = repository.json(path)
        except SystemExit:
            skipped[name] = "download only (no data file in the repository)"
            continue
        if dataset["n_dim"] != 1:
            skipped[name] = f"multivariate ({dataset['n_dim']} dimensions)"
            continue
        raw = dataset["series"][0]["raw"]
        if any(value is None for value in raw):
            skipped[name] = "missing values"
            continue
        series[name] = [rounded(float(value)) for value in raw]
        per_annotator[name] = {annotator: sorted(points) for annotator, points in annotations.get(name, {}).items()}
        labels[name] = sorted({point for points in per_annotator[name].values() for point in points})
        paths.append(path)
    return {
        "source": f"github:{TCPD}",
        "commit": repository.commit,
        "paths": paths,
        "description": ("The Turing Change Point Dataset (van den Burg & Williams 2020): real-world series annotated "
                        "by five people each, univariate ones stored in the repository; not software benchmarks."),
        "unit": "various",
        "lower_is_better": None,
        "series": series,
        "labels": labels,
        "annotations": per_annotator,
        "skipped_datasets": skipped,
    }


SOURCES = {
    "asv_django_samples.json": (DJANGO_ASV, DJANGO_ASV_COMMIT, django_asv),
    "perfherder_graphs.json": (TREEHERDER, TREEHERDER_COMMIT, perfherder_graphs),
    "tcpd_annotated.json": (TCPD, TCPD_COMMIT, tcpd_annotated),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirrors", default=os.environ.get("PILOTWEB_MIRRORS"),
                        help="Directory holding git copies of the source repositories (or PILOTWEB_MIRRORS).")
    parser.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME=PATH",
                        help="A git directory for one source repository.")
    parser.add_argument("--only", nargs="+", choices=sorted(SOURCES), help="Only these files.")
    parser.add_argument("--output", default=str(OUTPUT), help="Where to write (default var/histories).")
    arguments = parser.parse_args()
    given = dict(entry.split("=", 1) for entry in arguments.repo)
    mirrors = Path(arguments.mirrors) if arguments.mirrors else None
    output = Path(arguments.output)
    output.mkdir(parents=True, exist_ok=True)
    for file, (repo, commit, build) in SOURCES.items():
        if arguments.only and file not in arguments.only:
            continue
        repository = Repository(locate(repo, mirrors, given), commit)
        try:
            document = build(repository)
        finally:
            repository.close()
        (output / file).write_text(json.dumps(document, separators=(",", ":")) + "\n", encoding="utf-8")
        lengths = sorted({len(values) for values in document["series"].values()})
        print(f"{file}: {len(document['series'])} series, {lengths[0]}-{lengths[-1]} points, "
              f"github:{repo} @ {commit}", file=sys.stderr)


if __name__ == "__main__":
    main()
