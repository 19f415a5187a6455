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

// The host memory a node's GPUs take for their offload: --gpus-per-node of them, or all N on
// one node when the nodes are not given; saturating (the verdict is all that reads it then).
std::uint64_t host_bytes_per_node(const PlanInputs& in, std::uint64_t per_gpu, int n) {
  const u128 bytes = u128(per_gpu) * std::uint64_t(in.gpus_per_node.value_or(n));
  return bytes > std::numeric_limits<std::uint64_t>::max()
             ? std::numeric_limits<std::uint64_t>::max()
             : std::uint64_t(bytes);
}

// Whether the host holds the offload of `stage` for `params` at n GPUs (true where nothing is
// offloaded or no host memory is given).
bool host_holds_params(const PlanInputs& in, Stage stage, std::uint64_t n, std::uint64_t params) {
  if (!in.host_memory || n > std::uint64_t(std::numeric_limits<int>::max())) return true;
  const auto o = deepspeed::offload_bytes(params, int(n), stage, in.bpp, in.offload);
  return !o || host_bytes_per_node(in, o->host_bytes, int(n)) <= *in.host_memory;
}

bool host_holds(const PlanInputs& in, Stage stage, std::uint64_t n) {
  return !in.params || host_holds_params(in, stage, n, *in.params);
}

// The largest Φ at N that fits the GPU's budget and whose offload the host holds: the host's
// bytes grow with Φ, so the largest the host holds is found by bisection below the GPU's.
std::uint64_t max_params_at(const PlanInputs& in, Stage stage, const plan::BytesPerParam& gpu,
                            std::uint64_t budget) {
  std::uint64_t high = plan::max_params(*in.gpus, stage, gpu, budget);
  if (!in.host_memory) return high;
  // The host's bytes are counted for models whose state fits 64 bits (as make_plan() takes Φ).
  high = std::min(
      high, std::numeric_limits<std::uint64_t>::max() / std::max<std::uint64_t>(in.bpp.total(), 1));
  if (host_holds_params(in, stage, std::uint64_t(*in.gpus), high)) return high;
  std::uint64_t low = 0;  // held (no parameters offload nothing); high is not
  while (high - low > 1) {
    const std::uint64_t mid = low + (high - low) / 2;
    (host_holds_params(in, stage, std::uint64_t(*in.gpus), mid) ? low : high) = mid;
  }
  return low;
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
  if (in.gpu_memory) {
    s.verdict = verdict_of(*s.total_bytes, *in.gpu_memory, report.tight_band);
    s.fits = *s.total_bytes <= *in.gpu_memory;
  }
  if (in.host_memory && s.offload) {
    s.host_bytes_per_node = host_bytes_per_node(in, s.offload->host_bytes, *in.gpus);
    s.host_fits = *s.host_bytes_per_node <= *in.host_memory;
    // A stage whose offload the host cannot hold does not fit, whatever the GPU says.
    if (!*s.host_fits) {
      s.fits = false;
      if (s.verdict) s.verdict = Verdict::does_not_fit;
    }
  }
  if (!in.topology) return;
  s.levels = deepspeed::level_step_bytes(stage, *in.params, in.bpp, *in.topology, in.zeropp);
  if (in.intra_bandwidth || in.inter_bandwidth) {
    s.level_intra_seconds =
        level_time(s.levels->intra, in.intra_bandwidth, field_ref("intra_bandwidth"));
    s.level_inter_seconds =
        level_time(s.levels->inter, in.inter_bandwidth, field_ref("inter_bandwidth"));
  }
}

// A side of the band in whole percent (kTightBand's are), so that every comparison with it is
// of integers.
std::uint64_t band_percent(double side) {
  return std::uint64_t(std::llround(side * 100));
}

// The memory less the margin (peak*(1+under) <= M is peak <= M*100/(100+under) in whole
// percent): a plan on it fits exactly where the verdict on all of it is `fits`.
std::uint64_t margin_memory(const PlanInputs& in, std::optional<TightBand> band) {
  if (!band) return *in.gpu_memory;
  return std::uint64_t(u128(*in.gpu_memory) * 100 / (100 + band_percent(band->under)));
}

// The least N that fits the budget (with Φ), or the largest Φ at N (without it).
void plan_fit(const PlanInputs& in, const PlanReport& report, const deepspeed::RuntimeRun& runtime,
              const plan::BytesPerParam& gpu, StageReport& s) {
  if (!report.budget) return;
  // Activations and the allowance beyond the GPU's memory leave a budget of 0 that no N and no
  // model meets, not even a stage that offloads its whole model state.
  const bool overfull = u128(in.activation_bytes) + in.cuda_overhead > *in.gpu_memory;
  if (!in.params) {
    if (in.gpus) s.max_params = overfull ? 0 : max_params_at(in, s.stage, gpu, *report.budget);
    return;
  }
  s.min_gpus_asked = true;
  if (overfull) return;
  const std::uint64_t round_to = in.round_to.value_or(1);
  // The least N whose verdict is `fits`: clear of the band where there is one, so that the
  // count a reader reserves GPUs by is the count every other part of the answer uses.
  s.min_gpus = report.runtime_counted
                   ? deepspeed::min_gpus_for_peak(s.stage, runtime, in.activation_bytes,
                                                  margin_memory(in, report.tight_band), round_to)
                   : plan::min_gpus(*in.params, s.stage, gpu, *report.budget, round_to);
  if (!s.min_gpus || host_holds(in, s.stage, *s.min_gpus)) return;
  // The host's share of a node shrinks with more GPUs only when the node's size is given (all N
  // on one node hold the whole offload whatever N is): then the least N the host holds too.
  if (!in.gpus_per_node) {
    s.min_gpus.reset();
    return;
  }
  std::uint64_t low = *s.min_gpus, high = low;
  while (!host_holds(in, s.stage, high)) {
    if (high > (std::uint64_t(1) << 30)) {
      s.min_gpus.reset();
      return;
    }
    low = high;
    high *= 2;
  }
  while (high - low > 1) {  // host_holds(high), !host_holds(low)
    const std::uint64_t mid = low + (high - low) / 2;
    (host_holds(in, s.stage, mid) ? high : low) = mid;
  }
  s.min_gpus = (high + round_to - 1) / round_to * round_to;
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
    // One rule for "fits" everywhere: the verdict, clear of the band where there is one.
    if (s.verdict == Verdict::fits && !report.cheapest_fitting_stage) {
      report.cheapest_fitting_stage = stage_number(s.stage);
    }
    if (s.verdict == Verdict::tight && !report.cheapest_fitting_stage && !report.tight_stage) {
      report.tight_stage = stage_number(s.stage);
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

// The stage wanted fits with the margin (or, without one asked for, some stage does).
bool wanted_clear(const PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (in.configured_stage) {
    return report.stages[stage_number(*in.configured_stage)].verdict == Verdict::fits;
  }
  return std::any_of(report.stages.begin(), report.stages.end(),
                     [](const StageReport& s) { return s.verdict == Verdict::fits; });
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
  if (!report.budget || !in.params || !in.gpus || wanted_clear(report)) return;
  // A host that cannot hold the offload is not helped by fewer activations: the notes say what
  // fits with nothing offloaded instead.
  const std::optional<Stage> asked = in.configured_stage;
  if (asked && !report.stages[stage_number(*asked)].host_fits.value_or(true)) return;
  report.changes_tried = !in.activation_choices.empty();
  for (const PlanInputs::ActivationChoice& choice : in.activation_choices) {
    // Planned again on the same GPUs: a change offered has the verdict `fits`, as the stages'
    // least N and the cheapest stage have (with the margin, where there is a band).
    PlanInputs with = in;
    with.activation_bytes = choice.bytes;
    with.activation_choices.clear();
    const PlanReport other = make_plan(with);
    std::optional<int> stage;
    if (wanted_clear(other)) {
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
  // More GPUs cost more than any change that fits on the GPUs there are: listed only alone,
  // the fewest first. Three at most, the cheaper changes (the choices' order) first.
  auto& changes = report.fitting_changes;
  if (std::any_of(changes.begin(), changes.end(), [](const auto& c) { return !c.gpus; })) {
    std::erase_if(changes, [](const PlanReport::FittingChange& c) { return c.gpus.has_value(); });
  } else {
    std::stable_sort(changes.begin(), changes.end(),
                     [](const auto& a, const auto& b) { return *a.gpus < *b.gpus; });
  }
  if (changes.size() > 3) changes.resize(3);
}

// The stage wanted (--stage, the config's), else, when no stage fits, ZeRO-3: the one a change
// of offload is planned for. nullopt when the plan fits as asked or DP is wanted (nothing to
// offload at stage 0).
std::optional<Stage> offload_target(const PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (in.configured_stage) {
    if (*in.configured_stage == Stage::dp ||
        report.stages[stage_number(*in.configured_stage)].verdict == Verdict::fits) {
      return std::nullopt;
    }
    return in.configured_stage;
  }
  if (report.cheapest_fitting_stage) return std::nullopt;
  return Stage::zero3;
}

// With N fixed: the offloads a DeepSpeed user can switch to, each planned again at N (its host
// checked), as planned or with the cheapest activation choice that makes it fit. NVMe and the
// params' offload are ZeRO-3's (ZeRO-Infinity), so they are kept only where ZeRO-3 fits.
void find_offload_changes(PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (!report.runtime_counted || !report.budget || !in.params || !in.gpus || *in.gpus < 2 ||
      in.framework == deepspeed::Framework::fsdp || !in.seek_offload_changes) {
    return;
  }
  const std::optional<Stage> target = offload_target(report);
  if (!target) return;
  using D = deepspeed::OffloadDevice;
  const deepspeed::Offload candidates[] = {{D::cpu, D::none},
                                           {D::cpu, D::cpu},
                                           {D::nvme, D::none},
                                           {D::nvme, D::cpu},
                                           {D::nvme, D::nvme}};
  auto planned = [&](const deepspeed::Offload& offload, std::uint64_t activations) {
    PlanInputs with = in;
    with.offload = offload;
    with.activation_bytes = activations;
    with.activation_choices.clear();
    with.seek_fewest_gpus = false;
    with.seek_offload_changes = false;
    return make_plan(with);
  };
  auto change_of = [&](const PlanReport& other, const deepspeed::Offload& offload, int stage,
                       const std::string& activations) {
    const StageReport& s = other.stages[std::size_t(stage)];
    PlanReport::OffloadChange c;
    c.offload = offload;
    c.activation_change = activations;
    c.stage = stage;
    c.verdict = *s.verdict;
    c.total_bytes = *s.total_bytes;
    if (s.offload) {
      c.host_bytes_per_gpu = s.offload->host_bytes;
      c.nvme_bytes_per_gpu = s.offload->nvme_bytes;
    }
    c.host_bytes_per_node = s.host_bytes_per_node;
    return c;
  };
  const int wanted = stage_number(*target);
  const bool activations_fit_at_n =
      std::any_of(report.fitting_changes.begin(), report.fitting_changes.end(),
                  [](const PlanReport::FittingChange& c) { return !c.gpus; });
  if (!in.offload.any()) {
    report.offload_tried =
        change_of(planned(candidates[0], in.activation_bytes), candidates[0], wanted, "");
  }
  for (const deepspeed::Offload& offload : candidates) {
    if (offload.optimizer == in.offload.optimizer && offload.params == in.offload.params) continue;
    const bool infinity = offload.optimizer == D::nvme || offload.params != D::none;
    if (infinity && in.configured_stage && wanted != 3) continue;
    // An offload with a change of the activations is offered only where that change alone
    // does not fit on these GPUs.
    std::vector<PlanInputs::ActivationChoice> tries = {{"", in.activation_bytes}};
    if (!activations_fit_at_n) {
      tries.insert(tries.end(), in.activation_choices.begin(), in.activation_choices.end());
    }
    for (const PlanInputs::ActivationChoice& a : tries) {
      const PlanReport other = planned(offload, a.bytes);
      std::optional<int> stage;
      if (infinity) {
        if (other.stages[3].verdict == Verdict::fits) stage = 3;
      } else if (in.configured_stage) {
        if (other.stages[std::size_t(wanted)].verdict == Verdict::fits) stage = wanted;
      } else {
        stage = other.cheapest_fitting_stage;
      }
      if (!stage) continue;
      report.offload_changes.push_back(change_of(other, offload, *stage, a.change));
      break;
    }
    if (report.offload_changes.size() == 3) break;
  }
}

// Cell D's question with a GPU: activations outweigh DP's model state; does DP fit at N once
// they are cut to the least the choices give (or, given as bytes, to none)?
void check_activations_cut(PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (!report.activations_dominate.value_or(false) || !in.gpus) return;
  if (!in.gpu_memory) {
    // The seed's cell D asks it without a card: DP's whole model state fits beside room for
    // activations on the smallest GPU the catalogue lists, so no card needs ZeRO for it.
    const catalog::GpuSpec* smallest = nullptr;
    for (const catalog::GpuSpec& g : catalog::gpu_catalogue()) {
      if (!smallest || g.reported_bytes < smallest->reported_bytes) smallest = &g;
    }
    report.smallest_gpu = smallest;
    report.dp_fits_with_activations_cut =
        smallest && *report.stages[0].floor_bytes < smallest->reported_bytes;
    report.activations_cut_by = "on any listed GPU";
    return;
  }
  if (report.stages[0].verdict == Verdict::fits) {
    report.dp_fits_with_activations_cut = true;
    report.activations_cut_by = "as planned";
    return;
  }
  PlanInputs with = in;
  with.activation_bytes = 0;
  with.activation_choices.clear();
  const PlanInputs::ActivationChoice* least = nullptr;
  for (const PlanInputs::ActivationChoice& c : in.activation_choices) {
    if (!least || c.bytes < least->bytes) least = &c;
  }
  if (least) {
    with.activation_bytes = least->bytes;
    report.activations_cut_by = "with " + least->change;
  } else if (in.model) {
    // Already at the least the model's choices give.
    report.dp_fits_with_activations_cut = false;
    report.activations_cut_by = "as planned, the least activations the model's choices give";
    return;
  } else {
    report.activations_cut_by = "with its model state alone";  // given as bytes: cut to none
  }
  report.dp_fits_with_activations_cut = make_plan(with).stages[0].verdict == Verdict::fits;
}

// Without N: the fewest GPUs the plan fits on (the stage wanted, else the stage with the least
// N), and each activation choice that fits on fewer, planned again at its N.
void find_fewest_gpus(PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (in.gpus || !report.budget || !in.params || in.topology || !in.seek_fewest_gpus) return;
  // Each plan's least N is already the least whose verdict is `fits` (plan_fit).
  PlanInputs asked = in;
  asked.seek_fewest_gpus = false;
  auto fewest = [&](const PlanReport& r) -> std::optional<int> {
    if (!in.configured_stage) return stage_with_least_n(r);
    const int wanted = stage_number(*in.configured_stage);
    if (!r.stages[std::size_t(wanted)].min_gpus) return std::nullopt;
    return wanted;
  };
  auto at_n = [&](std::uint64_t activation_bytes, int stage, std::uint64_t n,
                  const std::string& change) {
    PlanInputs with = in;
    with.activation_bytes = activation_bytes;
    with.activation_choices.clear();
    with.gpus = int(std::min<std::uint64_t>(n, std::uint64_t(std::numeric_limits<int>::max())));
    const PlanReport there = make_plan(with);
    return PlanReport::FittingChange{change, activation_bytes, stage,
                                     *there.stages[std::size_t(stage)].total_bytes, n};
  };
  auto planned = [&](std::uint64_t activation_bytes) {
    PlanInputs with = asked;
    with.activation_bytes = activation_bytes;
    with.activation_choices.clear();
    return make_plan(with);
  };
  std::optional<std::uint64_t> best;
  const PlanReport as_planned = planned(in.activation_bytes);
  if (const std::optional<int> stage = fewest(as_planned)) {
    const std::uint64_t n = *as_planned.stages[std::size_t(*stage)].min_gpus;
    report.fewest_gpus = at_n(in.activation_bytes, *stage, n, "");
    best = n;
  }
  for (const PlanInputs::ActivationChoice& choice : in.activation_choices) {
    const PlanReport other = planned(choice.bytes);
    const std::optional<int> stage = fewest(other);
    if (!stage) continue;
    const std::uint64_t n = *other.stages[std::size_t(*stage)].min_gpus;
    if (best && n >= *best) continue;
    report.fewer_gpus_with.push_back(at_n(choice.bytes, *stage, n, choice.change));
  }
  // Fewest GPUs first; among equals, the order of the choices (the cheaper change first); the
  // first three, which a reader compares.
  std::stable_sort(report.fewer_gpus_with.begin(), report.fewer_gpus_with.end(),
                   [](const auto& a, const auto& b) { return *a.gpus < *b.gpus; });
  if (report.fewer_gpus_with.size() > 3) report.fewer_gpus_with.resize(3);
}

// At N, when the host cannot hold the offload of the stage wanted: the fewest GPUs with nothing
// offloaded (the same question without offload and without N).
void find_without_offload(PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (!in.gpus || !report.budget || !in.params || in.topology) return;
  const std::optional<Stage> wanted = in.configured_stage             ? in.configured_stage
                                      : report.cheapest_fitting_stage ? std::nullopt
                                                                      : std::optional(Stage::zero3);
  if (!wanted) return;
  const StageReport& s = report.stages[stage_number(*wanted)];
  if (!s.host_fits || *s.host_fits) return;
  PlanInputs with = in;
  with.offload = {};
  with.gpus.reset();
  with.configured_stage.reset();
  const PlanReport other = make_plan(with);
  report.without_offload =
      PlanReport::WithoutOffload{*s.host_bytes_per_node, other.fewest_gpus, other.fewer_gpus_with};
}

}  // namespace

std::string_view verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::fits:
      return "fits";
    case Verdict::tight:
      return "tight";
    case Verdict::does_not_fit:
      return "does_not_fit";
  }
  return "fits";
}

Verdict verdict_of(std::uint64_t peak, std::uint64_t memory, std::optional<TightBand> band) {
  if (!band) return peak <= memory ? Verdict::fits : Verdict::does_not_fit;
  const u128 under = band_percent(band->under), over = band_percent(band->over);
  if (u128(peak) * (100 + under) <= u128(memory) * 100) return Verdict::fits;
  if (u128(peak) * 100 > u128(memory) * (100 + over)) return Verdict::does_not_fit;
  return Verdict::tight;
}

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
  report.runtime_counted = in.params && (in.buffers || in.cuda_overhead > 0 || in.zeropp.hpz);
  if (report.runtime_counted) report.tight_band = kTightBand;
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
  find_offload_changes(report);
  check_activations_cut(report);
  find_fewest_gpus(report);
  find_without_offload(report);
  return report;
}

}  // namespace zerodp::report
