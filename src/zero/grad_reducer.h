// Where a unit's fresh gradients go, by stage, as soon as its backward is done.
//
//  stage 0: added into the full 16-bit grads; on the last micro-step, all-reduced piece by
//           piece while backward goes on (DDP's bucketed all-reduce).
//  stage 1: the same, but reduce-scattered in place: each rank keeps the full 16-bit grads
//           and the reduced values of its own chunk.
//  stage 2, 3: no full gradient exists. Each piece is converted into a 16-bit bucket and
//           reduce-scattered into the rank's grad shard; two buckets alternate, so one fills
//           while the other is in flight. Every micro-step reduces (there is no full buffer
//           to accumulate into); micro-steps after the first add the reduced chunk into the
//           shard.
// With overlap off, every collective is waited as soon as it is issued.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "zero/partition.h"
#include "zerodp/comm.h"
#include "zerodp/ledger.h"

namespace zerodp::zero {

class GradReducer {
 public:
  // grads16: the full 16-bit grads (stages 0, 1) or this rank's grad shard (stages 2, 3).
  GradReducer(int stage, const std::vector<model::UnitInfo>& units, const Partition& partition,
              comm::Communicator& comm, Ledger& ledger, DType dtype, bool overlap,
              std::uint16_t* grads16);

  // The unit's complete fp32 gradient for this micro-step.
  void unit_done(int unit, std::span<const float> grads32, bool first_micro, bool last_micro);
  // Waits for every reduction in flight; afterwards the reduced gradients are in place.
  void finish();

 private:
  struct InFlight {
    comm::Handle handle;
    int piece = -1;
    bool add = false;  // add the reduced chunk into the shard when it lands
  };
  void complete(InFlight& f, int bucket);

  int stage_;
  const std::vector<model::UnitInfo>& units_;
  const Partition& partition_;
  comm::Communicator& comm_;
  DType dtype_;
  bool overlap_;
  std::uint16_t* grads16_;

  std::vector<comm::Handle> full_pending_;  // stages 0, 1
  // Stages 2, 3: two buckets (16-bit, one piece each) and where their chunks land.
  Buffer<std::uint16_t> bucket_[2];
  Buffer<std::uint16_t> landing_[2];  // reduced chunk to add, for micro-steps after the first
  InFlight in_flight_[2];
  int next_bucket_ = 0;
  std::vector<float> add_scratch_;
};

}  // namespace zerodp::zero
