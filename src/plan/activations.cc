#include "zerodp/plan/activations.h"

#include <limits>

#include "zerodp/common/error.h"

namespace zerodp::plan {
namespace {

using u128 = unsigned __int128;

// a * b, or nullopt past 64 bits (each factor is below 2^64, so the product fits 128 bits).
std::optional<u128> times(std::optional<u128> a, std::uint64_t b) {
  if (!a) return std::nullopt;
  const u128 product = *a * b;
  if (product > std::numeric_limits<std::uint64_t>::max()) return std::nullopt;
  return product;
}

}  // namespace

std::string_view checkpointing_name(Checkpointing checkpointing) {
  switch (checkpointing) {
    case Checkpointing::none:
      return "none";
    case Checkpointing::selective:
      return "selective";
    case Checkpointing::full:
      return "full";
  }
  return "?";
}

std::optional<std::uint64_t> activation_bytes(const TransformerShape& shape,
                                              Checkpointing checkpointing) {
  ZERODP_CHECK(shape.layers >= 1 && shape.hidden >= 1 && shape.heads >= 1 && shape.seq_len >= 1 &&
               shape.micro_batch >= 1);
  const auto sbh = times(times(u128(shape.seq_len), shape.micro_batch), shape.hidden);
  std::optional<u128> per_layer;
  switch (checkpointing) {
    case Checkpointing::full:
      per_layer = times(sbh, 2);
      break;
    case Checkpointing::selective:
      per_layer = times(sbh, 34);
      break;
    case Checkpointing::none: {
      const auto linear = times(sbh, 34);
      const auto attention =
          times(times(times(times(u128(5), shape.heads), shape.seq_len), shape.seq_len),
                shape.micro_batch);
      if (linear && attention) per_layer = times(*linear + *attention, 1);
      break;
    }
  }
  const auto total = times(per_layer, shape.layers);
  if (!total) return std::nullopt;
  return static_cast<std::uint64_t>(*total);
}

}  // namespace zerodp::plan
