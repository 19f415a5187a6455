#include "zerodp/common/factored_layout.h"

#include <algorithm>
#include <map>

#include "zerodp/common/error.h"

namespace zerodp {
namespace {

// The run of a tensor a chunk holds: [from, from + count) of the flat layout.
struct Run {
  std::size_t tensor;
  std::uint64_t from, count;
  std::size_t at;  // in the rank's master
};

// Rank r's runs, bucket by bucket (bucket_runs[b] is where bucket b's start).
struct Held {
  std::vector<Run> runs;
  std::vector<std::size_t> bucket_runs;
};

Held held_by(const std::vector<std::uint64_t>& first, const Partition& part, bool whole, int ranks,
             int r) {
  Held h;
  for (const Bucket& b : part.buckets) {
    h.bucket_runs.push_back(h.runs.size());
    std::uint64_t s = b.offset, e = b.offset + b.count;
    std::size_t at0 = b.offset;
    if (!whole) {
      const Shard sh = shard_of(b.count, ranks, r);
      s = b.offset + sh.offset, e = s + sh.size;
      at0 = b.local;  // this rank's: only read for r == rank
    }
    for (std::uint64_t x = s; x < e;) {
      const std::size_t t =
          std::size_t(std::upper_bound(first.begin(), first.end(), x) - first.begin()) - 1;
      const std::uint64_t n = std::min(e, first[t + 1]) - x;
      h.runs.push_back({t, x, n, at0 + std::size_t(x - s)});
      x += n;
    }
  }
  h.bucket_runs.push_back(h.runs.size());
  return h;
}

}  // namespace

FactoredLayout make_factored_layout(std::span<const TensorDims> tensors, const Partition& part,
                                    bool whole, int ranks, int rank) {
  ZERODP_CHECK(ranks >= 1 && rank >= 0 && rank < ranks);
  std::vector<std::uint64_t> first{0};
  for (const TensorDims& t : tensors) {
    ZERODP_CHECK_MSG(t.count >= 1 && (t.cols == 0 || t.count % t.cols == 0),
                     "a matrix's elements must be whole rows");
    first.push_back(first.back() + t.count);
  }
  ZERODP_CHECK_MSG(first.back() == part.total, "the tensors must tile the flat layout");
  const std::size_t T = tensors.size();
  auto sums_of = [&](std::size_t t) -> std::size_t {
    return tensors[t].cols == 0 ? 0
                                : std::size_t(tensors[t].count / tensors[t].cols + tensors[t].cols);
  };

  // Who holds what: every rank's runs when the states are sharded (a tensor is split when more
  // than one rank holds elements of it), this rank's alone when they are whole.
  std::vector<Held> held(whole ? 1 : std::size_t(ranks));
  std::vector<int> holders(T, 0);
  for (std::size_t q = 0; q < held.size(); ++q) {
    held[q] = held_by(first, part, whole, ranks, whole ? rank : int(q));
    std::vector<bool> seen(T, false);
    for (const Run& run : held[q].runs) {
      if (!seen[run.tensor]) seen[run.tensor] = true, ++holders[run.tensor];
    }
  }
  FactoredLayout layout;
  // Each rank's part of the exchanges: its split tensors in flat order.
  std::vector<std::map<std::size_t, std::pair<std::size_t, std::size_t>>> offsets(held.size());
  for (std::size_t q = 0; q < held.size(); ++q) {
    std::size_t sums = 0, sq = 0;
    std::vector<bool> seen(T, false);
    std::vector<std::size_t> mine;
    for (const Run& run : held[q].runs) {
      if (holders[run.tensor] > 1 && !seen[run.tensor])
        seen[run.tensor] = true, mine.push_back(run.tensor);
    }
    std::sort(mine.begin(), mine.end());
    for (std::size_t t : mine) {
      offsets[q][t] = {sums, sq};
      sums += sums_of(t), sq += 1;
    }
    layout.slab_sums = std::max(layout.slab_sums, sums);
    layout.slab_sq = std::max(layout.slab_sq, sq);
  }
  layout.exchange = layout.slab_sq > 0;

  // This rank's tensors, in flat order, and where each one's states, factors and sums go.
  const Held& own = held[whole ? 0 : std::size_t(rank)];
  std::vector<std::size_t> index(T, SIZE_MAX);
  std::vector<std::size_t> order;
  for (const Run& run : own.runs) {
    if (index[run.tensor] == SIZE_MAX) index[run.tensor] = 0, order.push_back(run.tensor);
  }
  std::sort(order.begin(), order.end());
  std::size_t whole_sums = layout.slab_sums, whole_sq = layout.slab_sq;
  for (std::size_t t : order) {
    FactoredTensor ft;
    ft.flat = first[t];
    ft.count = tensors[t].count;
    if (tensors[t].cols > 0) ft.cols = tensors[t].cols, ft.rows = ft.count / ft.cols;
    ft.split = holders[t] > 1;
    if (ft.matrix()) {
      ft.state = layout.states, layout.states += ft.rows + ft.cols;
      ft.factor = layout.factors, layout.factors += ft.rows + ft.cols;
    }
    if (ft.split) {
      const auto [sums, sq] = offsets[std::size_t(rank)].at(t);
      ft.sums = sums, ft.sq = sq;
      for (std::size_t q = 0; q < held.size(); ++q) {
        const auto it = offsets[q].find(t);
        if (it == offsets[q].end()) continue;
        ft.sums_from.emplace_back(int(q), it->second.first);
        ft.sq_from.emplace_back(int(q), it->second.second);
      }
    } else {
      ft.sums = whole_sums, ft.sq = whole_sq;
      whole_sums += sums_of(t), whole_sq += 1;
    }
    index[t] = layout.tensors.size();
    layout.tensors.push_back(std::move(ft));
  }
  layout.sums = whole_sums;
  layout.squares = whole_sq;

  for (std::size_t b = 0; b + 1 < own.bucket_runs.size(); ++b) {
    layout.bucket_pieces.push_back(layout.pieces.size());
    for (std::size_t i = own.bucket_runs[b]; i < own.bucket_runs[b + 1]; ++i) {
      const Run& run = own.runs[i];
      FactoredPiece p{.at = run.at,
                      .count = std::size_t(run.count),
                      .flat = run.from,
                      .tensor = index[run.tensor]};
      if (!layout.tensors[p.tensor].matrix()) p.store = layout.states, layout.states += p.count;
      layout.pieces.push_back(p);
    }
  }
  layout.bucket_pieces.push_back(layout.pieces.size());
  return layout;
}

}  // namespace zerodp
