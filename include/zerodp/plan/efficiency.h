// Step time and efficiency (cell G of the seed): how much of a step is useful compute once
// communication is added, with part of it hidden behind compute.
//
// Contract:
//   comm    = bytes / bandwidth                       (bandwidth per GPU, bytes per second)
//   hidden  = min(overlap · comm, compute)            overlap can hide comm only while there
//                                                     is compute to hide it behind
//   exposed = comm − hidden
//   efficiency = compute / (compute + exposed)        in (0, 1]; 0 only when it is below the
//                                                     smallest double (exposed/compute > 1e308)
// Inputs must be finite with compute > 0, bandwidth > 0, overlap in [0, 1] and a finite
// comm: the command line and make_plan() reject anything else before calling (ZERODP_CHECK
// here). Pure.
#pragma once

#include <cstdint>

namespace zerodp::plan {

struct StepTime {
  double compute_seconds = 0;
  double comm_seconds = 0;
  double hidden_seconds = 0;
  double exposed_seconds = 0;
  double efficiency = 1;
};

StepTime step_time(double compute_seconds, std::uint64_t comm_bytes,
                   double bandwidth_bytes_per_second, double overlap);
// The same from communication seconds already known (two levels: deepspeed/topology.h).
StepTime step_time_of(double compute_seconds, double comm_seconds, double overlap);

}  // namespace zerodp::plan
