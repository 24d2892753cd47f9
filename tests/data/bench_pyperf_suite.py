"""Two pyperf benchmarks in one suite; run by make_importer_data.sh (not collected by pytest)."""

import pyperf

runner = pyperf.Runner()
runner.timeit("sum_range", stmt="sum(range(200))")
runner.timeit("sorted_list", stmt="sorted(data)", setup="data = list(range(300, 0, -1))")
