#include "peak_report.h"

#include <cstdio>
#include <cstdlib>
#include <variant>

#include "zerodp/error.h"
#include "zerodp/units.h"

namespace zerodp::cli {
namespace {

std::string stage_label(Stage stage) {
  return "ZeRO-" + std::to_string(stage_number(stage));
}

// The ranks whose figures are shown: all up to 1024, else the first (largest) and the last.
std::vector<int> shown_ranks(int ranks) {
  if (ranks <= 1024) {
    std::vector<int> all(ranks);
    for (int r = 0; r < ranks; ++r) all[r] = r;
    return all;
  }
  return {0, ranks - 1};
}

nlohmann::json categories_json(const plan::RankPeak& p) {
  nlohmann::json j = nlohmann::json::object();
  for (int c = 0; c < kCategoryCount; ++c) {
    j[std::string(category_name(static_cast<Category>(c)))] = p.bytes[c];
  }
  return j;
}

}  // namespace

plan::EngineRun engine_run(const ModelSpec& spec, const EngineOptions& o, const Launch& launch,
                           int ranks) {
  plan::EngineRun run;
  if (spec.is_gpt()) {
    const model::GptConfig& g = spec.gpt();
    run.model = plan::GptShape{.layers = std::uint64_t(g.layers),
                               .heads = std::uint64_t(g.heads),
                               .hidden = std::uint64_t(g.hidden),
                               .seq_len = std::uint64_t(g.seq_len),
                               .vocab = std::uint64_t(g.vocab),
                               .checkpoint_activations = g.checkpoint_activations};
  } else {
    run.model = plan::MlpShape{.width = spec.mlp().width, .depth = std::uint64_t(spec.mlp().depth)};
  }
  run.stage = o.stage;
  run.ranks = ranks;
  run.micro_batch = o.micro_batch;
  run.grad_accum = std::uint64_t(o.grad_accum);
  run.bucket_bytes = o.bucket_bytes;
  run.prefetch = o.prefetch;
  run.mpi = launch.backend == "mpi";
  run.mpi_segment_bytes = launch.options.mpi_segment_bytes;
  return run;
}

int planned_ranks(const Launch& launch) {
  if (launch.ranks > 0) return launch.ranks;
  const char* world = std::getenv("OMPI_COMM_WORLD_SIZE");
  const long n = world ? std::atol(world) : 0;
  if (n < 1 || std::uint64_t(n) > kMaxMpiRanks) {
    throw UsageError(
        "--ranks: expected the number of MPI ranks to plan for (outside mpirun, --backend mpi "
        "has no world size to take it from)");
  }
  return int(n);
}

int max_ranks_searched(const Launch& launch) {
  // MPI: a search, not a launch; past 65536 ranks of a model this small nothing changes.
  return launch.backend == "threads" ? int(kMaxThreadRanks) : 65536;
}

std::string fit_advice(const plan::EngineRun& run, std::uint64_t budget, int max_ranks) {
  const std::string n = std::to_string(run.ranks);
  const std::string up_to = "none up to " + std::to_string(max_ranks);
  if (const auto stage = plan::cheapest_stage_that_fits(run, budget)) {
    std::string advice = "at N = " + n + " the cheapest stage that fits is " + stage_label(*stage);
    if (*stage != run.stage) {
      plan::EngineRun same = run;
      const auto least = plan::least_ranks_that_fit(same, budget, max_ranks);
      if (!least) {
        advice += "; " + stage_label(run.stage) + " fits at no N: " + up_to;
      } else if (*least > run.ranks) {
        advice += "; " + stage_label(run.stage) + " needs N = " + std::to_string(*least);
      } else {
        advice += "; the least N for " + stage_label(run.stage) + " is " + std::to_string(*least);
      }
    }
    return advice;
  }
  std::string advice = "no stage fits at N = " + n + "; least N:";
  bool any = false;
  for (auto it = kStages.rbegin(); it != kStages.rend(); ++it) {
    plan::EngineRun at = run;
    at.stage = *it;
    const auto least = plan::least_ranks_that_fit(at, budget, max_ranks);
    any = any || least.has_value();
    advice += std::string(it == kStages.rbegin() ? " " : ", ") + stage_label(*it) + " " +
              (least ? std::to_string(*least) : up_to);
  }
  if (!any) {
    // What no N shards: at the most ranks searched, ZeRO-3 still holds this much. Name its
    // largest part besides the model state, and the flag that shrinks it.
    plan::EngineRun widest = run;
    widest.stage = Stage::zero3;
    widest.ranks = max_ranks;
    const plan::RankPeak floor = plan::predict_rank_peak(widest, 0);
    Category largest = Category::activations;
    for (int c = 0; c < kCategoryCount; ++c) {
      const auto cat = static_cast<Category>(c);
      if (!is_model_state(cat) && floor[cat] > floor[largest]) largest = cat;
    }
    advice += "; even then ZeRO-3 holds " + units::format_bytes(floor.peak_bytes) +
              ", the largest part " + std::string(category_name(largest)) + " " +
              units::format_bytes(floor[largest]);
    if (largest == Category::activations) {
      advice += ": lower --micro-batch";
      if (std::holds_alternative<plan::GptShape>(run.model))
        advice += " or add --checkpoint-activations";
    } else if (largest == Category::buckets) {
      advice += ": lower --bucket-bytes";
    } else {
      advice += " (it grows with the largest layer)";
    }
  }
  return advice;
}

nlohmann::json peak_json(const plan::EngineRun& run, std::uint64_t budget, int max_ranks) {
  const plan::RankPeak top = plan::predict_rank_peak(run, 0);
  nlohmann::json per_rank = nlohmann::json::array();
  for (int r : shown_ranks(run.ranks)) {
    const plan::RankPeak p = r == 0 ? top : plan::predict_rank_peak(run, r);
    per_rank.push_back(
        {{"rank", r}, {"peak_bytes", p.peak_bytes}, {"categories", categories_json(p)}});
  }
  nlohmann::json j = {{"predicted_peak_bytes", top.peak_bytes},
                      {"model_state_bytes", top.model_state_bytes()},
                      {"moment", std::string(phase_name(top.moment))},
                      {"breakdown", categories_json(top)},
                      {"per_rank", per_rank}};
  if (budget > 0) {
    j["budget"] = {{"rank_memory_bytes", budget},
                   {"fits", top.peak_bytes <= budget},
                   {"advice", fit_advice(run, budget, max_ranks)}};
    plan::EngineRun at = run;
    for (Stage stage : kStages) {
      at.stage = stage;
      const auto least = plan::least_ranks_that_fit(at, budget, max_ranks);
      j["budget"]["least_ranks"][std::to_string(stage_number(stage))] =
          least ? nlohmann::json(*least) : nlohmann::json();
    }
    const auto cheapest = plan::cheapest_stage_that_fits(run, budget);
    j["budget"]["cheapest_stage"] =
        cheapest ? nlohmann::json(stage_number(*cheapest)) : nlohmann::json();
  }
  return j;
}

void print_peak(const std::string& model, const plan::EngineRun& run, std::uint64_t budget,
                int max_ranks) {
  const plan::RankPeak top = plan::predict_rank_peak(run, 0);
  auto bytes = [](std::uint64_t b) { return units::format_bytes(b); };
  std::printf("Predicted peak per rank (a plan: nothing is allocated)\n");
  std::printf("  model           %s\n", model.c_str());
  std::printf("  run             %s on %d ranks (%s), micro-batch %llu, grad-accum %llu%s\n",
              stage_label(run.stage).c_str(), run.ranks, run.mpi ? "mpi" : "threads",
              (unsigned long long)run.micro_batch, (unsigned long long)run.grad_accum,
              run.prefetch ? "" : ", no prefetch");
  std::printf("\n  %-16s %14s\n", "category", "rank 0");
  for (int c = 0; c < kCategoryCount; ++c) {
    std::printf("  %-16s %14s\n", std::string(category_name(static_cast<Category>(c))).c_str(),
                bytes(top.bytes[c]).c_str());
  }
  std::printf("  %-16s %14s  (model state %s; reached in the first step's %s)\n", "peak",
              bytes(top.peak_bytes).c_str(), bytes(top.model_state_bytes()).c_str(),
              std::string(phase_name(top.moment)).c_str());
  for (int r : shown_ranks(run.ranks)) {
    if (r == 0) continue;
    const std::uint64_t peak = plan::predict_rank_peak(run, r).peak_bytes;
    if (peak != top.peak_bytes) {
      std::printf("  rank %-11d %14s  (a smaller shard)\n", r, bytes(peak).c_str());
    }
  }
  if (budget == 0) {
    std::printf("\n  budget          none (--rank-memory BYTES checks one)\n");
    return;
  }
  const bool fits = top.peak_bytes <= budget;
  std::printf(
      "\n  budget          %s per rank: %s\n", bytes(budget).c_str(),
      fits ? "fits" : ("does not fit, " + bytes(top.peak_bytes - budget) + " over").c_str());
  std::printf("  what fits       %s\n", fit_advice(run, budget, max_ranks).c_str());
}

}  // namespace zerodp::cli
