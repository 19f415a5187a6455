// The frozen params of a model that has them (a LoRA model's base, model.h): held in 16 bits,
// whole on every rank at stages 0-2 and sharded at stage 3, where a second ParamGatherer
// gathers each unit's just before it computes, as the trained params are. They take no
// gradient, no master copy and no optimizer state: a step never changes them.
//
// QLoRA (EngineOptions::frozen_nf4) stores the linear weights among them as NF4 codes, four to
// a 16-bit word: the partition, the shards and the gathers are over stored words, so they
// move a quarter of the bytes; each rank keeps every weight's quantization state whole.
#include <algorithm>
#include <cstring>
#include <string>

#include "zero/engine_impl.h"
#include "zerodp/common/dtype.h"
#include "zerodp/common/error.h"
#include "zerodp/optim/nf4.h"

namespace zerodp::zero {
namespace {

std::size_t ceil_div(std::size_t a, std::size_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

}  // namespace

void Engine::Impl::allocate_frozen() {
  frozen_units = units;
  frozen_tensors.assign(units.size(), {});
  std::size_t max_view = 0, max_unit = 0, nf4_spare = 0, codes8 = 0, scales = 0, stored = 0;
  for (std::size_t u = 0; u < units.size(); ++u) {
    std::size_t words = 0;
    for (const model::TensorInfo& t : units[u].frozen_tensors) {
      std::size_t n = 1;
      for (std::size_t d : t.shape) n *= d;
      FrozenTensor f;
      f.view_offset = t.offset;
      f.count = n;
      f.stored_offset = words;
      f.nf4 = opt.frozen_nf4 && t.linear && n > 0;
      if (f.nf4) {
        f.codes8_at = codes8;
        f.scales_at = scales;
        const std::size_t blocks = optim::nf4_blocks(n);
        codes8 += opt.frozen_double_quant ? blocks : 0;
        scales += opt.frozen_double_quant ? optim::nf4_nested_blocks(n) + 1 : blocks;
        words += ceil_div(n, 4);
        // Setup quantizes the weight beside the unit's values: its codes, then its absmax.
        nf4_spare = std::max(nf4_spare, ceil_div(n, 8) + blocks);
      } else {
        words += n;
      }
      frozen_tensors[u].push_back(f);
    }
    frozen_units[u].param_offset = stored;
    frozen_units[u].param_count = words;
    stored += words;
    std::size_t view = units[u].frozen_count;
    for (int r : units[u].reads) view += units[std::size_t(r)].frozen_count;
    max_view = std::max(max_view, view);
    max_unit = std::max(max_unit, units[u].frozen_count);
  }
  std::size_t next = 0;
  for (const model::UnitInfo& u : units) {
    ZERODP_CHECK_MSG(u.frozen_offset == next, "frozen params must tile their layout in order");
    next += u.frozen_count;
  }
  frozen_part = make_partition(model::param_counts(frozen_units), bucket_elements(opt.bucket_bytes),
                               ranks, rank);
  if (!has_frozen()) return;
  if (opt.zeropp.qwz || opt.zeropp.hpz || opt.zeropp.qgz) {
    throw InvalidArgument("zeropp", field_ref("zeropp") +
                                        ": ZeRO++ is not available for a model with frozen "
                                        "parameters (a LoRA base): train without it");
  }
  frozen16 = Buffer<std::uint16_t>(ledger, Category::params16,
                                   full_params() ? frozen_part.total : frozen_part.local_total);
  if (codes8 > 0) nf4_codes8 = Buffer<std::uint8_t>(ledger, Category::params16, codes8);
  if (scales > 0) nf4_scales = Buffer<float>(ledger, Category::params16, scales);
  frozen32 = Buffer<float>(ledger, Category::scratch32,
                           std::max(max_view, nf4_spare > 0 ? max_unit + nf4_spare : 0));
}

void Engine::Impl::for_held_frozen(
    std::size_t unit, std::size_t begin, std::size_t end,
    const std::function<void(std::size_t, std::uint16_t*, std::size_t)>& fn) {
  const std::size_t unit_offset = frozen_units[unit].param_offset;
  if (full_params()) {
    if (begin < end) fn(begin, frozen16.data() + unit_offset + begin, end - begin);
    return;
  }
  for (int b : frozen_part.unit_buckets[unit]) {
    const Bucket& bucket = frozen_part.buckets[std::size_t(b)];
    const std::size_t own = bucket.offset + bucket.shard.offset - unit_offset;
    const std::size_t lo = std::max(begin, own), hi = std::min(end, own + bucket.shard.size);
    if (lo < hi) fn(lo, frozen16.data() + bucket.local + (lo - own), hi - lo);
  }
}

void Engine::Impl::store_frozen_unit(std::size_t unit) {
  const float* values = frozen32.data();
  float* spare = frozen32.data() + units[unit].frozen_count;
  for (const FrozenTensor& t : frozen_tensors[unit]) {
    if (!t.nf4) {
      for_held_frozen(unit, t.stored_offset, t.stored_offset + t.count,
                      [&](std::size_t first, std::uint16_t* to, std::size_t n) {
                        const float* from = values + t.view_offset + (first - t.stored_offset);
                        float_to_half(opt.precision, from, to, n);
                      });
      continue;
    }
    // The codes, padded with zero bytes to whole words, then the absmax, in the spare floats.
    const std::size_t blocks = optim::nf4_blocks(t.count), words = ceil_div(t.count, 4);
    auto* codes = reinterpret_cast<std::uint8_t*>(spare);
    std::fill_n(codes, 2 * words, std::uint8_t{0});
    const std::span<float> absmax(spare + ceil_div(t.count, 8), blocks);
    optim::nf4_quantize_blocks({values + t.view_offset, t.count},
                               {codes, optim::nf4_code_bytes(t.count)}, absmax);
    if (opt.frozen_double_quant) {
      const std::size_t nested = optim::nf4_nested_blocks(t.count);
      nf4_scales.data()[t.scales_at + nested] =
          optim::nf4_double_quantize(absmax, {nf4_codes8.data() + t.codes8_at, blocks},
                                     {nf4_scales.data() + t.scales_at, nested});
    } else {
      std::copy(absmax.begin(), absmax.end(), nf4_scales.data() + t.scales_at);
    }
    for_held_frozen(unit, t.stored_offset, t.stored_offset + words,
                    [&](std::size_t first, std::uint16_t* to, std::size_t n) {
                      std::memcpy(to, codes + 2 * (first - t.stored_offset), 2 * n);
                    });
  }
}

void Engine::Impl::frozen_view(int unit, const std::uint16_t* from, float* to) {
  for (const FrozenTensor& t : frozen_tensors[std::size_t(unit)]) {
    const std::uint16_t* stored = from + t.stored_offset;
    float* view = to + t.view_offset;
    if (!t.nf4) {
      split(t.count, [&](std::size_t b, std::size_t e) {
        half_to_float(opt.precision, stored + b, view + b, e - b);
      });
      continue;
    }
    const auto* codes = reinterpret_cast<const std::uint8_t*>(stored);
    const std::size_t blocks = optim::nf4_blocks(t.count);
    const std::size_t nested = optim::nf4_nested_blocks(t.count);
    const float* scales = nf4_scales.data() + t.scales_at;
    const std::span<const std::uint8_t> codes8(nf4_codes8.data() + t.codes8_at,
                                               opt.frozen_double_quant ? blocks : 0);
    const std::span<const float> nested_absmax(scales, nested);
    split(blocks, [&](std::size_t b, std::size_t e) {
      const std::size_t first = b * optim::kNf4Block;
      const std::size_t count = std::min(t.count, e * optim::kNf4Block) - first;
      optim::nf4_dequantize_codes(
          {codes + first / 2, optim::nf4_code_bytes(count)}, count,
          [&](std::size_t block) {
            return opt.frozen_double_quant ? optim::nf4_double_quantized_absmax(
                                                 codes8, nested_absmax, scales[nested], b + block)
                                           : scales[b + block];
          },
          view + first);
      // bitsandbytes' dequantize_4bit returns the weight in the compute dtype.
      for (float* x = view + first; x != view + first + count; ++x) {
        *x = half_to_float(opt.precision, float_to_half(opt.precision, *x));
      }
    });
  }
}

void Engine::Impl::init_frozen() {
  // As init_weights: every rank initialises every unit in full, in frozen32 (free until the
  // first forward), and keeps what it holds.
  for (std::size_t u = 0; u < units.size() && has_frozen(); ++u) {
    const std::size_t n = units[u].frozen_count;
    if (n == 0) continue;
    model.init_frozen_unit(static_cast<int>(u), std::span<float>(frozen32.data(), n), opt.seed);
    store_frozen_unit(u);
  }
}

const std::uint16_t* Engine::Impl::frozen16_of(int unit) const {
  if (frozen_gatherer) return frozen_gatherer->data(unit);
  return frozen16.data() + frozen_units[std::size_t(unit)].param_offset;
}

void Engine::import_frozen(const RangeReader& read) {
  Impl& e = *impl_;
  if (e.opt.frozen_nf4) {
    // Quantization takes a whole weight: every rank reads every unit and keeps its part.
    for (std::size_t u = 0; u < e.units.size(); ++u) {
      const std::size_t n = e.units[u].frozen_count;
      if (n == 0) continue;
      read({e.units[u].frozen_offset, n}, e.frozen32.data(), nullptr, nullptr);
      e.store_frozen_unit(u);
    }
    return;
  }
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
