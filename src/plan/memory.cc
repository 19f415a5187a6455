#include "zerodp/plan/memory.h"

#include <algorithm>
#include <limits>

#include "zerodp/common/error.h"
#include "zerodp/common/optimizers.h"
#include "zerodp/common/shard.h"
#include "zerodp/common/units.h"

namespace zerodp::plan {
namespace {

using u128 = unsigned __int128;
constexpr u128 kMaxUint64 = std::numeric_limits<std::uint64_t>::max();

// The largest multiple of Φ any planner figure reaches: the whole model state, or the seed's
// two-direction ZeRO-3 volume (two gathers of P and one reduce-scatter of G, doubled), which
// exceeds it when the optimizer block is small (fp32 SGD: 8Φ of state, 24Φ of traffic).
std::uint64_t largest_multiple(const BytesPerParam& bpp) {
  // An 8-bit K's block constants add at most one byte an element on top (8 bytes a block of
  // 256, rounded up), and its 32-bit state below the size rule may exceed K.
  const std::uint64_t k = std::max(bpp.optimizer, bpp.small_optimizer) +
                          (bpp.block > 0 ? (bpp.block_bytes + bpp.block - 1) / bpp.block : 0);
  return std::max<std::uint64_t>(std::uint64_t(bpp.params) + bpp.grads + k,
                                 2 * (2 * std::uint64_t(bpp.params) + bpp.grads));
}

// The bytes beyond K·elements that optimizer_bytes() adds (negative-free: the 32-bit state
// below the size rule is counted apart).
std::uint64_t block_constants(const BytesPerParam& bpp, std::uint64_t elements) {
  if (bpp.block == 0 || elements == 0) return 0;
  return (elements / bpp.block + (elements % bpp.block != 0)) * bpp.block_bytes;
}

}  // namespace

std::uint64_t BytesPerParam::optimizer_bytes(std::uint64_t elements) const {
  const u128 bytes = elements < small_below
                         ? u128(small_optimizer) * elements
                         : u128(optimizer) * elements + block_constants(*this, elements);
  return bytes > kMaxUint64 ? std::numeric_limits<std::uint64_t>::max() : std::uint64_t(bytes);
}

BytesPerParam bytes_per_param(Precision precision, Optimizer optimizer) {
  const OptimizerRow& row = optimizer_row(optimizer);
  if (row.pure_bf16 && precision != Precision::bf16) {
    throw InvalidArgument(field_ref("optimizer") + ": " + std::string(row.word) +
                          " is pure-bf16 training (bf16 params, grads and states, no fp32 "
                          "master): it takes --precision bf16, not " +
                          std::string(precision_name(precision)));
  }
  // Mixed precision keeps an fp32 master copy inside K; fp32 training updates the params
  // themselves, and pure bf16 the bf16 params, so K holds only the optimizer's own state.
  const bool mixed = precision != Precision::fp32;
  const std::uint32_t master = mixed && row.fp32_master ? 4 : 0;
  const std::uint32_t width = mixed ? 2 : 4;
  BytesPerParam bpp{width, width, master};
  std::uint32_t quantized = 0;
  for (const StateSlot& slot : row.slots) {
    bpp.optimizer += slot_element_bytes(slot.format);
    quantized += slot.format == SlotFormat::int8_blockwise;
  }
  if (quantized > 0) {
    // Each int8 slot's fp32 absmax a block; a partition under the size rule keeps every slot
    // in fp32 (bitsandbytes' init_state).
    bpp.block = row.block;
    bpp.block_bytes = 4 * quantized;
    bpp.small_below = row.min_quantized;
    bpp.small_optimizer = master + 4 * static_cast<std::uint32_t>(row.slots.size());
  }
  return bpp;
}

std::string stage_formula(Stage stage, const BytesPerParam& bpp) {
  const StageSplit split = stage_split(stage, bpp);
  std::string f;
  if (split.replicated) f += std::to_string(split.replicated) + "Φ";
  if (split.sharded) f += (f.empty() ? "" : " + ") + std::to_string(split.sharded) + "Φ/N";
  return f;
}

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::fp16:
      return "mixed fp16";
    case Precision::bf16:
      return "mixed bf16";
    case Precision::fp32:
      return "fp32";
  }
  return "?";
}

std::string_view precision_name(Precision precision, Optimizer optimizer) {
  return optimizer_row(optimizer).pure_bf16 ? "pure bf16" : precision_name(precision);
}

std::string bytes_per_param_words(const BytesPerParam& b) {
  std::string words = std::to_string(b.params) + " params + " + std::to_string(b.grads) +
                      " grads + " + std::to_string(b.optimizer) +
                      " optimizer = " + std::to_string(b.total());
  if (b.block > 0) {
    words += ", and " + std::to_string(b.block_bytes) + " bytes a block of " +
             std::to_string(b.block) + " optimizer elements";
  }
  if (b.small_below > 0) {
    words += " (" + std::to_string(b.small_optimizer) + " an element under " +
             units::format_with_commas(b.small_below) + ")";
  }
  return words;
}

std::string_view optimizer_name(Optimizer optimizer) {
  return optimizer_row(optimizer).described;
}

StageSplit stage_split(Stage stage, const BytesPerParam& bpp) {
  const Sharding s = sharding(stage);
  const std::uint64_t p = bpp.params, g = bpp.grads, k = bpp.optimizer;
  return {(s.parameters ? 0 : p) + (s.gradients ? 0 : g) + (s.optimizer_states ? 0 : k),
          (s.parameters ? p : 0) + (s.gradients ? g : 0) + (s.optimizer_states ? k : 0)};
}

void check_fits_in_64_bits(std::uint64_t params, const BytesPerParam& bpp) {
  if (bpp.params == 0 || bpp.grads == 0) {
    throw InvalidArgument(field_ref("bytes_per_param") +
                          ": expected P,G,K with P >= 1 and G >= 1 such as 2,2,12");
  }
  const std::uint64_t multiple = largest_multiple(bpp);
  if (u128(params) * multiple <= kMaxUint64) return;
  throw InvalidArgument(
      field_ref("params") + ": expected a count whose bytes fit in 64 bits, got " +
      std::to_string(params) + " (" + std::to_string(multiple) +
      " bytes per parameter overflow 64 bits; at most " +
      std::to_string(std::numeric_limits<std::uint64_t>::max() / multiple) + " parameters)");
}

std::uint64_t model_state_bytes(std::uint64_t params, int ranks, Stage stage,
                                const BytesPerParam& bpp) {
  ZERODP_CHECK(ranks >= 1);
  ZERODP_CHECK(u128(params) * largest_multiple(bpp) <= kMaxUint64);
  const Sharding s = sharding(stage);
  // Rank 0 always holds a full shard, so its capacity is what every rank must allocate.
  const std::uint64_t shard = shard_of(params, ranks, 0).capacity;
  return std::uint64_t(bpp.params) * (s.parameters ? shard : params) +
         std::uint64_t(bpp.grads) * (s.gradients ? shard : params) +
         bpp.optimizer_bytes(s.optimizer_states ? shard : params);
}

u128 state_bytes_at_shard(u128 params, u128 shard, Stage stage, const BytesPerParam& bpp) {
  const Sharding s = sharding(stage);
  const u128 k_elements = s.optimizer_states ? shard : params;
  u128 k = u128(bpp.optimizer) * k_elements;
  if (k_elements < bpp.small_below) {
    k = u128(bpp.small_optimizer) * k_elements;
  } else if (bpp.block > 0) {
    k += (k_elements + bpp.block - 1) / bpp.block * bpp.block_bytes;
  }
  return u128(bpp.params) * (s.parameters ? shard : params) +
         u128(bpp.grads) * (s.gradients ? shard : params) + k;
}

std::uint64_t floor_bytes(std::uint64_t params, Stage stage, const BytesPerParam& bpp) {
  ZERODP_CHECK(u128(params) * largest_multiple(bpp) <= kMaxUint64);
  const std::uint64_t replicated = stage_split(stage, bpp).replicated * params;
  // A replicated K's block constants and size rule are the whole model's; a sharded K's
  // vanish with its shard.
  if (sharding(stage).optimizer_states) return replicated;
  return replicated - std::uint64_t(bpp.optimizer) * params + bpp.optimizer_bytes(params);
}

}  // namespace zerodp::plan
