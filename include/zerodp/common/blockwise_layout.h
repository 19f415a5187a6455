// Where one rank keeps 8-bit block-wise optimizer states (SlotFormat::int8_blockwise,
// zerodp/common/optimizers.h): the codes, the fp32 states of small tensors and the blocks'
// absmax, piece by piece in the order of its master. The engine allocates and steps by it
// (zerodp/optim/blockwise8.h computes each piece), and the peak prediction counts its sizes, so
// the two agree to the byte.
//
// Contract:
//  - Blocks belong to the model, never to a rank: every tensor of at least `min_quantized`
//    elements is cut into blocks of `block` elements from its own first element (its last block
//    may be shorter), and a smaller tensor keeps fp32 states, as bitsandbytes' optimizers do per
//    parameter tensor (block 256, min_8bit_size 4096). A block may straddle the chunks of several
//    ranks (partition.h cuts buckets where it must); its absmax is then the maximum over every
//    rank's part, which the ranks agree on with one all-gather of each chunk's two edge maxima, so
//    the states are the same bits at every stage, rank count and bucket size.
//  - A pure function of its arguments: every rank computes every rank's chunks itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "zerodp/common/partition.h"

namespace zerodp {

// One rank's share of the states, in the order its optimizer buffers hold the elements (the
// master's order: its chunk of every bucket, or every element when the states are whole).
struct Piece8 {
  std::size_t at = 0;      // first element in the rank's master
  std::size_t count = 0;   // elements
  std::uint64_t flat = 0;  // first element in the flat layout
  bool quantized = false;
  std::size_t store = 0;          // first element in the codes (quantized) or in the fp32 states
  std::size_t block = 0;          // quantized: the index of its block among the rank's blocks
  std::uint64_t block_first = 0;  // quantized: the block's first element in the flat layout
  std::uint32_t block_count = 0;  // quantized: the block's elements, on every rank together
  // Quantized, at the edge of a chunk and not its whole block: its slot among the rank's edge
  // values (2 a bucket: its chunk's first and last piece), whose maxima the ranks exchange;
  // -1 otherwise.
  int edge = -1;
  // Edge pieces: where the block's maxima come from, sources[src_begin, src_end) of the layout.
  std::size_t src_begin = 0, src_end = 0;
};

struct Layout8 {
  std::vector<Piece8> pieces;
  std::vector<std::size_t> bucket_pieces;  // pieces of bucket b: [bucket_pieces[b], [b + 1])
  std::size_t codes = 0;                   // quantized elements: one code each for m and v
  std::size_t fp32 = 0;                    // elements of tensors under min_quantized
  std::size_t blocks = 0;                  // blocks the rank holds a part of: one absmax each
  std::size_t edges = 0;                   // edge slots: 2 per bucket
  // Whether some block straddles the chunks of two ranks: then every rank takes part in the
  // exchange of edge maxima each step (the same answer on every rank).
  bool exchange = false;
  // The gathered edge slots each edge piece takes its block's maxima from (rank r's slot s at
  // r * edges + s; only this rank's own slots, r = 0, when there is no exchange).
  std::vector<std::size_t> sources;
};

// tensors: each tensor's elements in flat-layout order (they tile it). With whole = true the
// rank holds every element (unsharded states: its buffers follow the flat layout) and no
// exchange is needed; otherwise its chunk of every bucket of `part`, the other ranks' chunks
// being shard_of()'s.
Layout8 make_layout8(std::span<const std::uint64_t> tensors, const Partition& part, bool whole,
                     int ranks, int rank, std::uint32_t block, std::uint64_t min_quantized);

}  // namespace zerodp
