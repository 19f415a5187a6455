#include "zero/grad_reducer.h"

#include <algorithm>

#include "zerodp/common/dtype.h"
#include "zerodp/common/error.h"
#include "zerodp/common/quantize.h"
#include "zerodp/common/shard.h"

namespace zerodp::zero {

GradReducer::GradReducer(Sharding sharding, const std::vector<model::UnitInfo>& units,
                         const Partition& partition, comm::Communicator& comm, Ledger& ledger,
                         DType dtype, bool overlap, std::uint16_t* grads16,
                         comm::Communicator* host, comm::Communicator* peers, std::size_t qgz_block)
    : sharding_(sharding),
      units_(units),
      partition_(partition),
      comm_(comm),
      dtype_(dtype),
      overlap_(overlap),
      grads16_(grads16),
      host_(host),
      peers_(peers),
      qgz_block_(qgz_block) {
  if (sharding_.gradients) {
    for (int s = 0; s < 2; ++s) {
      staging_[s] = Buffer<std::uint16_t>(ledger, Category::buckets, partition_.max_bucket);
      landing_[s] = Buffer<std::uint16_t>(ledger, Category::buckets, partition_.max_chunk);
    }
    add_scratch_ = Buffer<float>(ledger, Category::scratch32, partition_.max_chunk);
  }
  if (sharding_.gradients && qgz_block_ > 0) {
    const int n = comm_.size(), hosts = peers_->size();
    const std::size_t payload = quantized_payload(partition_.max_bucket, n, qgz_block_);
    const std::size_t cap = shard_of(partition_.max_bucket, n, 0).capacity;
    for (int s = 0; s < 2; ++s) {
      host_send_[s] = Buffer<std::uint8_t>(ledger, Category::buckets, n * payload);
      host_recv_[s] = Buffer<std::uint8_t>(ledger, Category::buckets, n * payload);
      peer_send_[s] = Buffer<std::uint8_t>(ledger, Category::buckets, hosts * payload);
      peer_recv_[s] = Buffer<std::uint8_t>(ledger, Category::buckets, hosts * payload);
      partial_[s] = Buffer<float>(ledger, Category::buckets, hosts * cap);
    }
    half_ = Buffer<std::uint16_t>(ledger, Category::buckets, cap);
  }
}

comm::Handle GradReducer::quantized_scatter(int slot, const Bucket& bucket) {
  const int n = comm_.size(), per_host = host_->size(), hosts = peers_->size();
  const std::size_t payload = quantized_payload(bucket.count, n, qgz_block_);
  // Block l' (for host peer l') holds the payloads of chunks c_{h'H+l'}, h' = 0..K-1.
  std::uint8_t* send = host_send_[slot].data();
  for (int l = 0; l < per_host; ++l) {
    for (int h = 0; h < hosts; ++h) {
      const Shard c = shard_of(bucket.count, n, h * per_host + l);
      std::uint8_t* p = send + (std::size_t(l) * hosts + h) * payload;
      const std::size_t used = quantized_bytes(c.size, qgz_block_);
      quantize_int8(dtype_, staging_[slot].data() + c.offset, c.size, qgz_block_, p);
      std::fill(p + used, p + payload, std::uint8_t{0});
    }
  }
  return host_->all_to_all_async(send, host_recv_[slot].data(), hosts * payload, DType::u8);
}

void GradReducer::finish_quantized(int slot, const Bucket& bucket, std::uint16_t* out) {
  const int n = comm_.size(), per_host = host_->size(), hosts = peers_->size();
  const int l = host_->rank();
  const std::size_t payload = quantized_payload(bucket.count, n, qgz_block_);
  const std::size_t cap = shard_of(bucket.count, n, 0).capacity;
  float* partial = partial_[slot].data();
  float* term = add_scratch_.data();
  // The host's partial sums of chunks c_{h'H+l}, in host rank order, then 16 bits, quantized.
  for (int h = 0; h < hosts; ++h) {
    const Shard c = shard_of(bucket.count, n, h * per_host + l);
    float* sum = partial + std::size_t(h) * cap;
    for (int from = 0; from < per_host; ++from) {
      const std::uint8_t* p = host_recv_[slot].data() + (std::size_t(from) * hosts + h) * payload;
      dequantize_int8(dtype_, p, c.size, qgz_block_, half_.data());
      half_to_float(dtype_, half_.data(), from == 0 ? sum : term, c.size);
      if (from > 0) {
        for (std::size_t i = 0; i < c.size; ++i) sum[i] += term[i];
      }
    }
    float_to_half(dtype_, sum, half_.data(), c.size);
    std::uint8_t* p = peer_send_[slot].data() + std::size_t(h) * payload;
    quantize_int8(dtype_, half_.data(), c.size, qgz_block_, p);
    std::fill(p + quantized_bytes(c.size, qgz_block_), p + payload, std::uint8_t{0});
  }
  peers_->all_to_all(peer_send_[slot].data(), peer_recv_[slot].data(), payload, DType::u8);
  // This rank's chunk: the hosts' partial sums, in host order, rounded once to 16 bits.
  const std::size_t mine = bucket.shard.size;
  float* sum = partial;  // free again: reused for the final sum
  for (int h = 0; h < hosts; ++h) {
    dequantize_int8(dtype_, peer_recv_[slot].data() + std::size_t(h) * payload, mine, qgz_block_,
                    half_.data());
    half_to_float(dtype_, half_.data(), h == 0 ? sum : term, mine);
    if (h > 0) {
      for (std::size_t i = 0; i < mine; ++i) sum[i] += term[i];
    }
  }
  float_to_half(dtype_, sum, out, mine);
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
    if (qgz_block_ > 0) {
      in_flight_[s] = {quantized_scatter(s, bucket), b, !first_micro, out};
      if (!overlap_) complete(in_flight_[s], s);
      continue;
    }
    in_flight_[s] = {comm_.reduce_scatter_async(staging_[s].data(), out, bucket.count, dtype_), b,
                     !first_micro};
    if (!overlap_) complete(in_flight_[s], s);
  }
}

void GradReducer::complete(InFlight& f, int slot) {
  if (f.bucket < 0) return;
  f.handle.wait();
  if (f.out) finish_quantized(slot, partition_.buckets[f.bucket], f.out);
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
