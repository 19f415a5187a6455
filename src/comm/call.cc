#include "comm/call.h"

#include "zerodp/common/shard.h"

namespace zerodp::comm {

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::all_reduce:
      return "all_reduce";
    case Collective::reduce_scatter:
      return "reduce_scatter";
    case Collective::all_gather:
      return "all_gather";
    case Collective::broadcast:
      return "broadcast";
    case Collective::barrier:
      return "barrier";
    case Collective::all_to_all:
      return "all_to_all";
  }
  return "unknown collective";
}

std::string describe(const Call& call) {
  std::string s(collective_name(call.kind));
  s += " #" + std::to_string(call.seq);
  if (call.kind == Collective::barrier) return s;
  s += " (" + std::to_string(call.count) + " x " + std::string(dtype_name(call.dtype));
  if (call.kind == Collective::broadcast) s += ", root " + std::to_string(call.root);
  return s + ")";
}

bool same_collective(const Call& a, const Call& b) {
  return a.kind == b.kind && a.count == b.count && a.dtype == b.dtype && a.root == b.root &&
         a.seq == b.seq;
}

std::string mismatch_message(const Call* calls, int ranks) {
  for (int r = 1; r < ranks; ++r) {
    if (!same_collective(calls[0], calls[r])) {
      return "collectives do not match: rank 0 called " + describe(calls[0]) + " but rank " +
             std::to_string(r) + " called " + describe(calls[r]);
    }
  }
  return "collectives match";
}

std::uint64_t ring_bytes_sent(const Call& call, int ranks, int rank) {
  const std::uint64_t elem = dtype_size(call.dtype);
  const std::uint64_t count = call.count;
  auto chunk = [&](int r) -> std::uint64_t { return shard_of(call.count, ranks, r).size; };
  const int next = (rank + 1) % ranks;
  switch (call.kind) {
    case Collective::reduce_scatter:
      return (count - chunk(rank)) * elem;
    case Collective::all_gather:
      return (count - chunk(next)) * elem;
    case Collective::all_reduce:
      return (2 * count - chunk(rank) - chunk(next)) * elem;
    case Collective::broadcast:
      // A pipelined chain from the root: every rank forwards the buffer to rank + 1, except
      // the one whose successor is the root.
      return next == call.root || ranks == 1 ? 0 : count * elem;
    case Collective::barrier:
      return 0;
    case Collective::all_to_all:
      return std::uint64_t(ranks - 1) * count * elem;
  }
  return 0;
}

}  // namespace zerodp::comm
