// Activation memory of a transformer, the part of a GPU's memory that ZeRO does not shard
// (the seed's M_act, cell D): it adds to every stage alike.
//
// Contract: the per-layer formulas of Korthikanti et al. 2022, "Reducing Activation
// Recomputation in Large Transformer Models", table 2, with 16-bit activations and no tensor
// or sequence parallelism (t = 1); s = sequence length, b = micro-batch, h = hidden size,
// a = attention heads, L = layers:
//   no checkpointing:         s·b·h·(34 + 5·a·s/h) = 34·s·b·h + 5·a·s²·b bytes per layer
//   selective recomputation:  34·s·b·h bytes per layer (attention scores recomputed)
//   full checkpointing:       2·s·b·h bytes per layer (only each layer's input is kept)
// times L. Computed exactly in integers; the 5·a·s/h term needs no rounding in this form.
// Pure: safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace zerodp::plan {

struct TransformerShape {
  std::uint64_t layers = 0;       // L
  std::uint64_t hidden = 0;       // h
  std::uint64_t heads = 0;        // a
  std::uint64_t seq_len = 0;      // s
  std::uint64_t micro_batch = 0;  // b
};

enum class Checkpointing { none, selective, full };
std::string_view checkpointing_name(Checkpointing checkpointing);  // "none", "selective", "full"

// Activation bytes of one rank for one micro-batch, or nullopt when they do not fit in 64
// bits. All fields must be >= 1.
std::optional<std::uint64_t> activation_bytes(const TransformerShape& shape,
                                              Checkpointing checkpointing);

}  // namespace zerodp::plan
