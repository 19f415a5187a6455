// Shared-memory collectives: every rank reads its peers' buffers directly.
//
// Chunks are c_0..c_{N-1} = shard_of(count, N, r). Once every rank has published its call
// (the arrival phase), rank r works on its own chunk c_r only:
//
//   reduce_scatter  out_r = sum over j in rank order of in_j[c_r]
//   all_gather      out_r[c_j] = in_j for every j (a copy of each peer's chunk)
//   all_reduce      s = sum over j in rank order of data_j[c_r], written to data_j[c_r] for
//                   every j: one pass that reads each input once and writes each output once.
//                   Rank r alone reads and writes c_r of any buffer, so no rank races another,
//                   and the result has the bits of reduce_scatter followed by all_gather.
//   broadcast       data_r = data_root on every other rank
//   barrier         nothing: the arrival phase is the barrier
//
// The sums run through sum_in_rank_order() in cache-sized blocks. A collective that reads a
// peer's buffer closes with a departure phase, so that no rank returns (and lets its caller
// reuse the buffer) while a peer may still read or write it.
//
// Bytes: the copies here move (N-1) * count elements per reduce-scatter or all-gather summed
// over ranks, as a ring does, though not in ring order. Each copy between two ranks' buffers
// is counted where it happens, for both (zerodp/comm/communicator.h, "Counted bytes").
#include "comm/threads/collectives.h"

#include <algorithm>

#include <vector>

#include "comm/copy.h"
#include "comm/sum.h"
#include "zerodp/common/shard.h"

namespace zerodp::comm::threads {
namespace {

constexpr int kMaxInline = 16;  // ranks whose pointers fit on the stack

char* at(void* p, std::size_t elements, DType dtype) {
  return static_cast<char*>(p) + bytes_of(elements, dtype);
}
const char* at(const void* p, std::size_t elements, DType dtype) {
  return static_cast<const char*>(p) + bytes_of(elements, dtype);
}

// Pointer arrays of N entries without a heap allocation for the usual N.
template <class T>
class Pointers {
 public:
  explicit Pointers(int n) {
    if (n > kMaxInline) heap_.resize(n);
  }
  T* data() { return heap_.empty() ? inline_ : heap_.data(); }
  T& operator[](int i) { return data()[i]; }

 private:
  T inline_[kMaxInline] = {};
  std::vector<T> heap_;
};

void reduce_scatter(const Group& g, int rank, std::uint64_t seq) {
  const Call& call = g.call(rank, seq);
  const int n = g.size();
  const Shard c = shard_of(call.count, n, rank);
  if (c.size == 0) return;
  Pointers<const void*> inputs(n);
  for (int j = 0; j < n; ++j) inputs[j] = at(g.call(j, seq).in, c.offset, call.dtype);
  void* out = call.out;
  sum_in_rank_order(call.dtype, inputs.data(), n, &out, 1, c.size);
  // Read c_r of every peer's input.
  const std::uint64_t chunk = bytes_of(c.size, call.dtype);
  for (int j = 0; j < n; ++j) {
    if (j != rank) g.moved(j).count(call.kind, chunk, 0);
  }
  g.moved(rank).count(call.kind, 0, chunk * std::uint64_t(n - 1));
}

void all_reduce(const Group& g, int rank, std::uint64_t seq) {
  const Call& call = g.call(rank, seq);
  const int n = g.size();
  const Shard c = shard_of(call.count, n, rank);
  if (c.size == 0) return;
  Pointers<const void*> inputs(n);
  Pointers<void*> outputs(n);
  // Own buffer first among the outputs: the copies to peers then read a block just written.
  for (int j = 0; j < n; ++j) {
    inputs[j] = at(g.call(j, seq).out, c.offset, call.dtype);
    outputs[j] = at(g.call((rank + j) % n, seq).out, c.offset, call.dtype);
  }
  sum_in_rank_order(call.dtype, inputs.data(), n, outputs.data(), n, c.size);
  // Read c_r of every peer's buffer, and wrote the sum back into it.
  const std::uint64_t chunk = bytes_of(c.size, call.dtype);
  for (int j = 0; j < n; ++j) {
    if (j != rank) g.moved(j).count(call.kind, chunk, chunk);
  }
  g.moved(rank).count(call.kind, chunk * std::uint64_t(n - 1), chunk * std::uint64_t(n - 1));
}

void all_gather(const Group& g, int rank, std::uint64_t seq) {
  const Call& call = g.call(rank, seq);
  const int n = g.size();
  // Peers in ring order from this rank, so that ranks start on different sources.
  for (int s = 0; s < n; ++s) {
    const int j = (rank + s) % n;
    const Shard c = shard_of(call.count, n, j);
    void* dst = at(call.out, c.offset, call.dtype);
    const void* src = g.call(j, seq).in;
    if (c.size > 0 && dst != src) copy(dst, src, bytes_of(c.size, call.dtype));
    if (j != rank) {  // a copy within this rank's own buffers moves nothing between ranks
      g.moved(j).count(call.kind, bytes_of(c.size, call.dtype), 0);
      g.moved(rank).count(call.kind, 0, bytes_of(c.size, call.dtype));
    }
  }
}

void all_to_all(const Group& g, int rank, std::uint64_t seq) {
  const Call& call = g.call(rank, seq);
  const int n = g.size();
  const std::size_t block = bytes_of(call.count, call.dtype);
  // Block `rank` of every peer's input, in ring order from this rank.
  for (int s = 0; s < n; ++s) {
    const int j = (rank + s) % n;
    const char* src = static_cast<const char*>(g.call(j, seq).in) + std::size_t(rank) * block;
    if (block > 0) copy(at(call.out, std::size_t(j) * call.count, call.dtype), src, block);
    if (j != rank) {
      g.moved(j).count(call.kind, block, 0);
      g.moved(rank).count(call.kind, 0, block);
    }
  }
}

void broadcast(const Group& g, int rank, std::uint64_t seq) {
  const Call& call = g.call(rank, seq);
  if (rank == call.root || call.count == 0) return;
  copy(call.out, g.call(call.root, seq).out, bytes_of(call.count, call.dtype));
  g.moved(call.root).count(call.kind, bytes_of(call.count, call.dtype), 0);
  g.moved(rank).count(call.kind, 0, bytes_of(call.count, call.dtype));
}

// A byte range one rank touches in a collective.
struct Range {
  const char* begin;
  const char* end;
  bool written;
};

bool overlap(const Range& a, const Range& b) {
  return a.begin < b.end && b.begin < a.end;
}

std::vector<Range> ranges_of(const Group& g, int rank, std::uint64_t seq) {
  const Call& call = g.call(rank, seq);
  const Shard c = shard_of(call.count, g.size(), rank);
  const std::size_t full = bytes_of(call.count, call.dtype);
  const std::size_t own = bytes_of(c.size, call.dtype);
  auto range = [](const void* p, std::size_t bytes, bool written) {
    const char* b = static_cast<const char*>(p);
    return Range{b, b + bytes, written};
  };
  switch (call.kind) {
    case Collective::all_reduce:
      return {range(call.out, full, true)};
    case Collective::reduce_scatter:
      return {range(call.in, full, false), range(call.out, own, true)};
    case Collective::all_gather:
      return {range(call.in, own, false), range(call.out, full, true)};
    case Collective::broadcast:
      return {range(call.out, full, rank != call.root)};
    case Collective::barrier:
      return {};
    case Collective::all_to_all:
      return {range(call.in, g.size() * full, false), range(call.out, g.size() * full, true)};
  }
  return {};
}

}  // namespace

namespace {

// Within a rank: out may be exactly in + chunk offset (reduce_scatter), in exactly out + chunk
// offset (all_gather), or apart; any other overlap of the two is a violation.
bool overlaps_itself(const Group& g, int rank, std::uint64_t seq, const std::vector<Range>& own) {
  const Call& call = g.call(rank, seq);
  if (call.kind == Collective::all_to_all) {
    return own[0].begin != own[0].end && overlap(own[0], own[1]);  // no aliasing at all
  }
  if (call.kind != Collective::reduce_scatter && call.kind != Collective::all_gather) return false;
  const Range& in = own[0];
  const Range& out = own[1];
  const std::size_t offset = bytes_of(shard_of(call.count, g.size(), rank).offset, call.dtype);
  const bool aliased = call.kind == Collective::reduce_scatter ? out.begin == in.begin + offset
                                                               : in.begin == out.begin + offset;
  return in.begin != in.end && out.begin != out.end && overlap(in, out) && !aliased;
}

// The first violation in rank order, as the message names it: O(N^2) pairs, run only once a
// violation is known to exist.
std::string first_violation(const Group& g, std::uint64_t seq,
                            const std::vector<std::vector<Range>>& ranges) {
  const int n = g.size();
  for (int r = 0; r < n; ++r) {
    const Call& call = g.call(r, seq);
    if (overlaps_itself(g, r, seq, ranges[r])) {
      return "rank " + std::to_string(r) + " passed overlapping in and out buffers to " +
             describe(call) +
             (call.kind == Collective::all_to_all
                  ? " (they must be apart)"
                  : " (out may only alias in + its chunk offset, or be apart)");
    }
    // Across ranks: nothing one rank writes may be touched by another.
    for (int q = r + 1; q < n; ++q) {
      for (const Range& a : ranges[r]) {
        for (const Range& b : ranges[q]) {
          if ((a.written || b.written) && a.begin != a.end && b.begin != b.end && overlap(a, b)) {
            return "ranks " + std::to_string(r) + " and " + std::to_string(q) +
                   " passed overlapping buffers to " + describe(call) +
                   " (each rank needs buffers of its own)";
          }
        }
      }
    }
  }
  return {};
}

// The largest end among ranges seen so far, and the largest among those of any other rank:
// enough to know whether a range overlaps an earlier one of a rank other than its own.
struct Reach {
  const char* end[2] = {nullptr, nullptr};
  int rank[2] = {-1, -1};
  void add(const char* e, int r) {
    if (r == rank[0]) {
      end[0] = std::max(end[0], e);
    } else if (e > end[0]) {
      end[1] = end[0], rank[1] = rank[0];
      end[0] = e, rank[0] = r;
    } else if (e > end[1]) {
      end[1] = e, rank[1] = r;
    }
  }
  // How far ranges of ranks other than r reach.
  const char* beyond(int r) const { return rank[0] != r ? end[0] : end[1]; }
};

}  // namespace

std::string check_buffers(const Group& g, std::uint64_t seq) {
  // A sweep over the ranges sorted by start, O(N log N): with a thousand ranks the pairwise
  // check was most of a step's time. Non-empty ranges only: an empty one touches nothing.
  const int n = g.size();
  std::vector<std::vector<Range>> ranges(n);
  struct Tagged {
    Range range;
    int rank;
  };
  std::vector<Tagged> all;
  bool bad = false;
  for (int r = 0; r < n; ++r) {
    ranges[r] = ranges_of(g, r, seq);
    bad |= overlaps_itself(g, r, seq, ranges[r]);
    for (const Range& x : ranges[r]) {
      if (x.begin != x.end) all.push_back({x, r});
    }
  }
  std::sort(all.begin(), all.end(),
            [](const Tagged& a, const Tagged& b) { return a.range.begin < b.range.begin; });
  Reach any, written;
  for (std::size_t i = 0; i < all.size() && !bad; ++i) {
    const Tagged& t = all[i];
    // An earlier range overlaps this one exactly when it ends past this one's start.
    const char* reach = t.range.written ? any.beyond(t.rank) : written.beyond(t.rank);
    bad = reach != nullptr && reach > t.range.begin;
    any.add(t.range.end, t.rank);
    if (t.range.written) written.add(t.range.end, t.rank);
  }
  return bad ? first_violation(g, seq, ranges) : std::string();
}

bool run_collective(const Group& g, int rank, std::uint64_t seq) {
  switch (g.call(rank, seq).kind) {
    case Collective::all_reduce:
      all_reduce(g, rank, seq);
      return true;
    case Collective::reduce_scatter:
      reduce_scatter(g, rank, seq);
      return true;
    case Collective::all_gather:
      all_gather(g, rank, seq);
      return true;
    case Collective::broadcast:
      broadcast(g, rank, seq);
      return true;
    case Collective::all_to_all:
      all_to_all(g, rank, seq);
      return true;
    case Collective::barrier:
      return false;
  }
  return false;
}

}  // namespace zerodp::comm::threads
