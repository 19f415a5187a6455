// zero::Engine's state as checkpoints, hashes and gathers see it: the fp32 master and the
// optimizer's slots, whole or as this rank's chunks (the table in engine.h).
#include <string>
#include <vector>

#include "zero/engine_impl.h"
#include "zerodp/common/dtype.h"
#include "zerodp/common/error.h"
#include "zerodp/common/sha256.h"

namespace zerodp::zero {

std::vector<float> Engine::gather_master() {
  Impl& e = *impl_;
  flush();
  if (e.full_optimizer()) return {e.master.data(), e.master.data() + e.part.total};
  std::vector<float> full(e.part.total);
  for (const Bucket& bucket : e.part.buckets) {
    e.comm.all_gather(e.master.data() + bucket.local, full.data() + bucket.offset, bucket.count,
                      DType::f32);
  }
  return full;
}

std::string Engine::weights_sha256() {
  Impl& e = *impl_;
  flush();
  Sha256 hash;
  if (e.full_optimizer()) {
    hash.update(e.master.data(), e.part.total * sizeof(float));
    return hash.hex();
  }
  // The flat layout is the buckets in order, each the ranks' chunks in rank order: gathering one
  // bucket at a time hashes the same bytes as a full copy would. param32 holds the largest
  // unit's view, so any bucket fits.
  ZERODP_CHECK(e.param32.size() >= e.part.max_bucket);
  for (const Bucket& bucket : e.part.buckets) {
    e.comm.all_gather(e.master.data() + bucket.local, e.param32.data(), bucket.count, DType::f32);
    hash.update(e.param32.data(), bucket.count * sizeof(float));
  }
  return hash.hex();
}

std::vector<FlatRange> Engine::owned_ranges() const {
  std::vector<FlatRange> ranges;
  for (const Bucket& bucket : impl_->part.buckets) {
    ranges.push_back({bucket.offset + bucket.shard.offset, bucket.shard.size});
  }
  return ranges;
}

std::vector<Engine::OwnedChunk> Engine::owned_chunks() {
  Impl& e = *impl_;
  flush();
  std::vector<OwnedChunk> chunks;
  for (const Bucket& bucket : e.part.buckets) {
    // Where this rank keeps its chunk: at its flat offset (optimizer states whole) or packed.
    const std::size_t from =
        e.full_optimizer() ? bucket.offset + bucket.shard.offset : bucket.local;
    const std::size_t n = bucket.shard.size;
    chunks.push_back({.master = {e.master.data() + from, n}});
  }
  return chunks;
}

void Engine::read_slot(std::size_t chunk, std::size_t k, std::size_t from, std::span<float> out) {
  Impl& e = *impl_;
  flush();
  ZERODP_CHECK(chunk < e.part.buckets.size() && k < e.rule.row->slots.size());
  const Bucket& bucket = e.part.buckets[chunk];
  ZERODP_CHECK(from + out.size() <= bucket.shard.size);
  // Where the owned range sits in this rank's optimizer buffers (owned_chunks()).
  const std::size_t at =
      (e.full_optimizer() ? bucket.offset + bucket.shard.offset : bucket.local) + from;
  if (e.rule.blockwise()) {
    e.read_blockwise(k, at, out);
  } else if (e.rule.factored()) {
    e.read_factored(at, out);
  } else {
    std::copy_n(e.slots[k].data() + at, out.size(), out.data());
  }
}

void Engine::import_state(const RangeReader& read, const EngineState& state) {
  Impl& e = *impl_;
  flush();
  if (e.rule.blockwise()) {
    e.import_blockwise(read);
  } else if (e.rule.factored()) {
    e.import_factored(read);
  } else {
    e.import_slots(read);
  }
  e.rebuild_params16(false);  // the master rounded, as after every update
  e.t = state.step;
  e.run_step = state.run_step;
  e.samples_done = state.samples_done;
  e.scaler.restore(state.loss_scale, state.good_steps);
}

void Engine::Impl::import_slots(const RangeReader& read) {
  Impl& e = *this;
  const std::size_t slots = e.rule.row->slots.size();
  auto slot_at = [&](std::size_t k, std::size_t at) {
    return k < slots ? e.slots[k].data() + at : nullptr;
  };
  for (const Bucket& bucket : e.part.buckets) {
    if (e.full_optimizer()) {
      read({bucket.offset, bucket.count}, e.master.data() + bucket.offset,
           slot_at(0, bucket.offset), slot_at(1, bucket.offset));
    } else if (bucket.shard.size > 0) {
      read({bucket.offset + bucket.shard.offset, bucket.shard.size}, e.master.data() + bucket.local,
           slot_at(0, bucket.local), slot_at(1, bucket.local));
    }
  }
}

void Engine::Impl::import_master(const RangeReader& read) {
  for (const Bucket& bucket : part.buckets) {
    if (full_optimizer()) {
      read({bucket.offset, bucket.count}, master.data() + bucket.offset, nullptr, nullptr);
    } else if (bucket.shard.size > 0) {
      read({bucket.offset + bucket.shard.offset, bucket.shard.size}, master.data() + bucket.local,
           nullptr, nullptr);
    }
  }
}

EngineState Engine::state() const {
  return {impl_->t, impl_->samples_done, impl_->scaler.scale(), impl_->scaler.good_steps(),
          impl_->run_step};
}

}  // namespace zerodp::zero
