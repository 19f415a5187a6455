#include "zero/partition.h"

#include <algorithm>

#include "zerodp/error.h"

namespace zerodp::zero {

Partition make_partition(const std::vector<model::UnitInfo>& units, std::size_t bucket_elems,
                         int ranks, int rank) {
  ZERODP_CHECK(bucket_elems >= 1);
  Partition part;
  part.unit_buckets.resize(units.size());
  for (std::size_t u = 0; u < units.size(); ++u) {
    const model::UnitInfo& unit = units[u];
    ZERODP_CHECK_MSG(unit.param_offset == part.total, "units must tile the flat layout in order");
    part.max_unit = std::max(part.max_unit, unit.param_count);
    for (std::size_t done = 0; done < unit.param_count; done += bucket_elems) {
      Bucket b;
      b.unit = static_cast<int>(u);
      b.offset = unit.param_offset + done;
      b.count = std::min(bucket_elems, unit.param_count - done);
      b.shard = shard_of(b.count, ranks, rank);
      b.local = part.local_total;
      part.local_total += b.shard.size;
      part.max_bucket = std::max(part.max_bucket, b.count);
      part.max_chunk = std::max(part.max_chunk, b.shard.capacity);
      part.unit_buckets[u].push_back(static_cast<int>(part.buckets.size()));
      part.buckets.push_back(b);
    }
    part.total += unit.param_count;
  }
  return part;
}

}  // namespace zerodp::zero
