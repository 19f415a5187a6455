// The weights a run does not train: LoRA's and QLoRA's frozen base, beside the trained
// parameters whose bytes plan/memory.h counts. A frozen weight has no gradient and no optimizer
// state: it is held as the working params P are, whole on every rank below ZeRO-3 and sharded
// at ZeRO-3 (DeepSpeed partitions every parameter, trained or not; FSDP flattens them), and
// ZeRO-3 gathers it for the forward and again for the backward, as it gathers P; below ZeRO-3
// nothing of it is ever sent (no gradient to reduce, no update to gather).
//
// A base is a list of parts, each a number of elements of some bytes: a 16-bit base is one
// part of 2-byte elements; an NF4 base (catalog/lora.h's nf4_base) its codes, in elements of
// the storage type, which ZeRO-3 and FSDP shard, and its quantization state (absmax, the
// tables), which stays whole on every rank at every stage, beside its 16-bit remainder.
//
// Contract: pure, exact integers. A sharded part is charged ceil(elements/N) elements a rank,
// as plan/memory.h charges every sharded state (shard_of()'s capacity). The 128-bit forms take
// any N; the 64-bit ones saturate at 2^64 − 1.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "zerodp/common/stage.h"

namespace zerodp::plan {

struct FrozenPart {
  std::string_view holds;      // "16-bit weights", "NF4 codes", "NF4 quantization state"
  std::uint64_t elements = 0;  // of `bytes` each
  std::uint32_t bytes = 2;
  bool shardable = true;  // false: whole on every rank at every stage
  bool operator==(const FrozenPart&) const = default;
};

// What FSDP gathers of a frozen base, unit by unit (a unit's flat parameter is all-gathered
// whole before it computes): the root unit's (embeddings, final norm, head) and the largest
// layer's. An NF4 layer's flat parameter holds its codes and its 16-bit remainder; the
// quantization state is no parameter and is never gathered.
struct FrozenUnits {
  std::uint64_t root_bytes = 0;
  std::uint64_t layer_bytes = 0;
  bool operator==(const FrozenUnits&) const = default;
};

// The bytes every rank holds of the parts at `stage` over `ranks` (>= 1).
unsigned __int128 frozen_bytes_wide(std::span<const FrozenPart> parts, unsigned __int128 ranks,
                                    Stage stage);
std::uint64_t frozen_bytes(std::span<const FrozenPart> parts, int ranks, Stage stage);
// As N → ∞: all of it below ZeRO-3, the unshardable parts at ZeRO-3.
std::uint64_t frozen_floor_bytes(std::span<const FrozenPart> parts, Stage stage);
// All the parts' bytes (N = 1).
std::uint64_t frozen_total_bytes(std::span<const FrozenPart> parts);
// The parts' elements: the frozen parameters, for a 16-bit base.
std::uint64_t frozen_elements(std::span<const FrozenPart> parts);

}  // namespace zerodp::plan
