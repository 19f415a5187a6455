// The GPT tests' shared helpers: a config by its shape, and micro-batches of pseudo-random
// windows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zerodp/common/error.h"
#include "zerodp/common/rng.h"
#include "zerodp/model/gpt.h"

namespace zerodp::model::gpt_testing {

inline GptConfig config(int layers, int heads, int hidden, int seq_len) {
  GptConfig c;
  c.layers = layers;
  c.heads = heads;
  c.hidden = hidden;
  c.seq_len = seq_len;
  return c;
}

// Starts a micro-batch of B windows (T + 1 bytes each).
inline void begin_windows(GptModel& model, std::span<const std::uint8_t> windows, std::size_t B,
                          float grad_scale = 1.0f) {
  model.begin_micro_batch({.samples = B, .tokens = windows, .grad_scale = grad_scale});
}

// The UsageError a config's validate() throws, or "" when it is valid.
inline std::string usage_error_of(const GptConfig& c) {
  try {
    c.validate();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// B windows of T + 1 pseudo-random bytes.
inline std::vector<std::uint8_t> random_windows(std::size_t B, std::size_t T, std::uint64_t seed) {
  std::vector<std::uint8_t> w(B * (T + 1));
  for (std::size_t i = 0; i < w.size(); ++i) {
    w[i] = static_cast<std::uint8_t>(counter_hash(seed, 7, i) >> 56);
  }
  return w;
}

// Tensor t of unit u: elements [begin, end) of the flat layout (a tensor runs to the next one,
// the last to the unit's end).
struct TensorRange {
  std::size_t begin = 0, end = 0;
};
inline TensorRange tensor_range(const UnitInfo& u, std::size_t t) {
  return {u.param_offset + u.tensors[t].offset,
          u.param_offset + (t + 1 < u.tensors.size() ? u.tensors[t + 1].offset : u.param_count)};
}

}  // namespace zerodp::model::gpt_testing
