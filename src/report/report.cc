// make_plan(): checks that each question asked has its inputs, then fills every cell the
// inputs determine.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "what_would_fit.h"
#include "zerodp/common/error.h"
#include "zerodp/common/units.h"
#include "zerodp/deepspeed/step_schedule.h"
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
  // The other level's rate may come from a link instead (--intra-node, --inter-node, the card's
  // usual server): then the front end has set it in the step's links.
  const bool intra_link = in.step_links && in.step_links->intra > 0;
  const bool inter_link = in.step_links && in.step_links->inter > 0;
  require(t.gpus_per_node == 1 || intra || intra_link,
          field_ref("intra_bandwidth") + ": required with " + field_ref("inter_bandwidth") +
              ", a bandwidth per GPU such as 300GB/s (NVLink), or the link: " +
              field_ref("intra_node"));
  require(t.nodes == 1 || inter || inter_link,
          field_ref("inter_bandwidth") + ": required with " + field_ref("intra_bandwidth") +
              " across nodes, a bandwidth per GPU such as 50GB/s (400 Gbit/s), or the link: " +
              field_ref("inter_node"));
}

// What the predicted step needs, and what needs it.
void validate_step(const PlanInputs& in) {
  require(!in.hfu || (std::isfinite(*in.hfu) && *in.hfu >= 1e-3 && *in.hfu <= 1),
          field_ref("efficiency") + ": expected a fraction from 0.1% to 100% such as 0.5 or 50%");
  require(!in.dense_flops || (std::isfinite(*in.dense_flops) && *in.dense_flops > 0),
          field_ref("gpu") + ": expected a card with a positive finite rate");
  require(!in.step_compute || in.step_compute->grad_accum >= 1,
          field_ref("grad_accum") + ": expected a whole number from 1");
  if (in.step_compute && in.dense_flops && in.hfu && !in.compute_seconds) {
    // The step's compute in seconds: finite, or the model is past what a plan can time.
    const PlanInputs::StepCompute& c = *in.step_compute;
    const double rate = *in.dense_flops * *in.hfu / static_cast<double>(c.grad_accum);
    require(std::isfinite(c.forward_flops / rate) && std::isfinite(c.backward_flops / rate) &&
                std::isfinite((c.forward_flops + c.backward_flops) / rate) &&
                c.forward_flops + c.backward_flops > 0,
            field_ref("efficiency") +
                ": expected an efficiency at which the step's compute "
                "takes a finite time");
  }
  require(!in.price_per_gpu_hour ||
              (std::isfinite(*in.price_per_gpu_hour) && *in.price_per_gpu_hour >= 0),
          field_ref("price_per_gpu_hour") + ": expected a price such as 2.5");
  const bool compute = in.compute_seconds || (in.step_compute && in.dense_flops && in.hfu);
  const bool step = in.step_compute && compute && in.step_links && in.step_topology && in.params &&
                    in.gpus && !in.bandwidth && !in.comm_bytes;
  require(!in.tokens || step,
          field_ref("tokens") + ": needs the step's tokens and time: " + field_ref("model") +
              " with " + field_ref("gpus") + " and " + field_ref("gpu") +
              " (a card with a published rate and efficiency, or " + field_ref("compute_time") +
              "), on links the plan knows (" + field_ref("inter_node") + " across nodes)");
  require(!in.tokens || (std::isfinite(*in.tokens) && *in.tokens > 0),
          field_ref("tokens") + ": expected a positive count such as 1B or 15T");
  require(!in.price_per_gpu_hour || in.tokens, field_ref("price_per_gpu_hour") + ": needs " +
                                                   field_ref("tokens") +
                                                   ", the tokens whose GPU-hours it prices");
}

// What a frozen base (LoRA, QLoRA) is not yet counted with, each refused by its field rather
// than planned as though every parameter trained.
void validate_frozen(const PlanInputs& in) {
  if (in.frozen.empty() && !in.lora) return;
  const std::string why = " is not counted yet for a LoRA or QLoRA run";
  require(in.params.has_value(), field_ref("lora_rank") + ": needs a model (" + field_ref("model") +
                                     " or " + field_ref("model_config") + ")");
  require(in.offload.params == deepspeed::OffloadDevice::none,
          field_ref("offload_params") + ":" + " offloading the frozen base" + why);
  require(!in.zeropp.any(), field_ref("zeropp") + ": ZeRO++ over a frozen base" + why);
  require(!in.topology, field_ref("nodes") + ": each level's bytes" + why +
                            "; give the GPUs with " + field_ref("gpus"));
  require(!in.compute_seconds && !in.comm_bytes,
          field_ref("compute_time") + ": the step time" + why);
}

void validate(const PlanInputs& in) {
  validate_levels(in);
  validate_frozen(in);
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
  require(bandwidth || !compute || in.step_links,
          field_ref("bandwidth") + ": required with " + field_ref("compute_time") +
              ", a bandwidth such "
              "as 300GB/s (or " +
              field_ref("intra_bandwidth") + " and " + field_ref("inter_bandwidth") + ")");
  require(!(in.comm_bytes && (in.intra_bandwidth || in.inter_bandwidth)),
          field_ref("comm_bytes") + ": not with " + field_ref("intra_bandwidth") + "/" +
              field_ref("inter_bandwidth") +
              ", which count each level's "
              "bytes");
  const bool predicted = in.step_compute && in.dense_flops && in.hfu && in.step_links;
  require(compute || predicted || !in.overlap,
          field_ref("overlap") + ": needs " + field_ref("compute_time") + " and " +
              field_ref("bandwidth") + ", or a predicted step (" + field_ref("model") + " with " +
              field_ref("gpu") + ")");
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
  validate_step(in);
  require(in.gpu_memory || !in.round_to,
          field_ref("round_to") + ": needs " + field_ref("gpu_memory") + ", the budget to fit");
  if (in.params) {
    plan::check_fits_in_64_bits(*in.params, in.bpp);
    const u128 total = u128(*in.params) * in.bpp.total() +
                       plan::frozen_bytes_wide(in.frozen, 1, Stage::dp) + in.activation_bytes;
    if (total > std::numeric_limits<std::uint64_t>::max()) {
      throw InvalidArgument(in.activations_from + ": expected activations whose sum with the " +
                            "model state fits in 64 bits, got " +
                            std::to_string(in.activation_bytes) + " bytes");
    }
  }
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

// The fp32 copies an optimizer other than AdamW makes in its step (runtime.h); nullopt for an
// AdamW and for bytes given alone.
std::optional<std::uint32_t> row_step_copies(const PlanInputs& in) {
  if (!in.optimizer || *in.optimizer == plan::Optimizer::adam) return std::nullopt;
  return optimizer_row(*in.optimizer).step_copies;
}

// What the peak's terms are computed from; buffers need a model to size them.
deepspeed::RuntimeRun runtime_run(const PlanInputs& in) {
  if (!in.params) return {};
  const std::uint64_t outside = in.model ? in.model->params.outside_params : 0;
  const std::uint64_t layer = in.model ? in.model->params.per_layer_params : 0;
  return {{*in.params, in.largest_layer.value_or(0), in.persistent_params, in.reuse_kept_params,
           outside, layer, plan::frozen_elements(in.frozen), in.largest_trained, in.frozen_units},
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
          in.fsdp_limit_all_gathers,
          row_step_copies(in),
          in.frozen,
          in.dequantized_params};
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
  s.model_state_bytes = plan::model_state_bytes(*in.params, *in.gpus, stage, gpu) +
                        plan::frozen_bytes(in.frozen, *in.gpus, stage);
  s.offload = deepspeed::offload_bytes(*in.params, *in.gpus, stage, in.bpp, in.offload);
  s.total_bytes = *s.model_state_bytes + in.activation_bytes;
  if (report.runtime_counted) {
    s.runtime = deepspeed::runtime_terms(stage, *in.gpus, runtime);
    s.total_bytes = s.runtime->peak(*s.model_state_bytes, in.activation_bytes);
  }
  s.comm_seed =
      plan::seed_step_bytes(stage, *in.params, in.bpp, *in.gpus, in.seed_directions, in.frozen);
  s.comm_ring = plan::ring_step_bytes(stage, *in.params, in.bpp, *in.gpus, in.frozen);
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

// A rate so small that a collective's bytes would take more seconds than a double holds has no
// step to print: named by the flag that gave it (the links of the catalogue never are).
void check_finite_collectives(const PlanInputs& in,
                              const std::vector<plan::StepCollective>& collectives) {
  for (const plan::StepCollective& c : collectives) {
    const double bytes = static_cast<double>(c.intra_bytes) + static_cast<double>(c.inter_bytes);
    const double rate = plan::bus_rate(c, *in.step_links);
    if (bytes == 0 || std::isfinite(bytes / rate)) continue;
    const bool intra_slow =
        c.inter_bytes == 0 || (c.intra_bytes > 0 && in.step_links->intra <= rate);
    const std::string field =
        intra_slow ? field_ref("intra_bandwidth") : field_ref("inter_bandwidth");
    char text[32];
    std::snprintf(text, sizeof text, "%.3g B/s",
                  intra_slow ? in.step_links->intra : in.step_links->inter);
    throw InvalidArgument(field + ": expected a bandwidth at which " +
                          units::format_bytes(std::uint64_t(bytes)) + " take a finite time, got " +
                          text);
  }
}

// The step predicted from the model and the cluster (plan/step_model.h): its compute from the
// FLOPs at the card's rate and the efficiency (or --compute-time, shared between the forward
// and the backward as their FLOPs are), its collectives over the step's links. Not for a stage
// that offloads (the PCIe copies and the CPU's step are not modelled), nor with one volume at
// one bandwidth (--bandwidth, --comm-bytes: cell G as the seed gives it).
bool plan_step(const PlanInputs& in, StageReport& s) {
  if (!in.params || !in.gpus || !in.step_topology || !in.step_links || in.bandwidth ||
      in.comm_bytes || s.offloaded) {
    return false;
  }
  // The plans made at another N to answer what would fit (what_would_fit.cc) time no step.
  const deepspeed::Topology& nodes = *in.step_topology;
  if (nodes.gpus_per_node < 1 || nodes.nodes < 1 ||
      std::int64_t(nodes.gpus_per_node) * nodes.nodes != *in.gpus) {
    return false;
  }
  require(nodes.gpus_per_node % in.zeropp.hpz_span() == 0,
          field_ref("zeropp") + ": hpZ's partition must divide the GPUs of a node");
  const PlanInputs::StepCompute* c = in.step_compute ? &*in.step_compute : nullptr;
  double forward = 0, backward = 0;
  if (in.compute_seconds) {
    const double share = c ? c->forward_flops / (c->forward_flops + c->backward_flops) : 1.0 / 3;
    forward = *in.compute_seconds * share;
    backward = *in.compute_seconds - forward;
  } else if (c && in.dense_flops && in.hfu) {
    // K micro-steps, each the FLOPs of one.
    const double rate = *in.dense_flops * *in.hfu;
    const double k = static_cast<double>(c->grad_accum);
    forward = plan::compute_seconds(k * c->forward_flops, rate);
    backward = plan::compute_seconds(k * c->backward_flops, rate);
  } else {
    return false;
  }
  const deepspeed::ScheduleSettings schedule{in.framework, in.buffer_settings.overlap_comm,
                                             in.buffer_settings.reduce_bucket_size,
                                             c ? c->layers : 1, c ? c->grad_accum : 1};
  std::vector<plan::StepCollective> collectives = deepspeed::step_collectives(
      s.stage, *in.params, in.bpp, *in.step_topology, in.zeropp, schedule);
  // A LoRA run's frozen base: gathered beside the adapters at stage 3.
  for (plan::StepCollective& c :
       deepspeed::frozen_step_collectives(s.stage, in.frozen, *in.step_topology, schedule)) {
    collectives.push_back(std::move(c));
  }
  check_finite_collectives(in, collectives);
  s.step = plan::model_step(forward, backward, std::move(collectives), *in.step_links);
  plan::StepModel& m = *s.step;
  require(std::isfinite(m.comm_seconds),
          field_ref("inter_bandwidth") +
              ": expected bandwidths at which the step's collectives take a finite time");
  if (in.overlap) {
    // The seed's rule instead of the schedule's: that fraction of all of it, behind compute.
    const plan::StepTime t = plan::step_time_of(forward + backward, m.comm_seconds, *in.overlap);
    for (plan::TimedCollective& tc : m.collectives) {
      tc.hidden_seconds = m.comm_seconds > 0 ? tc.seconds * t.hidden_seconds / m.comm_seconds : 0;
    }
    m.hidden_seconds = t.hidden_seconds;
    m.exposed_seconds = t.exposed_seconds;
    m.step_seconds = forward + backward + t.exposed_seconds;
    m.efficiency = t.efficiency;
  }
  s.time = m.step_time();
  if (!c) return true;
  const double k = static_cast<double>(c->grad_accum);
  s.tokens_per_second_per_gpu = k * static_cast<double>(c->tokens) / m.step_seconds;
  if (in.dense_flops) s.mfu = k * c->model_flops / m.step_seconds / *in.dense_flops;
  require(std::isfinite(*s.tokens_per_second_per_gpu) && *s.tokens_per_second_per_gpu > 0 &&
              (!s.mfu || std::isfinite(*s.mfu)),
          field_ref("micro_batch") + ": expected a step whose tokens a second are finite");
  if (in.tokens) {
    s.wall_clock_seconds = *in.tokens / (*s.tokens_per_second_per_gpu * *in.gpus);
    s.gpu_hours = *s.wall_clock_seconds * *in.gpus / 3600;
    require(std::isfinite(*s.gpu_hours),
            field_ref("tokens") + ": expected a count the run trains in a finite time");
    if (in.price_per_gpu_hour) {
      s.cost = *s.gpu_hours * *in.price_per_gpu_hour;
      require(std::isfinite(*s.cost), field_ref("price_per_gpu_hour") +
                                          ": expected a price whose cost is a finite number, "
                                          "such as 2.5");
    }
  }
  return true;
}

// The step's time: predicted (plan_step), or from one volume at one bandwidth (cell G).
void plan_time(const PlanInputs& in, StageReport& s) {
  if (plan_step(in, s) || !in.compute_seconds || !in.bandwidth) return;
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
  for (const StageReport& s : report.stages) {
    if (!s.min_gpus || (in.configured_stage && s.stage != *in.configured_stage)) continue;
    const auto& best = report.least_n_stage;
    if (!best || *s.min_gpus < *report.stages[std::size_t(*best)].min_gpus) {
      report.least_n_stage = stage_number(s.stage);
    }
  }
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
    if (s.verdict == Verdict::fits && s.step) {
      const auto& best = report.fastest_fitting_stage;
      if (!best || s.step->step_seconds < report.stages[std::size_t(*best)].step->step_seconds) {
        report.fastest_fitting_stage = stage_number(s.stage);
      }
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
  // A frozen base's state and its dequantized weight are counted with them (runtime.h).
  report.runtime_counted =
      in.params && (in.buffers || in.cuda_overhead > 0 || in.zeropp.hpz || !in.frozen.empty());
  if (report.runtime_counted) report.tight_band = kTightBand;
  const deepspeed::RuntimeRun runtime = runtime_run(in);
  for (Stage stage : kStages) {
    StageReport& s = report.stages[stage_number(stage)];
    s.stage = stage;
    // What stays on the GPU: offload takes states off it, the network moves the same bytes.
    const plan::BytesPerParam gpu = deepspeed::gpu_bytes_per_param(in.bpp, in.offload, stage);
    s.offloaded = deepspeed::offload_applies(in.offload, stage);
    if (in.params) {
      s.floor_bytes =
          plan::floor_bytes(*in.params, stage, gpu) + plan::frozen_floor_bytes(in.frozen, stage);
    }
    if (in.params && in.gpus) plan_at_n(in, report, runtime, gpu, s);
    plan_fit(in, report, runtime, gpu, s);
    plan_time(in, s);
  }
  compare_stages(report);
  find_what_would_fit(report);
  return report;
}

}  // namespace zerodp::report
