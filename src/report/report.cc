// make_plan(): checks that each question asked has its inputs, then fills every cell the
// inputs determine.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "zerodp/common/error.h"
#include "zerodp/common/units.h"
#include "zerodp/plan/feasibility.h"
#include "zerodp/report/report.h"

namespace zerodp::report {
namespace {

using u128 = unsigned __int128;

// A question asked without its inputs: `message` opens with the input it blames.
void require(bool present, const std::string& message) {
  if (!present) throw InvalidArgument(message);
}

// The two levels' bandwidths: each level that carries traffic needs its own, and a level with
// none (one node, or one GPU a node) takes none rather than one silently unused.
void validate_levels(const PlanInputs& in) {
  const bool intra = in.intra_bandwidth.has_value(), inter = in.inter_bandwidth.has_value();
  if (!intra && !inter) return;
  require(!in.bandwidth.has_value(),
          field_ref("bandwidth") + ": not with " + field_ref("intra_bandwidth") + "/" +
              field_ref("inter_bandwidth") + ", which give it per level");
  require(in.topology.has_value(),
          std::string(intra ? field_ref("intra_bandwidth") : field_ref("inter_bandwidth")) +
              ": needs " + field_ref("gpus_per_node") + " (and " + field_ref("nodes") + " or " +
              field_ref("gpus") + "), the two levels it applies to");
  const deepspeed::Topology& t = *in.topology;
  require(t.gpus_per_node > 1 || !intra, field_ref("intra_bandwidth") + ": one GPU a node (" +
                                             field_ref("gpus_per_node") +
                                             " 1) sends nothing inside a node");
  require(t.nodes > 1 || !inter, field_ref("inter_bandwidth") +
                                     ": one node sends nothing across nodes; give " +
                                     field_ref("nodes") + " K > 1");
  require(t.gpus_per_node == 1 || intra, field_ref("intra_bandwidth") + ": required with " +
                                             field_ref("inter_bandwidth") +
                                             ", a bandwidth per GPU such as "
                                             "300GB/s (NVLink)");
  require(t.nodes == 1 || inter, field_ref("inter_bandwidth") + ": required with " +
                                     field_ref("intra_bandwidth") +
                                     " across nodes, a bandwidth per GPU "
                                     "such as 50GB/s (400 Gbit/s)");
}

void validate(const PlanInputs& in) {
  validate_levels(in);
  const bool compute = in.compute_seconds.has_value();
  const bool bandwidth = in.bandwidth || in.intra_bandwidth || in.inter_bandwidth;
  const bool inverse = in.gpus && in.gpu_memory;
  const bool efficiency_only = in.comm_bytes && compute && bandwidth;
  require(in.params || inverse || efficiency_only,
          field_ref("params") +
              ": required, a count such as 1e9, 7.5B, 175B or 50M (without it, give " +
              field_ref("gpus") +
              " "
              "and " +
              field_ref("gpu_memory") + " for the largest model, or " + field_ref("comm_bytes") +
              ", " + field_ref("bandwidth") + " and " + field_ref("compute_time") +
              " for the efficiency)");
  require(compute || !in.bandwidth, field_ref("compute_time") + ": required with " +
                                        field_ref("bandwidth") +
                                        ", a duration such "
                                        "as 10s or 250ms");
  require(bandwidth || !compute,
          field_ref("bandwidth") + ": required with " + field_ref("compute_time") +
              ", a bandwidth such "
              "as 300GB/s (or " +
              field_ref("intra_bandwidth") + " and " + field_ref("inter_bandwidth") + ")");
  require(!(in.comm_bytes && (in.intra_bandwidth || in.inter_bandwidth)),
          field_ref("comm_bytes") + ": not with " + field_ref("intra_bandwidth") + "/" +
              field_ref("inter_bandwidth") +
              ", which count each level's "
              "bytes");
  require(compute || !in.overlap, field_ref("overlap") + ": needs " + field_ref("compute_time") +
                                      " and " + field_ref("bandwidth"));
  require(compute || !in.comm_bytes, field_ref("comm_bytes") + ": needs " +
                                         field_ref("compute_time") + " and " +
                                         field_ref("bandwidth"));
  require(compute || !in.time_convention, field_ref("comm_convention") + ": needs " +
                                              field_ref("compute_time") + " and " +
                                              field_ref("bandwidth"));
  require(!(in.comm_bytes && in.time_convention), field_ref("comm_convention") + ": not with " +
                                                      field_ref("comm_bytes") +
                                                      ", which gives the volume itself");
  if (compute && !in.comm_bytes) {
    require(in.params.has_value(), field_ref("params") +
                                       ": required to compute the communication time "
                                       "(or give the volume with " +
                                       field_ref("comm_bytes") + " such as 2.06TB)");
    require(in.gpus.has_value(), field_ref("gpus") +
                                     ": required to compute the communication time, a whole "
                                     "number such as 8 (or give the volume with " +
                                     field_ref("comm_bytes") + ")");
  }
  require(in.gpu_memory || !in.round_to,
          field_ref("round_to") + ": needs " + field_ref("gpu_memory") + ", the budget to fit");
  if (in.params) {
    plan::check_fits_in_64_bits(*in.params, in.bpp);
    const u128 total = u128(*in.params) * in.bpp.total() + in.activation_bytes;
    if (total > std::numeric_limits<std::uint64_t>::max()) {
      throw InvalidArgument(in.activations_from + ": expected activations whose sum with the " +
                            "model state fits in 64 bits, got " +
                            std::to_string(in.activation_bytes) + " bytes");
    }
  }
}

// Seconds for one level's bytes; a level without traffic takes no bandwidth (validate_levels).
double level_time(std::uint64_t bytes, const std::optional<double>& bandwidth,
                  const std::string& field) {
  if (bytes == 0) return 0;
  const double seconds = static_cast<double>(bytes) / *bandwidth;
  if (!std::isfinite(seconds)) {
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.3g B/s", *bandwidth);
    throw InvalidArgument(field + ": expected a bandwidth at which " + units::format_bytes(bytes) +
                          " take a finite time, got " + rate);
  }
  return seconds;
}

plan::StepTime time_of(const PlanInputs& in, std::uint64_t bytes) {
  // --bandwidth takes any positive finite rate; one so small that the step's bytes would take
  // more seconds than a double holds has no answer to print.
  if (!std::isfinite(static_cast<double>(bytes) / *in.bandwidth)) {
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.3g B/s", *in.bandwidth);
    throw InvalidArgument(field_ref("bandwidth") + ": expected a bandwidth at which " +
                          units::format_bytes(bytes) + " take a finite time, got " + rate);
  }
  return plan::step_time(*in.compute_seconds, bytes, *in.bandwidth, in.overlap.value_or(0.0));
}

// What the peak's terms are computed from; buffers need a model to size them.
deepspeed::RuntimeRun runtime_run(const PlanInputs& in) {
  if (!in.params) return {};
  const std::uint64_t outside = in.model ? in.model->params.outside_params : 0;
  const std::uint64_t layer = in.model ? in.model->params.per_layer_params : 0;
  return {{*in.params, in.largest_layer.value_or(0), in.persistent_params, in.reuse_kept_params,
           outside, layer},
          in.bpp,
          in.offload,
          in.buffers,
          in.buffer_settings,
          in.zeropp,
          in.cuda_overhead,
          in.optimizer_impl,
          in.fp16_optimizer,
          in.framework,
          in.fsdp_shard_bytes,
          in.fsdp_optimizer_impl,
          in.fsdp_limit_all_gathers};
}

// One stage at N GPUs: what each holds, its peak, what it sends (at both levels with a
// topology) and whether it fits. `gpu`: the bytes per parameter that stay on the GPU.
void plan_at_n(const PlanInputs& in, const PlanReport& report, const deepspeed::RuntimeRun& runtime,
               const plan::BytesPerParam& gpu, StageReport& s) {
  const Stage stage = s.stage;
  s.model_state_bytes = plan::model_state_bytes(*in.params, *in.gpus, stage, gpu);
  s.offload = deepspeed::offload_bytes(*in.params, *in.gpus, stage, in.bpp, in.offload);
  s.total_bytes = *s.model_state_bytes + in.activation_bytes;
  if (report.runtime_counted) {
    s.runtime = deepspeed::runtime_terms(stage, *in.gpus, runtime);
    s.total_bytes = s.runtime->peak(*s.model_state_bytes, in.activation_bytes);
  }
  s.comm_seed = plan::seed_step_bytes(stage, *in.params, in.bpp, *in.gpus, in.seed_directions);
  s.comm_ring = plan::ring_step_bytes(stage, *in.params, in.bpp, *in.gpus);
  if (in.gpu_memory) s.fits = *s.total_bytes <= *in.gpu_memory;
  if (!in.topology) return;
  s.levels = deepspeed::level_step_bytes(stage, *in.params, in.bpp, *in.topology, in.zeropp);
  if (in.intra_bandwidth || in.inter_bandwidth) {
    s.level_intra_seconds =
        level_time(s.levels->intra, in.intra_bandwidth, field_ref("intra_bandwidth"));
    s.level_inter_seconds =
        level_time(s.levels->inter, in.inter_bandwidth, field_ref("inter_bandwidth"));
  }
}

// The least N that fits the budget (with Φ), or the largest Φ at N (without it).
void plan_fit(const PlanInputs& in, const PlanReport& report, const deepspeed::RuntimeRun& runtime,
              const plan::BytesPerParam& gpu, StageReport& s) {
  if (!report.budget) return;
  if (!in.params) {
    if (in.gpus) s.max_params = plan::max_params(*in.gpus, s.stage, gpu, *report.budget);
    return;
  }
  s.min_gpus_asked = true;
  s.min_gpus =
      report.runtime_counted
          ? deepspeed::min_gpus_for_peak(s.stage, runtime, in.activation_bytes, *in.gpu_memory,
                                         in.round_to.value_or(1))
          : plan::min_gpus(*in.params, s.stage, gpu, *report.budget, in.round_to.value_or(1));
}

// The step's time, from the two levels' seconds or from one volume at one bandwidth.
void plan_time(const PlanInputs& in, StageReport& s) {
  if (!in.compute_seconds) return;
  if (s.level_intra_seconds) {
    s.time =
        plan::step_time_of(*in.compute_seconds, *s.level_intra_seconds + *s.level_inter_seconds,
                           in.overlap.value_or(0.0));
    return;
  }
  if (in.comm_bytes) {
    s.time_comm_bytes = *in.comm_bytes;
  } else {
    s.time_comm_bytes = in.time_convention == CommConvention::seed ? s.comm_seed : s.comm_ring;
  }
  s.time = time_of(in, *s.time_comm_bytes);
}

// What the stages say side by side: each one's saving against DP, the cheapest that fits,
// ZeRO-3's price in bytes, and whether activations outweigh DP's model state.
void compare_stages(PlanReport& report) {
  const PlanInputs& in = report.inputs;
  const StageReport& dp = report.stages[0];
  for (StageReport& s : report.stages) {
    if (s.total_bytes && *dp.total_bytes > 0) {
      // Signed: a ZeRO stage's peak can exceed DP's (a reduction buffer larger than what it
      // shards away), and then it saves a negative fraction, not a wrapped difference.
      const std::uint64_t d = *dp.total_bytes, t = *s.total_bytes;
      const double saved = t <= d ? static_cast<double>(d - t) : -static_cast<double>(t - d);
      s.savings_vs_dp = saved / static_cast<double>(d);
    }
    if (s.fits && *s.fits && !report.cheapest_fitting_stage) {
      report.cheapest_fitting_stage = stage_number(s.stage);
    }
  }
  const StageReport& z3 = report.stages[3];
  if (in.gpus && *in.gpus > 1 && dp.comm_seed && *dp.comm_seed > 0) {
    report.comm_ratio_seed = static_cast<double>(*z3.comm_seed) / *dp.comm_seed;
    report.comm_ratio_ring = static_cast<double>(*z3.comm_ring) / *dp.comm_ring;
  }
  if (in.params && in.activations_given) {
    report.activations_dominate = in.activation_bytes > *dp.floor_bytes;
  }
}

// The stage the user asked about (--stage or the config's), or none.
bool wanted_fits(const PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (in.configured_stage) return *report.stages[stage_number(*in.configured_stage)].fits;
  return report.cheapest_fitting_stage.has_value();
}

// The stage with the least N, the lower stage on a tie; nullopt when no N fits any stage.
std::optional<int> stage_with_least_n(const PlanReport& report) {
  std::optional<int> best;
  for (const StageReport& s : report.stages) {
    if (!s.min_gpus) continue;
    if (!best || *s.min_gpus < *report.stages[std::size_t(*best)].min_gpus) {
      best = stage_number(s.stage);
    }
  }
  return best;
}

// Each activation choice planned again (make_plan() of the changed inputs) and kept with the
// cheapest way it fits, so that a plan that does not fit always says what would: the stage
// wanted at N; else, when a stage was asked for, the cheapest other stage that fits at N; else
// the stage wanted (or the one with the least N) on more GPUs, planned again at that N. More
// GPUs are not tried on a topology (--gpus-per-node), whose N is set by its nodes.
void find_fitting_changes(PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (!report.budget || !in.params || !in.gpus || wanted_fits(report)) return;
  report.changes_tried = !in.activation_choices.empty();
  for (const PlanInputs::ActivationChoice& choice : in.activation_choices) {
    PlanInputs with = in;
    with.activation_bytes = choice.bytes;
    with.activation_choices.clear();
    const PlanReport other = make_plan(with);
    std::optional<int> stage;
    if (wanted_fits(other)) {
      stage =
          in.configured_stage ? stage_number(*in.configured_stage) : *other.cheapest_fitting_stage;
    } else {
      stage = other.cheapest_fitting_stage;  // another stage than the one asked for
    }
    if (stage) {
      report.fitting_changes.push_back({choice.change,
                                        choice.bytes,
                                        *stage,
                                        *other.stages[std::size_t(*stage)].total_bytes,
                                        {}});
      continue;
    }
    if (in.topology) continue;
    const std::optional<int> on_more = in.configured_stage
                                           ? std::optional(stage_number(*in.configured_stage))
                                           : stage_with_least_n(other);
    if (!on_more || !other.stages[std::size_t(*on_more)].min_gpus) continue;
    with.gpus = *other.stages[std::size_t(*on_more)].min_gpus;
    const PlanReport there = make_plan(with);
    report.fitting_changes.push_back({choice.change, choice.bytes, *on_more,
                                      *there.stages[std::size_t(*on_more)].total_bytes, with.gpus});
  }
  // More GPUs cost more than any change that fits on the GPUs there are: listed only alone.
  auto& changes = report.fitting_changes;
  if (std::any_of(changes.begin(), changes.end(), [](const auto& c) { return !c.gpus; })) {
    std::erase_if(changes, [](const PlanReport::FittingChange& c) { return c.gpus.has_value(); });
  }
}

}  // namespace

PlanReport make_plan(const PlanInputs& in) {
  validate(in);
  PlanReport report;
  report.inputs = in;
  if (in.gpu_memory) {
    // What the activations and the CUDA allowance leave for the model state; nothing, when
    // they alone reach the GPU memory (then no stage fits at any N: said, not refused).
    const u128 held = u128(in.activation_bytes) + in.cuda_overhead;
    report.activations_fill_gpu = held >= *in.gpu_memory;
    report.budget = report.activations_fill_gpu ? 0 : std::uint64_t(*in.gpu_memory - held);
  }
  // Buffers need a model to size them; the CUDA allowance and hpZ's copy apply to any.
  report.runtime_counted = in.params && (in.buffers || in.cuda_overhead > 0 || in.zeropp.hpz());
  const deepspeed::RuntimeRun runtime = runtime_run(in);
  for (Stage stage : kStages) {
    StageReport& s = report.stages[stage_number(stage)];
    s.stage = stage;
    // What stays on the GPU: offload takes states off it, the network moves the same bytes.
    const plan::BytesPerParam gpu = deepspeed::gpu_bytes_per_param(in.bpp, in.offload, stage);
    s.offloaded = deepspeed::offload_applies(in.offload, stage);
    if (in.params) s.floor_bytes = plan::floor_bytes(*in.params, stage, gpu);
    if (in.params && in.gpus) plan_at_n(in, report, runtime, gpu, s);
    plan_fit(in, report, runtime, gpu, s);
    plan_time(in, s);
  }
  compare_stages(report);
  find_fitting_changes(report);
  return report;
}

}  // namespace zerodp::report
