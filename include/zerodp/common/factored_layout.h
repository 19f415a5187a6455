// Where one rank keeps Adafactor's factored second moment (StateSlot::factored,
// zerodp/common/optimizers.h) and which partial sums it exchanges each step. The engine allocates
// and steps by it (zerodp/optim/adafactor.h computes each piece) and the peak prediction counts
// its sizes, so the two agree to the byte.
//
// Contract:
//  - A matrix (a tensor with a column count) keeps its rows' and columns' states, R + C fp32, on
//    every rank that holds any element of it: each such rank updates them from the same exact
//    sums, so they are the same bits on every one. A vector keeps one fp32 an element, where the
//    element is.
//  - A tensor whose elements lie on several ranks' chunks is split: each step its holders
//    exchange their partial sums (a matrix's rows and columns, then every split tensor's Σ u²)
//    in two all-gathers of ExactSums, each rank's part padded to the largest rank's. Summed
//    exactly, the whole sums are the same whatever the partition: the states and params are the
//    same bits at every stage, rank count and bucket size. Without split tensors (one rank, or
//    unsharded states) nothing is exchanged, and every rank knows it from the partition alone.
//  - A pure function of its arguments: every rank computes every rank's chunks itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "zerodp/common/partition.h"

namespace zerodp {

// A tensor in flat-layout order: its elements and, for a matrix, its column count (row-major,
// count / cols rows); 0 for a vector.
struct TensorDims {
  std::uint64_t count = 0;
  std::uint64_t cols = 0;
};

// A tensor this rank holds elements of.
struct FactoredTensor {
  std::uint64_t flat = 0, count = 0;
  std::uint64_t rows = 0, cols = 0;  // a matrix's; 0 and 0 for a vector
  bool matrix() const { return cols > 0; }
  bool split = false;      // other ranks hold the rest of it
  std::size_t state = 0;   // a matrix's R row states and then C column states, in the states
  std::size_t factor = 0;  // a matrix's R row factors and then C column factors
  std::size_t sums = 0;    // a matrix's R rows' and then C columns' sums of g2, in the sums
  std::size_t sq = 0;      // its Σ u², in the squares
  // A split tensor's holders (this rank among them) and where each one's partial sums sit in
  // its part of the two exchanges: rank q's sums at q * slab_sums + offset, its Σ u² at
  // q * slab_sq + offset.
  std::vector<std::pair<int, std::size_t>> sums_from, sq_from;
};

// A run of consecutive elements of one tensor, in the order of the rank's master.
struct FactoredPiece {
  std::size_t at = 0;      // first element in the rank's master
  std::size_t count = 0;   // elements
  std::uint64_t flat = 0;  // first element in the flat layout
  std::size_t tensor = 0;  // index into FactoredLayout::tensors
  std::size_t store = 0;   // a vector's: its first element's v in the states
};

struct FactoredLayout {
  std::vector<FactoredTensor> tensors;     // flat-layout order
  std::vector<FactoredPiece> pieces;       // the master's order
  std::vector<std::size_t> bucket_pieces;  // pieces of bucket b: [bucket_pieces[b], [b + 1])
  std::size_t states = 0;                  // fp32: matrices' R + C, vectors' held elements
  std::size_t factors = 0;                 // fp32: matrices' R + C
  // ExactSums: this rank's part of an exchange first (slab_sums, slab_sq: the largest rank's
  // split tensors, so every rank's part is as long), then those of the tensors it holds whole.
  std::size_t sums = 0, squares = 0;
  std::size_t slab_sums = 0, slab_sq = 0;
  bool exchange = false;  // some tensor is split (the same answer on every rank)
};

// tensors tile the flat layout. With whole = true the rank holds every element (unsharded
// states: its master follows the flat layout); otherwise its chunk of every bucket of `part`,
// the other ranks' chunks being shard_of()'s.
FactoredLayout make_factored_layout(std::span<const TensorDims> tensors, const Partition& part,
                                    bool whole, int ranks, int rank);

}  // namespace zerodp
