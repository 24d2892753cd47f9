"""pytest-benchmark sample; run by make_importer_data.sh with an explicit path.

The name does not match ``test_*.py``, so the project's own test run never collects it.
"""

import time

import pytest


def test_sum_range(benchmark):
    result = benchmark(sum, range(20_000))
    assert result == 199_990_000


@pytest.mark.benchmark(group="sorting")
@pytest.mark.parametrize("size", [20_000, 50_000])
def test_sorted(benchmark, size):
    data = list(range(size, 0, -1))
    result = benchmark(sorted, data)
    assert result[0] == 1


def test_sleep_pedantic(benchmark):
    benchmark.extra_info["note"] = "fixed rounds"
    benchmark.pedantic(time.sleep, args=(0.001,), rounds=6, iterations=2, warmup_rounds=1)
