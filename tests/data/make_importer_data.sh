#!/bin/sh
# Regenerates the real tool outputs used by tests/results/test_importers.py.
# Run from anywhere:  sh tests/data/make_importer_data.sh
# Needs: the project venv (pyperf 2.10.0, pytest-benchmark 5.3.1), Debian packages
# hyperfine (1.15.0) and libbenchmark-dev (Google Benchmark 1.7.1) with g++; for the asv data,
# ASV=/path/to/bin/asv (asv 0.6.6 and virtualenv in a venv of their own: see asv/make_asv_data.sh).
# Outputs differ between runs (they are measurements); the tests compare each parser
# against the numbers the tool itself wrote into the same file, so any regeneration works.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
python="${PYTHON:-$here/../../.venv/bin/python}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$here"

# --- pyperf: fixed loops (no calibration run), 4 processes x 3 values + 1 warm-up each
rm -f pyperf_single.json pyperf_suite.json
"$python" bench_pyperf_single.py --quiet --processes 4 --values 3 --warmups 1 --loops 2000 \
    -o pyperf_single.json
# --- pyperf: a suite of 2 benchmarks with automatic loops, so each benchmark starts
#     with a calibration run that has warm-ups only
"$python" bench_pyperf_suite.py --quiet --processes 4 --values 3 --warmups 1 --min-time 0.02 \
    -o pyperf_suite.json

# --- pyperf: unbalanced processes, appended by two invocations (3 processes x 3 values,
#     then 2 processes x 2 values); pyperf itself accepts and averages over all 13 values
rm -f pyperf_unbalanced.json
"$python" bench_pyperf_single.py --quiet --processes 3 --values 3 --warmups 1 --loops 2000 \
    --append pyperf_unbalanced.json
"$python" bench_pyperf_single.py --quiet --processes 2 --values 2 --warmups 1 --loops 2000 \
    --append pyperf_unbalanced.json

# --- pytest-benchmark: --benchmark-json always stores per-round data (stats.data);
#     --benchmark-save without --benchmark-save-data stores the summary only
"$python" -m pytest -q -c /dev/null --rootdir "$here" -p no:django -p no:cacheprovider --noconftest \
    bench_sample.py \
    --benchmark-max-time=0.02 --benchmark-min-rounds=5 \
    --benchmark-json=pytest_benchmark_data.json \
    --benchmark-storage="file://$work/storage" --benchmark-save=summary
cp "$work"/storage/*/0001_summary.json pytest_benchmark_summary.json

# --- Google Benchmark: 5 repetitions (iteration rows + mean/median/stddev/cv aggregates),
#     and a single run without repetitions
g++ -O2 -std=c++17 bench_google.cc -o "$work/bench_google" -lbenchmark -lpthread
"$work/bench_google" --benchmark_min_time=0.01 --benchmark_repetitions=5 \
    --benchmark_format=json > google_benchmark_repetitions.json
"$work/bench_google" --benchmark_min_time=0.01 \
    --benchmark_out=google_benchmark_single.json --benchmark_out_format=json > /dev/null
#     aggregates only: no iteration rows at all, only _mean/_median/_stddev/_cv
"$work/bench_google" --benchmark_min_time=0.01 --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true \
    --benchmark_out=google_benchmark_aggregates_only.json --benchmark_out_format=json > /dev/null

# --- hyperfine: 2 commands, 5 runs each (2 warm-ups), one of them named
hyperfine --style none --shell=none --warmup 2 --runs 5 --export-json hyperfine.json \
    --command-name short-sleep 'sleep 0.01' 'true'
# --- hyperfine: a parameter list (two commands made from one template)
hyperfine --style none --shell=none --runs 3 --export-json hyperfine_parameters.json \
    --parameter-list delay 0.002,0.004 'sleep {delay}'

# --- asv: a results directory of a tiny suite run on 4 commits (its own script, which says what it needs);
#     only when ASV names an asv 0.6.6 executable, since asv is not in the project venv
if [ -n "${ASV:-}" ]; then
    sh asv/make_asv_data.sh
else
    echo "ASV is not set: tests/data/asv/results left as it is" >&2
fi

# --- The files must not name paths of the machine that made them: pyperf records its
#     interpreter's path and build flags. Replace those two metadata values (nothing measured).
"$python" - pyperf_single.json pyperf_suite.json pyperf_unbalanced.json <<'PY'
import json, sys

for name in sys.argv[1:]:
    with open(name) as handle:
        suite = json.load(handle)
    suite["metadata"]["python_executable"] = "python3"
    suite["metadata"]["python_config_args"] = "(removed: names paths of the machine that made the file)"
    with open(name, "w") as handle:
        json.dump(suite, handle, separators=(",", ":"))
PY
