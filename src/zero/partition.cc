#include "zero/partition.h"

#include <algorithm>

#include "zerodp/error.h"

namespace zerodp::zero {

Partition make_partition(const std::vector<model::UnitInfo>& units, std::size_t bucket_elems,
                         int ranks, int rank) {
  ZERODP_CHECK(bucket_elems >= 1);
  Partition part;
  part.unit_pieces.resize(units.size());
  for (std::size_t u = 0; u < units.size(); ++u) {
    const model::UnitInfo& unit = units[u];
    ZERODP_CHECK_MSG(unit.param_offset == part.total, "units must tile the flat layout in order");
    part.max_unit = std::max(part.max_unit, unit.param_count);
    for (std::size_t done = 0; done < unit.param_count; done += bucket_elems) {
      Piece p;
      p.unit = static_cast<int>(u);
      p.offset = unit.param_offset + done;
      p.count = std::min(bucket_elems, unit.param_count - done);
      p.shard = shard_of(p.count, ranks, rank);
      p.local = part.local_total;
      part.local_total += p.shard.size;
      part.max_piece = std::max(part.max_piece, p.count);
      part.max_chunk = std::max(part.max_chunk, p.shard.capacity);
      part.unit_pieces[u].push_back(static_cast<int>(part.pieces.size()));
      part.pieces.push_back(p);
    }
    part.total += unit.param_count;
  }
  return part;
}

}  // namespace zerodp::zero
