#include "peak_report.h"
#include "output.h"

#include <cstdio>

#include "app.h"
#include "zerodp/common/error.h"
#include "zerodp/common/units.h"
#include "zerodp/run/engine_run.h"

namespace zerodp::cli {

void print_peak(const std::string& model, const predict::EngineRun& run, std::uint64_t budget,
                int max_ranks) {
  const predict::RankPeak top = predict::predict_rank_peak(run, 0);
  auto bytes = [](std::uint64_t b) { return units::format_bytes(b); };
  std::fprintf(out(), "Predicted peak per rank (a plan: nothing is allocated)\n");
  std::fprintf(out(), "  model           %s\n", model.c_str());
  const std::string qwz = run::zeropp_description(run);
  const std::string threads =
      run.model_threads > 1 ? ", " + std::to_string(run.model_threads) + " threads per rank" : "";
  std::fprintf(
      out(), "  run             %s%s on %d ranks (%s), %s, micro-batch %llu, grad-accum %llu%s%s\n",
      run::stage_label(run.stage).c_str(), qwz.c_str(), run.ranks, run.mpi ? "mpi" : "threads",
      std::string(run.optimizer).c_str(), (unsigned long long)run.micro_batch,
      (unsigned long long)run.grad_accum, threads.c_str(), run.prefetch ? "" : ", no prefetch");
  std::fprintf(out(), "\n  %-16s %14s\n", "category", "rank 0");
  for (int c = 0; c < kCategoryCount; ++c) {
    std::fprintf(out(), "  %-16s %14s\n",
                 std::string(category_name(static_cast<Category>(c))).c_str(),
                 bytes(top.bytes[c]).c_str());
  }
  std::fprintf(out(), "  %-16s %14s  (model state %s; reached in the first step's %s)\n", "peak",
               bytes(top.peak_bytes).c_str(), bytes(top.model_state_bytes()).c_str(),
               std::string(phase_name(top.moment)).c_str());
  for (int r : run::shown_ranks(run.ranks)) {
    if (r == 0) continue;
    const std::uint64_t peak = predict::predict_rank_peak(run, r).peak_bytes;
    if (peak != top.peak_bytes) {
      std::fprintf(out(), "  rank %-11d %14s  (a smaller shard)\n", r, bytes(peak).c_str());
    }
  }
  if (budget == 0) {
    std::fprintf(out(), "\n  budget          none (--rank-memory BYTES checks one)\n");
    return;
  }
  const bool fits = top.peak_bytes <= budget;
  std::fprintf(
      out(), "\n  budget          %s per rank: %s\n", bytes(budget).c_str(),
      fits ? "fits" : ("does not fit, " + bytes(top.peak_bytes - budget) + " over").c_str());
  std::fprintf(out(), "  what fits       %s\n",
               name_fields(run::fit_advice(run, budget, max_ranks), flag_of_field).c_str());
}

}  // namespace zerodp::cli
