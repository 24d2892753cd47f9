// Google Benchmark sample; compiled and run by make_importer_data.sh.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

static void BM_StringCopy(benchmark::State& state) {
  std::string source(static_cast<size_t>(state.range(0)), 'x');
  for (auto _ : state) {
    std::string copy(source);
    benchmark::DoNotOptimize(copy);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_StringCopy)->Arg(4096);

static void BM_SortVector(benchmark::State& state) {
  std::vector<int> data(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    std::iota(data.rbegin(), data.rend(), 0);
    std::sort(data.begin(), data.end());
    benchmark::DoNotOptimize(data.data());
  }
  state.counters["elements"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_SortVector)->Arg(10000)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
