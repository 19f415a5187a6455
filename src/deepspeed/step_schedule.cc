#include "zerodp/deepspeed/step_schedule.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "zerodp/common/error.h"
#include "zerodp/common/saturating.h"

namespace zerodp::deepspeed {

std::string_view role_name(CollectiveRole role) {
  switch (role) {
    case CollectiveRole::gradient_all_reduce:
      return "gradient all-reduce";
    case CollectiveRole::forward_gather:
      return "forward gather";
    case CollectiveRole::backward_gather:
      return "backward gather";
    case CollectiveRole::gradient_reduce_scatter:
      return "gradient reduce-scatter";
    case CollectiveRole::updated_params_gather:
      return "params gather after step";
  }
  return "collective";
}

std::vector<plan::StepCollective> step_collectives(Stage stage, std::uint64_t params,
                                                   const plan::BytesPerParam& bpp,
                                                   const Topology& topology,
                                                   const ZeroPlusPlus& zeropp,
                                                   const ScheduleSettings& settings) {
  ZERODP_CHECK(settings.layers >= 1 && settings.reduce_bucket_elements >= 1 &&
               settings.grad_accum >= 1);
  const std::uint64_t k = settings.grad_accum;
  // Every micro-step's collectives, K times over.
  auto repeat = [k](plan::StepCollective& s) {
    if (s.intra_bytes > UINT64_MAX / k || s.inter_bytes > UINT64_MAX / k) {
      throw InvalidArgument(field_ref("grad_accum") +
                            ": expected micro-steps whose bytes a step fit in 64 bits, got " +
                            std::to_string(k));
    }
    s.intra_bytes *= k;
    s.inter_bytes *= k;
  };
  const bool fsdp = settings.framework == Framework::fsdp && stage == Stage::zero3;
  const bool overlap = fsdp || settings.overlap_comm.value_or(stage == Stage::zero3);
  const std::uint64_t buckets = std::max<std::uint64_t>(
      1, (params + settings.reduce_bucket_elements - 1) / settings.reduce_bucket_elements);
  std::vector<plan::StepCollective> out;
  for (const LevelCollective& c : level_collectives(stage, params, bpp, topology, zeropp)) {
    plan::StepCollective s;
    s.name = role_name(c.role);
    s.intra_bytes = c.bytes.intra;
    s.inter_bytes = c.bytes.inter;
    switch (c.role) {
      case CollectiveRole::gradient_all_reduce:
        s.phase = plan::StepPhase::after_backward;
        break;
      case CollectiveRole::forward_gather:
      case CollectiveRole::backward_gather:
        s.phase = c.role == CollectiveRole::forward_gather ? plan::StepPhase::forward
                                                           : plan::StepPhase::backward;
        s.overlapped = overlap;
        s.pieces = settings.layers;
        repeat(s);
        break;
      case CollectiveRole::gradient_reduce_scatter:
        s.phase = plan::StepPhase::backward;
        s.pieces = fsdp ? settings.layers : buckets;
        if (stage == Stage::zero1) {
          s.overlapped = overlap && k == 1;  // at the boundary: the last backward only
        } else {
          s.overlapped = overlap;
          repeat(s);
        }
        break;
      case CollectiveRole::updated_params_gather:
        s.phase = plan::StepPhase::after_backward;
        break;
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<plan::StepCollective> frozen_step_collectives(Stage stage,
                                                          std::span<const plan::FrozenPart> frozen,
                                                          const Topology& topology,
                                                          const ScheduleSettings& settings) {
  if (stage != Stage::zero3) return {};
  std::vector<plan::StepCollective> out;
  for (const plan::FrozenPart& part : frozen) {
    if (!part.shardable) continue;
    plan::BytesPerParam bpp;
    bpp.params = part.bytes;
    // The part's gathers as ZeRO-3 schedules the params' (the gradients' reduction apart).
    for (plan::StepCollective& c :
         step_collectives(Stage::zero3, part.elements, bpp, topology, {}, settings)) {
      if (c.name == role_name(CollectiveRole::gradient_reduce_scatter)) {
        continue;
      }
      const std::string name = "base " + c.name;
      auto same = std::find_if(out.begin(), out.end(),
                               [&](const plan::StepCollective& o) { return o.name == name; });
      if (same == out.end()) {
        c.name = name;
        out.push_back(std::move(c));
        continue;
      }
      same->intra_bytes = saturating_add(same->intra_bytes, c.intra_bytes);
      same->inter_bytes = saturating_add(same->inter_bytes, c.inter_bytes);
    }
  }
  return out;
}

}  // namespace zerodp::deepspeed
