// Where a unit's fresh gradients go, as soon as its backward is done; the stage's sharding
// (zerodp/common/stage.h) decides.
//
//  gradients whole, optimizer states whole (stage 0): added into the full 16-bit grads; on the
//           last micro-step, all-reduced bucket by bucket while backward goes on (DDP's
//           bucketed all-reduce).
//  gradients whole, optimizer states sharded (stage 1): the same, but reduce-scattered in
//           place: each rank keeps the full 16-bit grads and the reduced values of its own chunk.
//  gradients sharded (stages 2, 3): no full gradient exists. Each bucket is converted into a
//           16-bit staging buffer and reduce-scattered into the rank's grad shard; two staging
//           buffers alternate, so one fills while the other is in flight. Every micro-step
//           reduces (there is no full buffer to accumulate into); micro-steps after the first
//           add the reduced chunk into the shard.
// With overlap off, every collective is waited as soon as it is issued.
//
// qgZ (stage 3 with host and peer communicators, docs/zeropp.md): a bucket's reduce-scatter is
// two quantized all-to-alls instead. Ranks form K hosts of H; rank r = hH + l. First, inside
// the host, rank r sends host peer l' the int8 payloads (common/quantize.h) of the K world
// chunks c_{h'H+l'}, and sums what its peers sent for the chunks c_{h'H+l} in fp32, in host
// rank order; then, across hosts, it sends rank h'H+l its partial sum of c_{h'H+l}, rounded
// to 16 bits and quantized, and sums what the K hosts sent for its own chunk c_r in host order,
// rounding once to 16 bits. The first all-to-all travels while backward goes on; the second
// runs when the slot is next needed (or at finish). Fixed orders: bitwise repeatable for the
// same ranks and hosts.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "zerodp/comm/communicator.h"
#include "zerodp/common/ledger.h"
#include "zerodp/common/partition.h"
#include "zerodp/common/stage.h"
#include "zerodp/model/model.h"

namespace zerodp::zero {

class GradReducer {
 public:
  // grads16: the full 16-bit grads (gradients not sharded) or this rank's grad shard.
  GradReducer(Sharding sharding, const std::vector<model::UnitInfo>& units,
              const Partition& partition, comm::Communicator& comm, Ledger& ledger, DType dtype,
              bool overlap, std::uint16_t* grads16, comm::Communicator* host = nullptr,
              comm::Communicator* peers = nullptr, std::size_t qgz_block = 0);

  // The unit's complete fp32 gradient for this micro-step.
  void unit_done(int unit, std::span<const float> grads32, bool first_micro, bool last_micro);
  // Waits for every reduction in flight; afterwards the reduced gradients are in place.
  void finish();
  // Waits for every reduction in flight, ignoring failures: before the buffers may go.
  void drain() noexcept;

 private:
  struct InFlight {
    comm::Handle handle;
    int bucket = -1;
    bool add = false;              // add the reduced chunk into the shard when it lands
    std::uint16_t* out = nullptr;  // qgZ: where the reduced chunk goes
  };
  // qgZ: the host all-to-all's payloads of the staged bucket, then (complete) the rest.
  comm::Handle quantized_scatter(int slot, const Bucket& bucket);
  void finish_quantized(int slot, const Bucket& bucket, std::uint16_t* out);
  // Full gradients: accumulates the unit's grads; on the last micro-step, reduces them.
  void add_to_full(int unit, std::span<const float> grads32, bool first_micro, bool last_micro);
  // Sharded gradients: reduce-scatters each bucket of the unit into the grad shard.
  void scatter_to_shard(int unit, std::span<const float> grads32, bool first_micro);
  void complete(InFlight& f, int slot);

  Sharding sharding_;
  const std::vector<model::UnitInfo>& units_;
  const Partition& partition_;
  comm::Communicator& comm_;
  DType dtype_;
  bool overlap_;
  std::uint16_t* grads16_;

  std::vector<comm::Handle> full_pending_;  // gradients whole
  // Gradients sharded: two staging buffers (16-bit, one bucket each) and where their chunks
  // land.
  Buffer<std::uint16_t> staging_[2];
  Buffer<std::uint16_t> landing_[2];  // reduced chunk to add, for micro-steps after the first
  InFlight in_flight_[2];
  int next_slot_ = 0;
  Buffer<float> add_scratch_;  // fp32 of one landed chunk, to add it into the shard
  // qgZ: per slot, the host all-to-all's send and receive payloads (N of them), the fp32
  // partial sums of K chunks, and the cross-host all-to-all's payloads (K each way).
  comm::Communicator* host_ = nullptr;
  comm::Communicator* peers_ = nullptr;
  std::size_t qgz_block_ = 0;
  Buffer<std::uint8_t> host_send_[2], host_recv_[2], peer_send_[2], peer_recv_[2];
  Buffer<float> partial_[2];
  Buffer<std::uint16_t> half_;  // one chunk in 16 bits, to quantize or to sum
};

}  // namespace zerodp::zero
