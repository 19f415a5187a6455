#include "zero/grad_reducer.h"

#include "zerodp/common/dtype.h"
#include "zerodp/common/error.h"

namespace zerodp::zero {

GradReducer::GradReducer(Sharding sharding, const std::vector<model::UnitInfo>& units,
                         const Partition& partition, comm::Communicator& comm, Ledger& ledger,
                         DType dtype, bool overlap, std::uint16_t* grads16)
    : sharding_(sharding),
      units_(units),
      partition_(partition),
      comm_(comm),
      dtype_(dtype),
      overlap_(overlap),
      grads16_(grads16) {
  if (sharding_.gradients) {
    for (int s = 0; s < 2; ++s) {
      staging_[s] = Buffer<std::uint16_t>(ledger, Category::buckets, partition_.max_bucket);
      landing_[s] = Buffer<std::uint16_t>(ledger, Category::buckets, partition_.max_chunk);
    }
    add_scratch_ = Buffer<float>(ledger, Category::scratch32, partition_.max_chunk);
  }
}

void GradReducer::unit_done(int unit, std::span<const float> grads32, bool first_micro,
                            bool last_micro) {
  if (sharding_.gradients) {
    scatter_to_shard(unit, grads32, first_micro);
  } else {
    add_to_full(unit, grads32, first_micro, last_micro);
  }
}

void GradReducer::add_to_full(int unit, std::span<const float> grads32, bool first_micro,
                              bool last_micro) {
  std::uint16_t* g16 = grads16_ + units_[unit].param_offset;
  if (first_micro) {
    float_to_half(dtype_, grads32.data(), g16, grads32.size());
  } else {
    accumulate_half(dtype_, g16, grads32.data(), grads32.size());
  }
  if (!last_micro) return;
  for (int b : partition_.unit_buckets[unit]) {
    const Bucket& bucket = partition_.buckets[b];
    std::uint16_t* data = grads16_ + bucket.offset;
    // Every rank updates every element unless the optimizer states are sharded: then a rank
    // needs the reduced values of its own chunk only.
    comm::Handle h =
        !sharding_.optimizer_states
            ? comm_.all_reduce_async(data, bucket.count, dtype_)
            : comm_.reduce_scatter_async(data, data + bucket.shard.offset, bucket.count, dtype_);
    if (overlap_) {
      full_pending_.push_back(std::move(h));
    } else {
      h.wait();
    }
  }
}

void GradReducer::scatter_to_shard(int unit, std::span<const float> grads32, bool first_micro) {
  const std::size_t unit_offset = units_[unit].param_offset;
  for (int b : partition_.unit_buckets[unit]) {
    const Bucket& bucket = partition_.buckets[b];
    const int s = next_slot_;
    next_slot_ ^= 1;
    complete(in_flight_[s], s);  // the staging buffer is free once its last reduction landed
    float_to_half(dtype_, grads32.data() + (bucket.offset - unit_offset), staging_[s].data(),
                  bucket.count);
    std::uint16_t* out = first_micro ? grads16_ + bucket.local : landing_[s].data();
    in_flight_[s] = {comm_.reduce_scatter_async(staging_[s].data(), out, bucket.count, dtype_), b,
                     !first_micro};
    if (!overlap_) complete(in_flight_[s], s);
  }
}

void GradReducer::complete(InFlight& f, int slot) {
  if (f.bucket < 0) return;
  f.handle.wait();
  if (f.add) {
    const Bucket& bucket = partition_.buckets[f.bucket];
    half_to_float(dtype_, landing_[slot].data(), add_scratch_.data(), bucket.shard.size);
    accumulate_half(dtype_, grads16_ + bucket.local, add_scratch_.data(), bucket.shard.size);
  }
  f = InFlight{};
}

void GradReducer::drain() noexcept {
  for (comm::Handle& h : full_pending_) h.settle();
  full_pending_.clear();
  for (InFlight& f : in_flight_) {
    f.handle.settle();
    f = InFlight{};
  }
}

void GradReducer::finish() {
  for (comm::Handle& h : full_pending_) h.wait();
  full_pending_.clear();
  for (int s = 0; s < 2; ++s) complete(in_flight_[s], s);
}

}  // namespace zerodp::zero
