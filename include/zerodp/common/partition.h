// How the flat parameter layout is cut for communication and sharding: the one partition of
// the engine and of the planner's peak prediction.
//
// Each unit (a contiguous slice of the layout, in order) is cut into buckets of at most
// `bucket_elems` elements; a bucket is what one collective moves (the DDP/ZeRO sense), and it
// is sharded over the ranks with shard_of(). The partition depends on the units, the bucket
// size and N only — never on the stage — so every stage reduces, clips and updates the same
// elements in the same order, which is what makes stages 0-3 bitwise identical.
//
// A rank's shard of the whole model is the concatenation of its chunks of every bucket, in
// bucket order: bucket b's chunk sits at local index `local` of the rank's shard buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "zerodp/common/shard.h"

namespace zerodp {

struct Bucket {
  int unit = 0;
  std::size_t offset = 0;  // first element in the flat layout
  std::size_t count = 0;
  Shard shard;            // this rank's chunk, relative to offset
  std::size_t local = 0;  // where the chunk sits in this rank's shard buffers
};

struct Partition {
  std::vector<Bucket> buckets;
  std::vector<std::vector<int>> unit_buckets;  // bucket indices of each unit, in order
  std::size_t total = 0;                       // elements in the flat layout
  std::size_t local_total = 0;                 // elements of this rank's shard
  std::size_t max_unit = 0;                    // elements of the largest unit
  std::size_t max_bucket = 0;
  std::size_t max_chunk = 0;  // largest chunk of any bucket (capacity)
};

// The elements of a bucket of `bucket_bytes`: a bucket's size is counted in 16-bit elements
// (EngineOptions::bucket_bytes, predict::EngineRun::bucket_bytes), whatever the precision of the
// fp32 copies beside it. Requires bucket_bytes >= 2 (one element).
std::size_t bucket_elements(std::uint64_t bucket_bytes);

// unit_counts: the elements of each unit, in layout order. Requires bucket_elems >= 1,
// ranks >= 1 and 0 <= rank < ranks.
Partition make_partition(std::span<const std::size_t> unit_counts, std::size_t bucket_elems,
                         int ranks, int rank);

}  // namespace zerodp
