// When each of a stage's collectives runs and whether it runs beside compute, as DeepSpeed and
// FSDP run them unless told otherwise: the schedule the step-time model (plan/step_model.h)
// times, with the bytes of deepspeed/topology.h.
//
// Contract (DeepSpeed v0.16.4: runtime/engine.py, runtime/zero/config.py; PyTorch's FSDP):
//  DeepSpeed
//   stage 0    the gradients are all-reduced once the backward is over
//              (engine.allreduce_gradients): exposed.
//   stage 1, 2 the gradients are reduce-scattered in buckets of reduce_bucket_size elements as
//              the backward makes them, beside it only with overlap_comm, which is off by
//              default below stage 3 (config.py's overlap_comm_valid); the updated params are
//              all-gathered after the optimizer's step: exposed.
//   stage 3    overlap_comm is on by default: the params are gathered layer by layer ahead of
//              their use (prefetch), beside the forward and beside the backward, and the
//              gradients reduce-scattered in buckets beside the backward.
//  FSDP (FULL_SHARD, ZeRO-3's row under --framework fsdp): the same, unit by unit (a unit a
//              layer; backward_prefetch BACKWARD_PRE, its default), each unit's gradients
//              reduce-scattered beside the backward.
//  Gradient accumulation (K micro-steps a step): what a micro-step does is done K times (its
//  bytes times K, each micro-step's last piece exposed): ZeRO-2's and ZeRO-3's reduce-scatter
//  and ZeRO-3's gathers (FSDP's too, without no_sync); what the optimizer's step does is done
//  once: stage 0's all-reduce, stage 1's reduce-scatter (DeepSpeed reduces ZeRO-1's gradients at
//  the boundary only) and the updated params' gather. Stage 1's reduction, once for K
//  micro-steps, has only the last backward to hide behind: it is counted exposed when K > 1.
//  A step's bytes past 2^64 - 1 are refused (InvalidArgument naming grad_accum).
//  pieces: a stage-3 gather's are the model's layers; a reduction's are its buckets,
//  ceil(Φ / reduce_bucket_size), under DeepSpeed, and the layers under FSDP.
// Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "zerodp/common/zeropp.h"
#include "zerodp/deepspeed/runtime.h"
#include "zerodp/deepspeed/topology.h"
#include "zerodp/plan/frozen.h"
#include "zerodp/plan/memory.h"
#include "zerodp/plan/step_model.h"

namespace zerodp::deepspeed {

struct ScheduleSettings {
  Framework framework = Framework::deepspeed;  // FSDP's schedule applies to ZeRO-3's row
  std::optional<bool> overlap_comm;            // DeepSpeed's; nullopt: its default
  std::uint64_t reduce_bucket_elements = 500'000'000;
  std::uint64_t layers = 1;      // the units a stage-3 gather is issued in (>= 1)
  std::uint64_t grad_accum = 1;  // micro-steps per optimizer step (>= 1)
};

// "gradient all-reduce", "forward gather", "backward gather", "gradient reduce-scatter",
// "params gather after step".
std::string_view role_name(CollectiveRole role);

// The stage's collectives (level_collectives()) with their phase, overlap and pieces.
std::vector<plan::StepCollective> step_collectives(Stage stage, std::uint64_t params,
                                                   const plan::BytesPerParam& bpp,
                                                   const Topology& topology,
                                                   const ZeroPlusPlus& zeropp,
                                                   const ScheduleSettings& settings);

// A frozen base's (LoRA's, plan/frozen.h) collectives: at stage 3 its shardable parts are
// gathered as the trained params are, beside the forward and again beside the backward, layer
// by layer and K times a step ("base forward gather", "base backward gather"); below stage 3
// it never moves. Every part's bytes as level_collectives() counts a gather of them.
std::vector<plan::StepCollective> frozen_step_collectives(Stage stage,
                                                          std::span<const plan::FrozenPart> frozen,
                                                          const Topology& topology,
                                                          const ScheduleSettings& settings);

}  // namespace zerodp::deepspeed
