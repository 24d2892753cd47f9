#!/bin/sh
# Regenerates tests/data/asv/results: real asv output for tests/results/test_import_asv.py.
# Run from anywhere:  ASV=/path/to/venv/bin/asv sh tests/data/asv/make_asv_data.sh
# Needs: asv 0.6.6 with virtualenv, e.g. `python3.11 -m venv $V && $V/bin/pip install asv==0.6.6 virtualenv`
# (asv builds the benchmarked package in its own virtualenv, so pip must reach the package index for setuptools).
# Makes a scratch git repository of a tiny package, tinysort, with 4 commits, benchmarks every
# commit with asv, and copies asv's results directory here. The values differ between runs (they
# are measurements); the tests compare the importer with what asv itself wrote into the files.
set -eu

asv="${ASV:-asv}"
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

commit() {  # commit MESSAGE DATE: a commit with that author and committer date (asv orders by it)
    git add -A
    GIT_AUTHOR_DATE="$2" GIT_COMMITTER_DATE="$2" git commit -q -m "$1"
}

git init -q -b main
git config user.name "Pilot Web test data"
git config user.email "testdata@example.invalid"
mkdir tinysort benchmarks
printf '.asv/\n' > .gitignore
cat > pyproject.toml <<'EOF'
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "tinysort"
version = "0.1"
EOF
cat > asv.conf.json <<'EOF'
{
    "version": 1,
    "project": "tinysort",
    "project_url": "https://example.invalid/tinysort",
    "repo": ".",
    "branches": ["main"],
    "environment_type": "virtualenv",
    "pythons": ["3.11"],
    "build_command": ["python -m pip wheel --no-deps -w {build_cache_dir} {build_dir}"],
    "benchmark_dir": "benchmarks",
    "env_dir": ".asv/env",
    "results_dir": ".asv/results",
    "html_dir": ".asv/html"
}
EOF
: > benchmarks/__init__.py
cat > benchmarks/benchmarks.py <<'EOF'
"""A tiny asv suite: plain, parameterized, track, peak-memory and failing benchmarks."""

import random

import tinysort


def time_sum_range():
    sum(range(2000))


def time_broken():
    raise RuntimeError("this benchmark always fails")


def track_comparisons():
    data = random.Random(0).sample(range(300), 300)
    return tinysort.sort_list(data, "insertion")[1]


track_comparisons.unit = "comparisons"


def peakmem_sorted_copy():
    tinysort.sort_list(list(range(100_000, 0, -1)), "quick")


class TimeSort:
    params = ([100, 400], ["quick", "insertion", "bogo"])
    param_names = ["n", "method"]

    def setup(self, n, method):
        if n == 400 and method == "insertion":
            # asv's way to skip a combination: it stores NaN ("n/a")
            raise NotImplementedError("too slow at this size")
        self.data = random.Random(n).sample(range(n), n)

    def time_sort(self, n, method):
        # "bogo" is no method of tinysort: that combination fails (asv stores null)
        tinysort.sort_list(self.data, method)
EOF
cat > tinysort/__init__.py <<'EOF'
"""A tiny sorting library, benchmarked by asv to make Pilot Web's importer test data."""


def sort_list(data, method):
    """A sorted copy of ``data`` and the number of comparisons it took."""
    if method == "quick":
        return sorted(data), 0
    if method == "insertion":
        items = list(data)
        comparisons = 0
        for i in range(1, len(items)):
            key = items[i]
            j = i - 1
            while j >= 0:
                comparisons += 1
                if items[j] <= key:
                    break
                items[j + 1] = items[j]
                j -= 1
            items[j + 1] = key
        return items, comparisons
    raise ValueError(f"unknown method {method!r}")
EOF
commit "tinysort with quick and insertion sort" "2026-11-20T10:00:00+00:00"

sed -i 's/        return sorted(data), 0/        return sorted(data, key=lambda item: item), 0/' tinysort/__init__.py
commit "quick sort through a key function" "2026-11-20T11:00:00+00:00"

cat > tinysort/__init__.py <<'EOF'
"""A tiny sorting library, benchmarked by asv to make Pilot Web's importer test data."""


def sort_list(data, method):
    """A sorted copy of ``data`` and the number of comparisons it took."""
    if method == "quick":
        return sorted(data), 0
    if method == "insertion":
        items = []
        comparisons = 0
        for value in data:
            low, high = 0, len(items)
            while low < high:
                comparisons += 1
                middle = (low + high) // 2
                if items[middle] <= value:
                    low = middle + 1
                else:
                    high = middle
            items.insert(low, value)
        return items, comparisons
    raise ValueError(f"unknown method {method!r}")
EOF
commit "binary insertion sort; quick sort without the key function" "2026-11-20T12:00:00+00:00"

printf 'tinysort: a tiny sorting library benchmarked with asv.\n' > README.txt
commit "add a README" "2026-11-20T13:00:00+00:00"

# The machine's description (machine.json), with asv's defaults: the hostname names the machine.
"$asv" machine --yes
# The two older commits with asv's default storage (statistics only), the two newer ones with
# --record-samples (the per-sample times kept too). asv exits with status 2 when a benchmark
# failed, which two of the suite's do on purpose.
git rev-list --reverse main | head -n 2 > older.txt
git rev-list --reverse main | tail -n 2 > newer.txt
"$asv" run --show-stderr HASHFILE:older.txt || [ $? -eq 2 ]
"$asv" run --show-stderr --record-samples HASHFILE:newer.txt || [ $? -eq 2 ]

rm -rf "$here/results"
cp -r .asv/results "$here/results"
