#include "zerodp/run/engine_run.h"

#include <cstdlib>

#include "zerodp/common/error.h"
#include "zerodp/common/optimizers.h"
#include "zerodp/common/units.h"
#include "zerodp/optim/rule.h"

namespace zerodp::run {
namespace {

nlohmann::json categories_json(const predict::RankPeak& p) {
  nlohmann::json j = nlohmann::json::object();
  for (int c = 0; c < kCategoryCount; ++c) {
    j[std::string(category_name(static_cast<Category>(c)))] = p.bytes[c];
  }
  return j;
}

}  // namespace

plan::BytesPerParam engine_bytes_per_param(const zero::EngineOptions& options) {
  // The engine's 16-bit params and grads take 2 bytes in fp16 and bf16 alike.
  return plan::bytes_per_param(plan::Precision::bf16, options.rule().row->id);
}

std::uint64_t engine_model_state_bytes(const predict::EngineRun& planned,
                                       const zero::EngineOptions& options, std::uint64_t params,
                                       int rank) {
  // 8-bit and factored slots, and a LoRA run's frozen base, are laid out by the partition:
  // the seed's formula has no term for them.
  const auto* gpt = std::get_if<predict::GptShape>(&planned.model);
  if (options.rule().blockwise() || options.rule().factored() || (gpt && gpt->lora_rank > 0))
    return predict::predict_rank_peak(planned, rank).model_state_bytes();
  return plan::model_state_bytes(params, planned.ranks, options.stage,
                                 engine_bytes_per_param(options));
}

std::string stage_label(Stage stage) {
  return "ZeRO-" + std::to_string(stage_number(stage));
}

std::vector<int> shown_ranks(int ranks) {
  if (ranks <= 1024) {
    std::vector<int> all(ranks);
    for (int r = 0; r < ranks; ++r) all[r] = r;
    return all;
  }
  return {0, ranks - 1};
}

predict::EngineRun engine_run(const ModelSpec& spec, const zero::EngineOptions& o,
                              const Launch& launch, int ranks, int backend_ranks_per_host) {
  predict::EngineRun run;
  if (spec.is_gpt()) {
    const model::GptConfig& g = spec.gpt();
    run.model = predict::GptShape{.layers = std::uint64_t(g.layers),
                                  .heads = std::uint64_t(g.heads),
                                  .hidden = std::uint64_t(g.hidden),
                                  .seq_len = std::uint64_t(g.seq_len),
                                  .vocab = std::uint64_t(g.vocab),
                                  .checkpoint_activations = g.checkpoint_activations,
                                  .bf16_compute = g.compute == model::Compute::bf16,
                                  .lora_rank = std::uint64_t(g.lora_rank),
                                  .lora_targets = g.lora_targets,
                                  .nf4 = o.frozen_nf4,
                                  .double_quant = o.frozen_double_quant};
  } else {
    run.model =
        predict::MlpShape{.width = spec.mlp().width, .depth = std::uint64_t(spec.mlp().depth)};
  }
  run.model_threads = model_threads(launch, spec.is_gpt(), o.micro_batch);
  run.stage = o.stage;
  run.ranks = ranks;
  run.micro_batch = o.micro_batch;
  run.grad_accum = std::uint64_t(o.grad_accum);
  run.bucket_bytes = o.bucket_bytes;
  run.prefetch = o.prefetch;
  run.optimizer = optim::engine_word(*o.rule().row);
  run.m_slots = run.v_slots = 0;
  for (const StateSlot& slot : o.rule().row->slots)
    ++(holds_squares(slot) ? run.v_slots : run.m_slots);
  if (o.rule().blockwise()) run.blockwise = o.rule().row;
  if (o.rule().factored()) run.factored = o.rule().row;
  run.zeropp = o.zeropp;
  run.qwz_block = o.qwz_block;
  if (o.zeropp.uses_hosts()) {
    if (o.ranks_per_host > 0 && ranks % o.ranks_per_host != 0) {
      throw InvalidArgument("ranks_per_host",
                            field_ref("ranks_per_host") + ": " + std::to_string(o.ranks_per_host) +
                                " does not divide the " + std::to_string(ranks) + " ranks");
    }
    int per_host = o.ranks_per_host > 0 ? o.ranks_per_host : backend_ranks_per_host;
    if (per_host <= 0 && launch.backend == "mpi") {
      const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
      per_host = local ? std::atoi(local) : 0;
    }
    const int hosts_of =
        per_host > 0 && per_host <= ranks && ranks % per_host == 0 ? per_host : ranks;
    run.ranks_per_host = hosts_of;
  }
  run.mpi = launch.backend == "mpi";
  run.mpi_segment_bytes = launch.options.mpi_segment_bytes;
  return run;
}

std::string zeropp_value(const zero::EngineOptions& o) {
  return o.zeropp.words();
}

std::string zeropp_description(const predict::EngineRun& run) {
  std::string parts;
  if (run.zeropp.qwz) parts = "qwZ (int8 gathers, blocks of " + std::to_string(run.qwz_block) + ")";
  if (run.hpz_ranks() > 0) {
    parts += (parts.empty() ? "" : " and ") + std::string("hpZ (hosts of ") +
             std::to_string(run.hpz_ranks()) + (run.hpz_ranks() == 1 ? " rank)" : " ranks)");
  }
  if (run.qgz_ranks() > 0) {
    parts += (parts.empty() ? "" : " and ") + std::string("qgZ (int8 all-to-alls, hosts of ") +
             std::to_string(run.qgz_ranks()) + (run.qgz_ranks() == 1 ? " rank)" : " ranks)");
  }
  return parts.empty() ? "" : " with " + parts;
}

std::string fit_advice(const predict::EngineRun& run, std::uint64_t budget, int max_ranks) {
  const std::string n = std::to_string(run.ranks);
  const std::string up_to = "none up to " + std::to_string(max_ranks);
  if (const auto stage = predict::cheapest_stage_that_fits(run, budget)) {
    std::string advice = "at N = " + n + " the cheapest stage that fits is " + stage_label(*stage);
    if (*stage != run.stage) {
      predict::EngineRun same = run;
      const auto least = predict::least_ranks_that_fit(same, budget, max_ranks);
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
    predict::EngineRun at = run;
    at.stage = *it;
    const auto least = predict::least_ranks_that_fit(at, budget, max_ranks);
    any = any || least.has_value();
    advice += std::string(it == kStages.rbegin() ? " " : ", ") + stage_label(*it) + " " +
              (least ? std::to_string(*least) : up_to);
  }
  if (!any) {
    // What no N shards: at the most ranks searched, ZeRO-3 still holds this much. Name its
    // largest part besides the model state, and the flag that shrinks it.
    predict::EngineRun widest = run;
    widest.stage = Stage::zero3;
    widest.ranks = max_ranks;
    const predict::RankPeak floor = predict::predict_rank_peak(widest, 0);
    Category largest = Category::activations;
    for (int c = 0; c < kCategoryCount; ++c) {
      const auto cat = static_cast<Category>(c);
      if (!is_model_state(cat) && floor[cat] > floor[largest]) largest = cat;
    }
    advice += "; even then ZeRO-3 holds " + units::format_bytes(floor.peak_bytes) +
              ", the largest part " + std::string(category_name(largest)) + " " +
              units::format_bytes(floor[largest]);
    if (largest == Category::activations) {
      advice += ": lower " + field_ref("micro_batch");
      if (std::holds_alternative<predict::GptShape>(run.model))
        advice += " or add " + field_ref("checkpoint_activations");
    } else if (largest == Category::buckets) {
      advice += ": lower " + field_ref("bucket_bytes");
    } else {
      advice += " (it grows with the largest layer)";
    }
  }
  return advice;
}

nlohmann::json peak_json(const predict::EngineRun& run, std::uint64_t budget, int max_ranks,
                         const FieldNamer& name) {
  const predict::RankPeak top = predict::predict_rank_peak(run, 0);
  nlohmann::json per_rank = nlohmann::json::array();
  for (int r : shown_ranks(run.ranks)) {
    const predict::RankPeak p = r == 0 ? top : predict::predict_rank_peak(run, r);
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
                   {"advice", name_fields(fit_advice(run, budget, max_ranks), name)}};
    predict::EngineRun at = run;
    for (Stage stage : kStages) {
      at.stage = stage;
      const auto least = predict::least_ranks_that_fit(at, budget, max_ranks);
      j["budget"]["least_ranks"][std::to_string(stage_number(stage))] =
          least ? nlohmann::json(*least) : nlohmann::json();
    }
    const auto cheapest = predict::cheapest_stage_that_fits(run, budget);
    j["budget"]["cheapest_stage"] =
        cheapest ? nlohmann::json(stage_number(*cheapest)) : nlohmann::json();
  }
  return j;
}

}  // namespace zerodp::run
