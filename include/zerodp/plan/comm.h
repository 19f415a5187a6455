// The planner's model of communication: bytes per rank per training step, in the two
// conventions of DESIGN.md, which are never mixed up (cell F of the seed).
//
//  seed  The seed's bookkeeping: a collective moves (N−1)/N of its payload per GPU. Stages
//        0, 1 and 2 all-reduce the gradients once, G·Φ(N−1)/N (2Φ(N−1)/N for 16-bit grads;
//        ZeRO-1/2 are counted as DP); stage 3 gathers the params twice and reduce-scatters
//        the grads, (2P+G)·Φ(N−1)/N (6Φ(N−1)/N). Ratio 3 by default. Counting what is sent
//        and what is received doubles both (the seed's "2.06 TB"). A formula, not a byte
//        count: the result is rounded to the nearest byte.
//  ring  The bytes one rank really sends with ring collectives over a flat buffer of Φ
//        elements: stage 0 all-reduces the grads (reduce-scatter + all-gather of G bytes
//        each); stages 1 and 2 reduce-scatter the grads (G) and all-gather the updated params
//        (P); stage 3 all-gathers the params twice (P) and reduce-scatters the grads (G).
//        4Φ(N−1)/N, 4Φ(N−1)/N, 4Φ(N−1)/N, 6Φ(N−1)/N with 16-bit params and grads: ratio 1.5,
//        the ZeRO paper's 2Ψ vs 3Ψ. This is the column the engine's byte counters must equal.
//
// The ring, exactly: the buffer is cut into N chunks by shard_of() (zerodp/common/shard.h), chunk c
// being rank c's shard; rank r sends only to rank r+1 (mod N), one chunk per step.
//  - reduce-scatter, N−1 steps: at step k rank r sends its partial sum of chunk (r−k−1) mod N;
//    rank r ends with chunk r fully reduced and has sent every chunk but its own.
//  - all-gather, N−1 steps: at step k rank r sends chunk (r−k) mod N, its own first, then each
//    chunk it has just received; it never sends chunk (r+1) mod N, which it receives last.
//  - all-reduce = reduce-scatter then all-gather.
// When N does not divide Φ the chunks differ (only trailing ranks are short), so ranks send
// slightly different amounts; ring_step_bytes() is the busiest rank's count, the one that
// bounds the step. An engine that communicates in buckets or per layer sends the same bytes
// when N divides every bucket, and within N elements per bucket otherwise.
//
// Pure integer functions. Preconditions: ranks >= 1, 0 <= rank < ranks, and Φ accepted by
// check_fits_in_64_bits() (zerodp/plan/memory.h), after which nothing here overflows.
#pragma once

#include <cstdint>
#include <span>

#include "zerodp/plan/frozen.h"
#include "zerodp/plan/memory.h"

namespace zerodp::plan {

enum class Collective { reduce_scatter, all_gather, all_reduce };

// Bytes rank `rank` sends in one ring collective over `elements` elements of `element_bytes`.
std::uint64_t ring_bytes_sent(Collective collective, std::uint64_t elements,
                              std::uint64_t element_bytes, int ranks, int rank);

// Bytes rank `rank` sends in one training step of `stage` (the ring column, per rank).
std::uint64_t ring_step_bytes(Stage stage, std::uint64_t params, const BytesPerParam& bpp,
                              int ranks, int rank);

// The busiest rank's ring_step_bytes(): the ring column of the planner. Constant time.
std::uint64_t ring_step_bytes(Stage stage, std::uint64_t params, const BytesPerParam& bpp,
                              int ranks);

enum class Directions { one, both };

// The seed column: bytes per GPU per step by the seed's formula, rounded to the nearest byte.
std::uint64_t seed_step_bytes(Stage stage, std::uint64_t params, const BytesPerParam& bpp,
                              int ranks, Directions directions = Directions::one);

// The same with a frozen base beside the Φ trained parameters (plan/frozen.h): ZeRO-3 gathers
// its shardable parts for the forward and again for the backward, ring or seed; below ZeRO-3 it
// sends nothing. Rounded once, over the whole step.
std::uint64_t ring_step_bytes(Stage stage, std::uint64_t params, const BytesPerParam& bpp,
                              int ranks, std::span<const FrozenPart> frozen);
std::uint64_t seed_step_bytes(Stage stage, std::uint64_t params, const BytesPerParam& bpp,
                              int ranks, Directions directions, std::span<const FrozenPart> frozen);

}  // namespace zerodp::plan
