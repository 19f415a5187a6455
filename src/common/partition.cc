#include "zerodp/common/partition.h"

#include <algorithm>

#include "zerodp/common/error.h"

namespace zerodp {

std::size_t bucket_elements(std::uint64_t bucket_bytes) {
  ZERODP_CHECK_MSG(bucket_bytes >= 2, "a bucket holds at least one 16-bit element");
  return static_cast<std::size_t>(bucket_bytes / 2);
}

Partition make_partition(std::span<const std::size_t> unit_counts, std::size_t bucket_elems,
                         int ranks, int rank) {
  ZERODP_CHECK(bucket_elems >= 1);
  Partition part;
  part.unit_buckets.resize(unit_counts.size());
  for (std::size_t u = 0; u < unit_counts.size(); ++u) {
    const std::size_t unit_offset = part.total, count = unit_counts[u];
    part.max_unit = std::max(part.max_unit, count);
    for (std::size_t done = 0; done < count; done += bucket_elems) {
      Bucket b;
      b.unit = static_cast<int>(u);
      b.offset = unit_offset + done;
      b.count = std::min(bucket_elems, count - done);
      b.shard = shard_of(b.count, ranks, rank);
      b.local = part.local_total;
      part.local_total += b.shard.size;
      part.max_bucket = std::max(part.max_bucket, b.count);
      part.max_chunk = std::max<std::size_t>(part.max_chunk, b.shard.capacity);
      part.unit_buckets[u].push_back(static_cast<int>(part.buckets.size()));
      part.buckets.push_back(b);
    }
    part.total += count;
  }
  return part;
}

}  // namespace zerodp
