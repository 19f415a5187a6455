#include "zerodp/plan/memory.h"

#include <algorithm>
#include <limits>

#include "zerodp/common/error.h"
#include "zerodp/common/shard.h"

namespace zerodp::plan {
namespace {

using u128 = unsigned __int128;
constexpr u128 kMaxUint64 = std::numeric_limits<std::uint64_t>::max();

// The largest multiple of Φ any planner figure reaches: the whole model state, or the seed's
// two-direction ZeRO-3 volume (two gathers of P and one reduce-scatter of G, doubled), which
// exceeds it when the optimizer block is small (fp32 SGD: 8Φ of state, 24Φ of traffic).
std::uint64_t largest_multiple(const BytesPerParam& bpp) {
  return std::max<std::uint64_t>(bpp.total(), 2 * (2 * std::uint64_t(bpp.params) + bpp.grads));
}

}  // namespace

BytesPerParam bytes_per_param(Precision precision, Optimizer optimizer) {
  // Mixed precision keeps an fp32 master copy inside K; fp32 training updates the params
  // themselves, so K holds only the optimizer's own state.
  const bool mixed = precision != Precision::fp32;
  const std::uint32_t master = mixed ? 4 : 0;
  const std::uint32_t state = optimizer == Optimizer::adam           ? 8
                              : optimizer == Optimizer::sgd_momentum ? 4
                                                                     : 0;
  const std::uint32_t width = mixed ? 2 : 4;
  return {width, width, master + state};
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

std::string_view optimizer_name(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::adam:
      return "Adam";
    case Optimizer::sgd_momentum:
      return "SGD with momentum";
    case Optimizer::sgd:
      return "SGD";
  }
  return "?";
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
  const StageSplit split = stage_split(stage, bpp);
  // Rank 0 always holds a full shard, so its capacity is what every rank must allocate.
  const std::uint64_t shard = shard_of(params, ranks, 0).capacity;
  return split.replicated * params + split.sharded * shard;
}

std::uint64_t floor_bytes(std::uint64_t params, Stage stage, const BytesPerParam& bpp) {
  ZERODP_CHECK(u128(params) * largest_multiple(bpp) <= kMaxUint64);
  return stage_split(stage, bpp).replicated * params;
}

}  // namespace zerodp::plan
