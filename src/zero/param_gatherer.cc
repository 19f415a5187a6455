#include "zero/param_gatherer.h"

#include <algorithm>

#include "zerodp/common/error.h"
#include "zerodp/common/quantize.h"

namespace zerodp::zero {

ParamGatherer::ParamGatherer(const std::vector<model::UnitInfo>& units, const Partition& partition,
                             comm::Communicator& comm, Ledger& ledger, DType dtype, bool prefetch,
                             std::size_t qwz_block, comm::Communicator* host)
    : units_(units),
      partition_(partition),
      comm_(comm),
      ledger_(ledger),
      dtype_(dtype),
      prefetch_(prefetch),
      qwz_block_(qwz_block),
      state_(units.size(), State::sharded),
      slot_of_(units.size(), -1),
      source_(units.size(), Source::ranks),
      pending_(units.size()),
      host_(host) {
  if (host_) {
    std::size_t at = 0;
    for (const Bucket& bucket : partition_.buckets) {
      secondary_at_.push_back(at);
      at += shard_of(bucket.count, host_->size(), host_->rank()).size;
    }
    secondary_ = Buffer<std::uint16_t>(ledger_, Category::gathered_params, at);
    secondary_fresh_.assign(units_.size(), false);
  }
  if (qwz_block_ == 0) return;
  for (const std::vector<int>& buckets : partition_.unit_buckets) {
    std::size_t bytes = 0;
    for (int b : buckets) {
      bytes +=
          comm_.size() * quantized_payload(partition_.buckets[b].count, comm_.size(), qwz_block_);
    }
    staging_ = std::max(staging_, bytes);
  }
}

std::vector<int> ParamGatherer::needs(std::size_t step) const {
  const int unit = order_[step];
  std::vector<int> units = {unit};
  for (int r : units_[unit].reads) units.push_back(r);
  return units;
}

void ParamGatherer::begin_pass(const std::vector<int>& order, const std::uint16_t* shard16,
                               Pass pass) {
  for (std::size_t u = 0; u < units_.size(); ++u) {
    ZERODP_CHECK_MSG(state_[u] == State::sharded, "a pass began with a unit still gathered");
  }
  order_ = order;
  shard16_ = shard16;
  pass_ = pass;
  // The forward gathers with the params of now; copies kept from an earlier step are stale.
  if (pass == Pass::forward) secondary_fresh_.assign(secondary_fresh_.size(), false);
  last_use_.assign(units_.size(), 0);
  for (std::size_t i = 0; i < order_.size(); ++i) {
    for (int u : needs(i)) last_use_[u] = i;
  }
}

void ParamGatherer::issue(int unit) {
  if (state_[unit] != State::sharded) return;
  if (free_slots_.empty()) {
    slots_.emplace_back(ledger_, Category::gathered_params, partition_.max_unit);
    if (qwz_block_ > 0) staged_.emplace_back(ledger_, Category::gathered_params, staging_);
    free_slots_.push_back(static_cast<int>(slots_.size()) - 1);
  }
  const int slot = free_slots_.back();
  free_slots_.pop_back();
  slot_of_[unit] = slot;
  state_[unit] = State::gathering;
  source_[unit] = host_ && pass_ == Pass::backward && secondary_fresh_[unit] ? Source::host_copy
                  : qwz_block_ > 0 ? Source::ranks_quantized
                                   : Source::ranks;
  if (source_[unit] == Source::host_copy) {
    // hpZ: the host's ranks hold the unit between them; nothing leaves the host.
    std::uint16_t* out = slots_[slot].data();
    for (int b : partition_.unit_buckets[unit]) {
      const Bucket& bucket = partition_.buckets[b];
      pending_[unit].push_back(host_->all_gather_async(
          secondary_.data() + secondary_at_[b], out + (bucket.offset - units_[unit].param_offset),
          bucket.count, dtype_));
    }
    return;
  }
  if (source_[unit] == Source::ranks_quantized) {
    const int ranks = comm_.size();
    std::uint8_t* staged = staged_[slot].data();
    for (int b : partition_.unit_buckets[unit]) {
      const Bucket& bucket = partition_.buckets[b];
      const std::size_t payload = quantized_payload(bucket.count, ranks, qwz_block_);
      std::uint8_t* mine = staged + comm_.rank() * payload;
      const std::size_t used = quantized_bytes(bucket.shard.size, qwz_block_);
      quantize_int8(dtype_, shard16_ + bucket.local, bucket.shard.size, qwz_block_, mine);
      // A short chunk's padding goes on the wire too: zeros, never stale bytes.
      std::fill(mine + used, mine + payload, std::uint8_t{0});
      pending_[unit].push_back(comm_.all_gather_async(mine, staged, ranks * payload, DType::u8));
      staged += ranks * payload;
    }
    return;
  }
  std::uint16_t* out = slots_[slot].data();
  for (int b : partition_.unit_buckets[unit]) {
    const Bucket& bucket = partition_.buckets[b];
    pending_[unit].push_back(comm_.all_gather_async(
        shard16_ + bucket.local, out + (bucket.offset - units_[unit].param_offset), bucket.count,
        dtype_));
  }
}

void ParamGatherer::acquire(std::size_t step) {
  const std::vector<int> now = needs(step);
  for (int u : now) issue(u);
  if (prefetch_ && step + 1 < order_.size()) {
    for (int u : needs(step + 1)) issue(u);
  }
  for (int u : now) {
    if (state_[u] != State::gathering) continue;
    for (comm::Handle& h : pending_[u]) h.wait();
    pending_[u].clear();
    if (source_[u] == Source::ranks_quantized) dequantize(u);
    if (host_ && pass_ == Pass::forward) keep_secondary(u);
    state_[u] = State::gathered;
  }
}

void ParamGatherer::keep_secondary(int unit) {
  const std::uint16_t* in = slots_[slot_of_[unit]].data();
  for (int b : partition_.unit_buckets[unit]) {
    const Bucket& bucket = partition_.buckets[b];
    const Shard chunk = shard_of(bucket.count, host_->size(), host_->rank());
    const std::uint16_t* from = in + (bucket.offset - units_[unit].param_offset) + chunk.offset;
    std::copy(from, from + chunk.size, secondary_.data() + secondary_at_[b]);
  }
  secondary_fresh_[unit] = true;
}

void ParamGatherer::dequantize(int unit) {
  const int ranks = comm_.size();
  const std::uint8_t* staged = staged_[slot_of_[unit]].data();
  std::uint16_t* out = slots_[slot_of_[unit]].data();
  for (int b : partition_.unit_buckets[unit]) {
    const Bucket& bucket = partition_.buckets[b];
    const std::size_t payload = quantized_payload(bucket.count, ranks, qwz_block_);
    std::uint16_t* at = out + (bucket.offset - units_[unit].param_offset);
    for (int j = 0; j < ranks; ++j) {
      const Shard chunk = shard_of(bucket.count, ranks, j);
      dequantize_int8(dtype_, staged + j * payload, chunk.size, qwz_block_, at + chunk.offset);
    }
    staged += ranks * payload;
  }
}

const std::uint16_t* ParamGatherer::data(int unit) const {
  ZERODP_CHECK(state_[unit] == State::gathered);
  return slots_[slot_of_[unit]].data();
}

void ParamGatherer::drain() noexcept {
  for (auto& handles : pending_) {
    for (comm::Handle& h : handles) h.settle();
    handles.clear();
  }
}

void ParamGatherer::release(std::size_t step) {
  for (int u : needs(step)) {
    if (last_use_[u] != step || state_[u] == State::sharded) continue;
    ZERODP_CHECK(state_[u] == State::gathered);
    free_slots_.push_back(slot_of_[u]);
    slot_of_[u] = -1;
    state_[u] = State::sharded;
  }
}

}  // namespace zerodp::zero
