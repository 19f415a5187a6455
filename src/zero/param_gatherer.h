// Stage 3's parameters on demand: a unit's 16-bit params are all-gathered just before it
// computes and released right after its last use in the pass; with prefetch, the next unit's
// gather is issued before the current unit computes, so it travels while this one computes.
//
// A pass is the order in which units compute (forward: 0..U-1, backward: U-1..0). A unit
// that later units read (a tied embedding) stays gathered from its first use to its last
// use within the pass, so every parameter is gathered exactly once per pass: twice a step.
//
// Gathered units live in slots of max_unit elements, allocated when first needed and reused
// (sharding state per unit: sharded -> gathering -> gathered -> sharded).
//
// qwZ (qwz_block > 0): each bucket's gather moves int8 payloads (zerodp/common/quantize.h)
// instead of 16-bit chunks. Issuing a unit quantizes this rank's chunks into the slot's staging
// (one payload per rank and bucket, counted as gathered_params with the slot); acquiring it
// dequantizes every rank's payload into the slot, so all ranks hold the same params.
//
// hpZ (a host communicator given): after a unit is gathered in a forward pass, this rank keeps
// its host chunk of each bucket (shard_of(count, H, host rank)) in a secondary copy held from
// setup; the backward pass gathers the unit from those copies over the host communicator, so
// its gathers never leave the host. The copy holds what the forward computed with (dequantized
// under qwZ), so forward and backward use the same weights, as without hpZ.
#pragma once

#include <cstdint>
#include <vector>

#include "zerodp/comm/communicator.h"
#include "zerodp/common/ledger.h"
#include "zerodp/common/partition.h"
#include "zerodp/model/model.h"

namespace zerodp::zero {

class ParamGatherer {
 public:
  ParamGatherer(const std::vector<model::UnitInfo>& units, const Partition& partition,
                comm::Communicator& comm, Ledger& ledger, DType dtype, bool prefetch,
                std::size_t qwz_block = 0, comm::Communicator* host = nullptr);

  // Starts a pass. shard16 is this rank's 16-bit param shard (partition-local layout). A
  // forward pass refreshes hpZ's secondary copies; a backward pass gathers from them.
  enum class Pass : std::uint8_t { forward, backward };
  void begin_pass(const std::vector<int>& order, const std::uint16_t* shard16, Pass pass);
  // Makes the units of step i (its unit and the units it reads) gathered, and issues the
  // prefetch of step i+1. Returns after the gathers of step i completed.
  void acquire(std::size_t step);
  // The gathered 16-bit params of a unit acquired for the current step.
  const std::uint16_t* data(int unit) const;
  // Releases the units whose last use in the pass is step i.
  void release(std::size_t step);
  // Waits for every gather in flight, ignoring failures: before the slots may go.
  void drain() noexcept;

 private:
  enum class State : std::uint8_t { sharded, gathering, gathered };
  // Where a unit's gather comes from, decided once when it is issued.
  enum class Source : std::uint8_t { ranks, ranks_quantized, host_copy };
  void issue(int unit);
  void dequantize(int unit);
  void keep_secondary(int unit);
  std::vector<int> needs(std::size_t step) const;

  const std::vector<model::UnitInfo>& units_;
  const Partition& partition_;
  comm::Communicator& comm_;
  Ledger& ledger_;
  DType dtype_;
  bool prefetch_;
  std::size_t qwz_block_;    // 0: gathers move the 16-bit params
  std::size_t staging_ = 0;  // qwZ: bytes of one slot's payloads (the largest unit's)

  std::vector<int> order_;
  std::vector<std::size_t> last_use_;  // per unit: last step of the pass that needs it
  const std::uint16_t* shard16_ = nullptr;

  std::vector<State> state_;
  std::vector<int> slot_of_;    // per unit, -1 when sharded
  std::vector<Source> source_;  // per unit: meaningful while gathering
  std::vector<std::vector<comm::Handle>> pending_;
  std::vector<Buffer<std::uint16_t>> slots_;
  std::vector<Buffer<std::uint8_t>> staged_;  // qwZ: per slot
  comm::Communicator* host_;                  // hpZ: this rank's host; null without
  Pass pass_ = Pass::forward;
  Buffer<std::uint16_t> secondary_;        // hpZ: host chunks of every bucket, bucket order
  std::vector<std::size_t> secondary_at_;  // per bucket: where its host chunk sits
  std::vector<bool> secondary_fresh_;      // per unit: kept by this step's forward
  std::vector<int> free_slots_;
};

}  // namespace zerodp::zero
