// The optimizer steps the engine runs (optim/rule.h), side by side: each rule's step over one
// shard of n fp32 elements (its param, gradient and slots), as a rank runs it after the
// gradients are reduced. Measures and prints; not a pass/fail test.
//
//   build/bench/bench_optim [--elements N] [--rounds R]
//
// Each round times every rule once, one after the other, so the rounds are side by side; a
// timing repeats the step for at least 0.2 s. Printed: the median nanoseconds per parameter
// over R rounds (default 7), their range, the bytes each step reads and writes per parameter,
// and the ratio to AdamW's median. n defaults to 4M elements (16 MB an array): past the caches,
// where a step is a stream through memory, as for a model's shard.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "zerodp/common/rng.h"
#include "zerodp/optim/rule.h"

namespace {

using zerodp::Optimizer;
using zerodp::optim::Rule;

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

struct Shard {
  std::vector<float> param, grad, slot[2];
  Shard(std::size_t n, std::size_t slots) : param(n), grad(n) {
    for (std::size_t i = 0; i < n; ++i) {
      param[i] = zerodp::counter_normal(1, 0, i);
      grad[i] = 1e-2f * zerodp::counter_normal(2, 0, i);
    }
    for (std::size_t k = 0; k < slots; ++k) slot[k].assign(n, 0.0f);
  }
};

// Seconds per step of `rule` on `shard`, over at least 0.2 s of steps.
double seconds_per_step(const Rule& rule, Shard& shard, std::int64_t& t) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  int steps = 0;
  double elapsed = 0;
  do {
    rule.step({.param = shard.param, .grad = shard.grad, .slot = {shard.slot[0], shard.slot[1]}},
              1.0f, 1e-3f, ++t, rule.defaults);
    ++steps;
    elapsed = std::chrono::duration<double>(clock::now() - start).count();
  } while (elapsed < 0.2);
  return elapsed / steps;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = std::size_t(1) << 22;
  int rounds = 7;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--elements" && i + 1 < argc) {
      n = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "bench_optim: unknown argument %s: [--elements N] [--rounds R]\n",
                   argv[i]);
      return 2;
    }
  }
  if (n == 0 || rounds < 1) {
    std::fprintf(stderr, "bench_optim: --elements and --rounds take a positive count\n");
    return 2;
  }
  const Optimizer ids[] = {Optimizer::adam, Optimizer::lion, Optimizer::sgd_momentum,
                           Optimizer::sgd};
  std::vector<const Rule*> rules;
  std::vector<Shard> shards;
  for (Optimizer id : ids) {
    rules.push_back(zerodp::optim::engine_rule(id));
    shards.emplace_back(n, rules.back()->row->slots.size());
  }
  std::vector<std::vector<double>> ns(rules.size());
  std::vector<std::int64_t> t(rules.size(), 0);
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t k = 0; k < rules.size(); ++k) {
      ns[k].push_back(1e9 * seconds_per_step(*rules[k], shards[k], t[k]) / double(n));
    }
  }
  std::printf("bench_optim: one step over %zu fp32 elements, median of %d rounds; CPU: %s\n", n,
              rounds, cpu_model().c_str());
  std::printf("  %-14s %12s %20s %16s %10s\n", "optimizer", "ns/param", "range", "bytes/param",
              "/ AdamW");
  double adamw = 0;
  for (std::size_t k = 0; k < rules.size(); ++k) {
    std::vector<double> v = ns[k];
    std::sort(v.begin(), v.end());
    const double median = v[v.size() / 2];
    if (k == 0) adamw = median;
    // Read: param, grad and each slot; written: param and each slot.
    const std::size_t slots = rules[k]->row->slots.size();
    const std::size_t bytes = 4 * (2 + slots) + 4 * (1 + slots);
    char range[64];
    std::snprintf(range, sizeof range, "%.3f-%.3f", v.front(), v.back());
    std::printf("  %-14s %12.3f %20s %16zu %10.2f\n",
                std::string(zerodp::optim::engine_word(*rules[k]->row)).c_str(), median, range,
                bytes, median / adamw);
  }
  return 0;
}
