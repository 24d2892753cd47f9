"""One pyperf benchmark; run by make_importer_data.sh (not collected by pytest)."""

import pyperf

runner = pyperf.Runner()
runner.timeit("sum_range", stmt="sum(range(200))")
