// The frozen params of a model that has them (a LoRA model's base, model.h): held in 16 bits,
// whole on every rank at stages 0-2 and sharded at stage 3, where a second ParamGatherer
// gathers each unit's just before it computes, as the trained params are. They take no
// gradient, no master copy and no optimizer state: a step never changes them.
#include <algorithm>
#include <string>

#include "zero/engine_impl.h"
#include "zerodp/common/dtype.h"
#include "zerodp/common/error.h"

namespace zerodp::zero {

void Engine::Impl::allocate_frozen() {
  frozen_units = units;
  std::size_t max_view = 0;
  for (model::UnitInfo& u : frozen_units) {
    u.param_offset = u.frozen_offset;
    u.param_count = u.frozen_count;
  }
  std::size_t next = 0;
  for (const model::UnitInfo& u : frozen_units) {
    ZERODP_CHECK_MSG(u.param_offset == next, "frozen params must tile their layout in order");
    next += u.param_count;
    std::size_t view = u.param_count;
    for (int r : u.reads) view += frozen_units[std::size_t(r)].param_count;
    max_view = std::max(max_view, view);
  }
  frozen_part =
      make_partition(model::frozen_counts(units), bucket_elements(opt.bucket_bytes), ranks, rank);
  if (!has_frozen()) return;
  if (opt.zeropp.qwz || opt.zeropp.hpz || opt.zeropp.qgz) {
    throw InvalidArgument("zeropp", field_ref("zeropp") +
                                        ": ZeRO++ is not available for a model with frozen "
                                        "parameters (a LoRA base): train without it");
  }
  frozen16 = Buffer<std::uint16_t>(ledger, Category::params16,
                                   full_params() ? frozen_part.total : frozen_part.local_total);
  frozen32 = Buffer<float>(ledger, Category::scratch32, max_view);
}

void Engine::Impl::init_frozen() {
  // As init_weights: every rank initialises every unit in full, in frozen32 (free until the
  // first forward), and keeps what it holds.
  for (std::size_t u = 0; u < units.size() && has_frozen(); ++u) {
    const std::size_t n = units[u].frozen_count;
    if (n == 0) continue;
    std::span<float> w(frozen32.data(), n);
    model.init_frozen_unit(static_cast<int>(u), w, opt.seed);
    if (full_params()) {
      float_to_half(opt.precision, w.data(), frozen16.data() + units[u].frozen_offset, n);
      continue;
    }
    for (int b : frozen_part.unit_buckets[u]) {
      const Bucket& bucket = frozen_part.buckets[std::size_t(b)];
      const float* own = w.data() + (bucket.offset - units[u].frozen_offset) + bucket.shard.offset;
      float_to_half(opt.precision, own, frozen16.data() + bucket.local, bucket.shard.size);
    }
  }
}

const std::uint16_t* Engine::Impl::frozen16_of(int unit) const {
  if (frozen_gatherer) return frozen_gatherer->data(unit);
  return frozen16.data() + units[std::size_t(unit)].frozen_offset;
}

void Engine::import_frozen(const RangeReader& read) {
  Impl& e = *impl_;
  // Bucket by bucket through frozen32 (the largest unit with its reads: at least a bucket).
  for (const Bucket& bucket : e.frozen_part.buckets) {
    const bool whole = e.full_params();
    const std::size_t count = whole ? bucket.count : bucket.shard.size;
    if (count == 0) continue;
    const std::uint64_t first = bucket.offset + (whole ? 0 : bucket.shard.offset);
    read({first, count}, e.frozen32.data(), nullptr, nullptr);
    std::uint16_t* to = e.frozen16.data() + (whole ? bucket.offset : bucket.local);
    float_to_half(e.opt.precision, e.frozen32.data(), to, count);
  }
}

}  // namespace zerodp::zero
