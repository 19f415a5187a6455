#include "zerodp/common/blockwise_layout.h"

#include <algorithm>
#include <map>
#include <set>

#include "zerodp/common/error.h"

namespace zerodp {
namespace {

// The tensors' first elements, and what cuts them into blocks.
struct Tensors {
  std::vector<std::uint64_t> first;  // each tensor's first element; one past the last at the end
  std::uint32_t block;
  std::uint64_t min_quantized;

  // The tensor holding flat element x.
  std::size_t of(std::uint64_t x) const {
    return std::size_t(std::upper_bound(first.begin(), first.end(), x) - first.begin()) - 1;
  }
  bool quantized(std::size_t t) const { return first[t + 1] - first[t] >= min_quantized; }
  // The block holding x, in a quantized tensor t: its first element and its size.
  std::pair<std::uint64_t, std::uint64_t> block_of(std::size_t t, std::uint64_t x) const {
    const std::uint64_t begin = first[t] + (x - first[t]) / block * block;
    return {begin, std::min<std::uint64_t>(block, first[t + 1] - begin)};
  }
};

// A chunk [s, e)'s edge slots that need other parts of their block: the block of its first
// element when the chunk does not hold all of it (slot 0), and that of its last element when it
// is another block the chunk does not hold whole (slot 1). Calls add(block_first, slot).
template <typename Add>
void edge_blocks(const Tensors& ts, std::uint64_t s, std::uint64_t e, Add add) {
  if (s >= e) return;
  std::uint64_t first_block = UINT64_MAX;
  const std::size_t t0 = ts.of(s);
  if (ts.quantized(t0)) {
    const auto [b, n] = ts.block_of(t0, s);
    first_block = b;
    if (b < s || b + n > e) add(b, 0);
  }
  const std::size_t t1 = ts.of(e - 1);
  if (ts.quantized(t1)) {
    const auto [b, n] = ts.block_of(t1, e - 1);
    if (b != first_block && (b < s || b + n > e)) add(b, 1);
  }
}

}  // namespace

Layout8 make_layout8(std::span<const std::uint64_t> tensors, const Partition& part, bool whole,
                     int ranks, int rank, std::uint32_t block, std::uint64_t min_quantized) {
  ZERODP_CHECK(block >= 1 && ranks >= 1 && rank >= 0 && rank < ranks);
  Tensors ts{.first = {0}, .block = block, .min_quantized = min_quantized};
  for (std::uint64_t n : tensors) ts.first.push_back(ts.first.back() + n);
  ZERODP_CHECK_MSG(ts.first.back() == part.total, "the tensors must tile the flat layout");

  Layout8 layout;
  layout.edges = 2 * part.buckets.size();
  // The chunk a rank updates of a bucket: all of it when the states are whole.
  auto chunk_of = [&](const Bucket& b, int r) -> std::pair<std::uint64_t, std::uint64_t> {
    if (whole) return {b.offset, b.offset + b.count};
    const Shard sh = shard_of(b.count, ranks, r);
    return {b.offset + sh.offset, b.offset + sh.offset + sh.size};
  };

  // Every edge slot that needs another part of its block, by block: with whole states only this
  // rank's own (it holds every part), else every rank's.
  std::map<std::uint64_t, std::vector<std::size_t>> by_block;
  std::map<std::uint64_t, std::set<int>> ranks_of_block;
  const int first_rank = whole ? rank : 0, last_rank = whole ? rank : ranks - 1;
  for (int r = first_rank; r <= last_rank; ++r) {
    for (std::size_t b = 0; b < part.buckets.size(); ++b) {
      const auto [s, e] = chunk_of(part.buckets[b], r);
      edge_blocks(ts, s, e, [&](std::uint64_t block_first, int slot) {
        const std::size_t from = whole ? 0 : std::size_t(r);
        by_block[block_first].push_back(from * layout.edges + 2 * b + slot);
        ranks_of_block[block_first].insert(r);
      });
    }
  }
  for (const auto& [block_first, rs] : ranks_of_block) layout.exchange |= rs.size() > 1;

  std::uint64_t last_block = UINT64_MAX;
  for (std::size_t b = 0; b < part.buckets.size(); ++b) {
    layout.bucket_pieces.push_back(layout.pieces.size());
    const Bucket& bucket = part.buckets[b];
    const auto [s, e] = chunk_of(bucket, rank);
    const std::size_t at0 = whole ? bucket.offset : bucket.local;
    std::uint64_t x = s;
    while (x < e) {
      Piece8 p;
      p.at = at0 + (x - s);
      p.flat = x;
      const std::size_t t = ts.of(x);
      if (!ts.quantized(t)) {
        p.count = std::min(e, ts.first[t + 1]) - x;
        p.store = layout.fp32;
        layout.fp32 += p.count;
      } else {
        const auto [first, n] = ts.block_of(t, x);
        p.quantized = true;
        p.count = std::min(e, first + n) - x;
        p.store = layout.codes;
        layout.codes += p.count;
        p.block_first = first;
        p.block_count = std::uint32_t(n);
        if (first != last_block) ++layout.blocks, last_block = first;
        p.block = layout.blocks - 1;
        if (first < x || first + n > x + p.count) {
          p.edge = int(2 * b + (x == s ? 0 : 1));
          // Without an exchange every part of the block is this rank's: its own slots, from 0.
          const std::size_t own = layout.exchange || whole ? 0 : std::size_t(rank) * layout.edges;
          p.src_begin = layout.sources.size();
          for (std::size_t i : by_block.at(first)) layout.sources.push_back(i - own);
          p.src_end = layout.sources.size();
        }
      }
      layout.pieces.push_back(p);
      x += p.count;
    }
  }
  layout.bucket_pieces.push_back(layout.pieces.size());
  return layout;
}

}  // namespace zerodp
