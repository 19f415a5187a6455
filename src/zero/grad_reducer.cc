#include "zero/grad_reducer.h"

#include "zerodp/dtype.h"
#include "zerodp/error.h"

namespace zerodp::zero {

GradReducer::GradReducer(int stage, const std::vector<model::UnitInfo>& units,
                         const Partition& partition, comm::Communicator& comm, Ledger& ledger,
                         DType dtype, bool overlap, std::uint16_t* grads16)
    : stage_(stage),
      units_(units),
      partition_(partition),
      comm_(comm),
      dtype_(dtype),
      overlap_(overlap),
      grads16_(grads16) {
  if (stage_ >= 2) {
    for (int b = 0; b < 2; ++b) {
      bucket_[b] = Buffer<std::uint16_t>(ledger, Category::buckets, partition_.max_piece);
      landing_[b] = Buffer<std::uint16_t>(ledger, Category::buckets, partition_.max_chunk);
    }
    add_scratch_.resize(partition_.max_chunk);
  }
}

void GradReducer::unit_done(int unit, std::span<const float> grads32, bool first_micro,
                            bool last_micro) {
  const std::size_t unit_offset = units_[unit].param_offset;
  if (stage_ <= 1) {
    std::uint16_t* g16 = grads16_ + unit_offset;
    if (first_micro) {
      float_to_half(dtype_, grads32.data(), g16, grads32.size());
    } else {
      accumulate_half(dtype_, g16, grads32.data(), grads32.size());
    }
    if (!last_micro) return;
    for (int p : partition_.unit_pieces[unit]) {
      const Piece& piece = partition_.pieces[p];
      std::uint16_t* data = grads16_ + piece.offset;
      comm::Handle h = stage_ == 0 ? comm_.all_reduce_async(data, piece.count, dtype_)
                                   : comm_.reduce_scatter_async(data, data + piece.shard.offset,
                                                                piece.count, dtype_);
      if (overlap_) {
        full_pending_.push_back(std::move(h));
      } else {
        h.wait();
      }
    }
    return;
  }
  for (int p : partition_.unit_pieces[unit]) {
    const Piece& piece = partition_.pieces[p];
    const int b = next_bucket_;
    next_bucket_ ^= 1;
    complete(in_flight_[b], b);  // the bucket is free once its last reduction landed
    float_to_half(dtype_, grads32.data() + (piece.offset - unit_offset), bucket_[b].data(),
                  piece.count);
    std::uint16_t* out = first_micro ? grads16_ + piece.local : landing_[b].data();
    in_flight_[b] = {comm_.reduce_scatter_async(bucket_[b].data(), out, piece.count, dtype_), p,
                     !first_micro};
    if (!overlap_) complete(in_flight_[b], b);
  }
}

void GradReducer::complete(InFlight& f, int bucket) {
  if (f.piece < 0) return;
  f.handle.wait();
  if (f.add) {
    const Piece& piece = partition_.pieces[f.piece];
    half_to_float(dtype_, landing_[bucket].data(), add_scratch_.data(), piece.shard.size);
    accumulate_half(dtype_, grads16_ + piece.local, add_scratch_.data(), piece.shard.size);
  }
  f = InFlight{};
}

void GradReducer::finish() {
  for (comm::Handle& h : full_pending_) h.wait();
  full_pending_.clear();
  for (int b = 0; b < 2; ++b) complete(in_flight_[b], b);
}

}  // namespace zerodp::zero
