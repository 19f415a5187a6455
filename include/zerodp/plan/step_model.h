// The step-time model: how long one training step takes, from its compute (the forward's and
// the backward's seconds) and its collectives (the bytes each GPU sends inside its node and
// across nodes, when each runs and whether it runs beside compute), over the links' rates.
// The planner fills it from a model's FLOPs, a card's rate and the link catalogue
// (report/report.h); cell G of the seed is the special case plan/efficiency.h keeps, with one
// volume, one bandwidth and an overlap fraction given.
//
// Contract:
//   a collective's seconds = its bytes per GPU (intra + inter: the ring's, plan/comm.h) / the
//       bus rate of the slowest level it crosses: the intra rate inside one node, the lesser
//       of the two across nodes. A ring runs at its slowest link's pace, which is how
//       nccl-tests' bus bandwidth is measured and published (catalog/links.h).
//   an overlapped collective runs beside the compute of its phase (the forward or the
//       backward) except one of its `pieces`: the first layer's gather has nothing before it
//       to hide behind, and the last bucket's reduction waits for the last gradients; so it
//       can hide (pieces − 1)/pieces of its seconds. Collectives of one phase share its
//       compute, in the order given; what does not fit behind it is exposed.
//   a collective not overlapped, or one after the backward (ZeRO-1/2's gather of the updated
//       parameters, which waits for the optimizer's step), is exposed whole.
//   step = forward + backward + exposed;  efficiency = (forward + backward) / step.
// The optimizer's own step and the time the collectives take from the compute they run beside
// (their kernels share the GPU) are not counted: the step is a lower bound by those.
// Preconditions (ZERODP_CHECK): seconds finite and non-negative with forward + backward > 0;
// a rate finite and positive wherever its level carries bytes; pieces >= 1. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zerodp/plan/efficiency.h"

namespace zerodp::plan {

// The compute a collective may run beside.
enum class StepPhase { forward, backward, after_backward };

// Bus rates (bytes a second per GPU, nccl-tests' busbw) of a ring inside one node and of a
// ring across nodes (what a node's NICs carry together).
struct LinkRates {
  double intra = 0;
  double inter = 0;
};

struct StepCollective {
  std::string name;  // "forward gather", as a plan prints it
  StepPhase phase = StepPhase::backward;
  bool overlapped = false;
  std::uint64_t pieces = 1;  // the layers or buckets it is issued in
  std::uint64_t intra_bytes = 0, inter_bytes = 0;
};

struct TimedCollective {
  StepCollective collective;
  double seconds = 0;
  double hidden_seconds = 0;
};

struct StepModel {
  double forward_seconds = 0, backward_seconds = 0;
  std::vector<TimedCollective> collectives;
  double comm_seconds = 0, hidden_seconds = 0, exposed_seconds = 0;
  double step_seconds = 0;
  double efficiency = 1;
  // The same in cell G's terms: compute, comm, hidden, exposed, efficiency.
  StepTime step_time() const;
};

// Compute at a rate: FLOPs over the FLOPs a second reached (the planner's, a card's dense rate
// times an efficiency; the engine's, what its kernels reached on this CPU, predict/schedule.h).
// Requires flops >= 0 and a rate > 0.
double compute_seconds(double flops, double flops_per_second);

// The bus rate a collective runs at: the intra rate when it stays inside a node, the inter rate
// when it only crosses nodes (one GPU a node), the lesser of the two otherwise. 0 bytes: 0.
double bus_rate(const StepCollective& collective, LinkRates rates);

StepModel model_step(double forward_seconds, double backward_seconds,
                     std::vector<StepCollective> collectives, LinkRates rates);

}  // namespace zerodp::plan
