// The optimizer steps the engine runs (optim/rule.h), side by side: each rule's step over one
// shard of n fp32 elements (its param, gradient and slots), as a rank runs it after the
// gradients are reduced; 8-bit AdamW's block by block as the engine steps a block it holds whole
// (optim::step_block8: dequantize, step, quantize); Adafactor's on the shard as one matrix of
// 2048 columns held whole (optim/adafactor.h: the rows' and columns' exact sums, the factors,
// Σ u², the update). Measures and prints; not a pass/fail test.
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
#include "zerodp/optim/adafactor.h"
#include "zerodp/optim/blockwise8.h"
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

constexpr std::size_t kBlock = 256;     // bitsandbytes' 8-bit block
constexpr std::size_t kColumns = 2048;  // Adafactor's matrix: a 2048-wide layer's weight

struct Shard {
  std::vector<float> param, grad, slot[2];
  // 8-bit slots: a code an element and an absmax a block, each of m and v.
  std::vector<std::uint8_t> codes[2];
  std::vector<float> absmax[2];
  // Adafactor's: the matrix's row and column states, factors and sums.
  std::size_t rows = 0;
  std::vector<float> row, col, r, c;
  std::vector<zerodp::optim::ExactSum> row_sums, col_sums;
  Shard(std::size_t n, const Rule& rule) : param(n), grad(n) {
    for (std::size_t i = 0; i < n; ++i) {
      param[i] = zerodp::counter_normal(1, 0, i);
      grad[i] = 1e-2f * zerodp::counter_normal(2, 0, i);
    }
    if (rule.factored()) {
      rows = n / kColumns;
      row.assign(rows, 0.0f), r.assign(rows, 0.0f), row_sums.resize(rows);
      col.assign(kColumns, 0.0f), c.assign(kColumns, 0.0f), col_sums.resize(kColumns);
      return;
    }
    for (std::size_t k = 0; k < rule.row->slots.size(); ++k) {
      if (rule.blockwise()) {
        codes[k].assign(n, 0);
        absmax[k].assign((n + kBlock - 1) / kBlock, 0.0f);
      } else {
        slot[k].assign(n, 0.0f);
      }
    }
  }
};

// Adafactor's step of a matrix held whole, as the engine takes it, 1024 elements at a time.
void step_factored(Shard& s, std::int64_t t) {
  namespace optim = zerodp::optim;
  const std::size_t n = s.rows * kColumns;
  const optim::AdafactorDecay d = optim::adafactor_decay(t);
  std::fill(s.row_sums.begin(), s.row_sums.end(), optim::ExactSum{});
  std::fill(s.col_sums.begin(), s.col_sums.end(), optim::ExactSum{});
  optim::adafactor_accumulate(s.grad.data(), n, 1.0f, 0, kColumns, s.row_sums.data(),
                              s.col_sums.data());
  optim::adafactor_factors(s.row_sums.data(), s.col_sums.data(), s.rows, kColumns, d, s.row.data(),
                           s.col.data(), s.r.data(), s.c.data());
  optim::ExactSum sq;
  float u[1024];
  for (std::size_t at = 0; at < n; at += 1024) {
    optim::adafactor_direction_matrix(s.grad.data() + at, std::min<std::size_t>(1024, n - at), 1.0f,
                                      at, kColumns, s.r.data(), s.c.data(), u, &sq);
  }
  const float divisor = optim::adafactor_divisor(sq, n);
  for (std::size_t at = 0; at < n; at += 1024) {
    const std::size_t len = std::min<std::size_t>(1024, n - at);
    optim::adafactor_direction_matrix(s.grad.data() + at, len, 1.0f, at, kColumns, s.r.data(),
                                      s.c.data(), u, nullptr);
    optim::adafactor_apply(s.param.data() + at, u, len, divisor, 1e-3f, 0.0f);
  }
}

void step_once(const Rule& rule, Shard& s, std::int64_t t) {
  if (rule.factored()) {
    step_factored(s, t);
    return;
  }
  if (!rule.blockwise()) {
    rule.step({.param = s.param, .grad = s.grad, .slot = {s.slot[0], s.slot[1]}}, 1.0f, 1e-3f, t,
              rule.defaults);
    return;
  }
  const std::size_t slots = rule.row->slots.size();
  for (std::size_t at = 0, b = 0; at < s.param.size(); at += kBlock, ++b) {
    const std::size_t n = std::min(kBlock, s.param.size() - at);
    std::uint8_t* codes[2] = {};
    float old_max[2] = {}, new_max[2] = {};
    for (std::size_t k = 0; k < slots; ++k)
      codes[k] = s.codes[k].data() + at, old_max[k] = s.absmax[k][b];
    zerodp::optim::step_block8(rule, s.param.data() + at, s.grad.data() + at, n, codes, old_max,
                               nullptr, new_max, 1.0f, 1e-3f, t, rule.defaults);
    for (std::size_t k = 0; k < slots; ++k) s.absmax[k][b] = new_max[k];
  }
}

// Seconds per step of `rule` on `shard`, over at least 0.2 s of steps.
double seconds_per_step(const Rule& rule, Shard& shard, std::int64_t& t) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  int steps = 0;
  double elapsed = 0;
  do {
    step_once(rule, shard, ++t);
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
  if (n < kColumns || n % kColumns != 0 || rounds < 1) {
    std::fprintf(stderr,
                 "bench_optim: --elements takes a positive multiple of %zu (Adafactor's matrix "
                 "has %zu columns), --rounds a positive count\n",
                 kColumns, kColumns);
    return 2;
  }
  const Optimizer ids[] = {Optimizer::adam, Optimizer::adam_8bit, Optimizer::adafactor,
                           Optimizer::lion, Optimizer::lion_8bit, Optimizer::sgd_momentum,
                           Optimizer::sgd};
  std::vector<const Rule*> rules;
  std::vector<Shard> shards;
  for (Optimizer id : ids) {
    rules.push_back(zerodp::optim::engine_rule(id));
    shards.emplace_back(n, *rules.back());
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
    // Read: param, grad and each slot; written: param and each slot (a byte a slot when 8-bit,
    // the blocks' absmax apart). Adafactor reads the gradient three times (the sums, Σ u², the
    // update) and the param once, and writes the param; its states are a row and a column.
    const std::size_t slots = rules[k]->row->slots.size();
    const std::size_t slot_bytes = rules[k]->blockwise() ? 1 : 4;
    const std::size_t bytes =
        rules[k]->factored() ? 4 * 3 + 4 + 4 : 4 * 2 + slot_bytes * slots + 4 + slot_bytes * slots;
    char range[64];
    std::snprintf(range, sizeof range, "%.3f-%.3f", v.front(), v.back());
    std::printf("  %-14s %12.3f %20s %16zu %10.2f\n",
                std::string(zerodp::optim::engine_word(*rules[k]->row)).c_str(), median, range,
                bytes, median / adamw);
  }
  return 0;
}
