// zero::Engine's step for Adafactor (a factored second moment, StateSlot::factored): where a rank
// keeps the states (zerodp/common/factored_layout.h), and how the ranks holding parts of a tensor
// agree on its rows', columns' and update's sums before they step it (zerodp/optim/adafactor.h
// computes each piece).
#include <algorithm>
#include <string>

#include "zero/engine_impl.h"
#include "zerodp/common/dtype.h"
#include "zerodp/common/error.h"

namespace zerodp::zero {
namespace {

// Gradients are turned into fp32 this many elements at a time.
constexpr std::size_t kFactoredPart = 1024;

// Adafactor factors a tensor of two dimensions; one of one dimension, or of shape (1, C) (whose
// factored step is the unfactored step, bit for bit), keeps a value an element. Others, which
// the published algorithm would treat otherwise, are refused.
void check_factored_shapes(const std::vector<model::UnitInfo>& units) {
  for (const model::UnitInfo& u : units) {
    for (const model::TensorInfo& t : u.tensors) {
      const std::vector<std::size_t>& d = t.shape;
      if (d.size() > 2 || (d.size() == 2 && d[0] >= 2 && d[1] < 2)) {
        throw Error("adafactor: the engine factors matrices of at least 2 columns; tensor " +
                    t.name + " has " + std::to_string(d.size()) + " dimensions or one column");
      }
    }
  }
}

}  // namespace

std::vector<TensorDims> flat_tensors(const std::vector<model::UnitInfo>& units) {
  std::vector<TensorDims> dims;
  for (const model::UnitInfo& u : units) {
    std::vector<const model::TensorInfo*> tensors;
    for (const model::TensorInfo& t : u.tensors) tensors.push_back(&t);
    std::sort(tensors.begin(), tensors.end(),
              [](const auto* a, const auto* b) { return a->offset < b->offset; });
    std::size_t at = 0;
    for (const model::TensorInfo* t : tensors) {
      std::size_t n = 1;
      for (std::size_t d : t->shape) n *= d;
      ZERODP_CHECK_MSG(t->offset >= at && t->offset + n <= u.param_count,
                       "a unit's tensors must not overlap or leave the unit");
      if (t->offset > at) dims.push_back({t->offset - at, 0});
      at = t->offset + n;
      if (n == 0) continue;
      const bool matrix = t->shape.size() == 2 && t->shape[0] >= 2 && t->shape[1] >= 2;
      dims.push_back({n, matrix ? t->shape[1] : 0});
    }
    if (at < u.param_count) dims.push_back({u.param_count - at, 0});
  }
  return dims;
}

void Engine::Impl::allocate_factored() {
  ZERODP_CHECK(rule.row->slots.size() == 1);
  check_factored_shapes(units);
  layoutf = make_factored_layout(flat_tensors(units), part, full_optimizer(), ranks, rank);
  const FactoredLayout& l = *layoutf;
  factored_states = Buffer<float>(ledger, Category::optim_v, l.states);
  factors = Buffer<float>(ledger, Category::scratch32, l.factors);
  sums = Buffer<optim::ExactSum>(ledger, Category::scratch32, l.sums);
  squares = Buffer<optim::ExactSum>(ledger, Category::scratch32, l.squares);
  divisors = Buffer<float>(ledger, Category::scratch32, l.tensors.size());
  if (l.exchange) {
    all_sums = Buffer<optim::ExactSum>(ledger, Category::scratch32, l.slab_sums * ranks);
    all_squares = Buffer<optim::ExactSum>(ledger, Category::scratch32, l.slab_sq * ranks);
  }
}

void Engine::Impl::exchange_sums(optim::ExactSum* own, Buffer<optim::ExactSum>& all,
                                 std::size_t slab, bool squares_of) {
  const FactoredLayout& l = *layoutf;
  if (!l.exchange || slab == 0) return;
  comm.all_gather(own, all.data(), slab * std::size_t(ranks) * sizeof(optim::ExactSum), DType::u8);
  for (const FactoredTensor& ft : l.tensors) {
    if (!ft.split || (!squares_of && !ft.matrix())) continue;
    const std::size_t n = squares_of ? 1 : std::size_t(ft.rows + ft.cols);
    const std::size_t at = squares_of ? ft.sq : ft.sums;
    const auto& from = squares_of ? ft.sq_from : ft.sums_from;
    std::fill_n(own + at, n, optim::ExactSum{});
    for (const auto& [q, offset] : from) {
      const optim::ExactSum* part = all.data() + std::size_t(q) * slab + offset;
      for (std::size_t k = 0; k < n; ++k) own[at + k].merge(part[k]);
    }
  }
}

void Engine::Impl::update_factored(float lr, float grad_mul) {
  const FactoredLayout& l = *layoutf;
  const optim::AdafactorDecay decay = optim::adafactor_decay(t);
  // Each piece's gradients, part by part, in fp32: fn(piece, first element of the part, grads).
  auto for_each_part = [&](auto&& fn) {
    for (std::size_t b = 0; b < part.buckets.size(); ++b) {
      const std::size_t first = update_first(part.buckets[b]);
      const std::uint16_t* g = update_grads(part.buckets[b]);
      for (std::size_t i = l.bucket_pieces[b]; i < l.bucket_pieces[b + 1]; ++i) {
        const FactoredPiece& p = l.pieces[i];
        for (std::size_t done = 0; done < p.count; done += kFactoredPart) {
          const std::size_t len = std::min(kFactoredPart, p.count - done);
          float grad[kFactoredPart];
          half_to_float(opt.precision, g + (p.at - first) + done, grad, len);
          fn(p, done, std::span<const float>(grad, len));
        }
      }
    }
  };

  // 1. Every matrix's rows' and columns' sums of g², this rank's part; then whole.
  std::fill_n(sums.data(), sums.size(), optim::ExactSum{});
  for_each_part([&](const FactoredPiece& p, std::size_t done, std::span<const float> grad) {
    const FactoredTensor& ft = l.tensors[p.tensor];
    if (!ft.matrix()) return;
    optim::adafactor_accumulate(grad.data(), grad.size(), grad_mul, p.flat + done - ft.flat,
                                ft.cols, sums.data() + ft.sums, sums.data() + ft.sums + ft.rows);
  });
  exchange_sums(sums.data(), all_sums, l.slab_sums, false);
  // 2. Every matrix's states and factors, the same bits on every rank that holds part of it.
  for (const FactoredTensor& ft : l.tensors) {
    if (!ft.matrix()) continue;
    float* state = factored_states.data() + ft.state;
    float* factor = factors.data() + ft.factor;
    optim::adafactor_factors(sums.data() + ft.sums, sums.data() + ft.sums + ft.rows, ft.rows,
                             ft.cols, decay, state, state + ft.rows, factor, factor + ft.rows);
  }
  // 3. Every tensor's Σ u² (the vectors' states updated on the way); then whole, and the divisor.
  std::fill_n(squares.data(), squares.size(), optim::ExactSum{});
  for_each_part([&](const FactoredPiece& p, std::size_t done, std::span<const float> grad) {
    const FactoredTensor& ft = l.tensors[p.tensor];
    float u[kFactoredPart];
    direction(p, done, grad, grad_mul, u, true, decay, &squares[ft.sq]);
  });
  exchange_sums(squares.data(), all_squares, l.slab_sq, true);
  for (std::size_t i = 0; i < l.tensors.size(); ++i)
    divisors[i] = optim::adafactor_divisor(squares[l.tensors[i].sq], l.tensors[i].count);

  // 4. The update, elementwise now: split over the rank's threads, each bucket's params sent as
  // soon as it is done.
  for (std::size_t b = 0; b < part.buckets.size(); ++b) {
    const Bucket& bucket = part.buckets[b];
    const std::size_t first = update_first(bucket);
    const std::size_t count = full_optimizer() ? bucket.count : bucket.shard.size;
    const std::uint16_t* g = update_grads(bucket);
    std::uint16_t* p16 = own_params16(bucket);
    const std::size_t begin = l.bucket_pieces[b], end = l.bucket_pieces[b + 1];
    split(count, [&](std::size_t from, std::size_t to) {
      // The pieces [from, to) of the bucket's elements cross: pieces are in master order.
      std::size_t i = std::size_t(
          std::upper_bound(l.pieces.begin() + begin, l.pieces.begin() + end, first + from,
                           [](std::size_t x, const FactoredPiece& p) { return x < p.at; }) -
          l.pieces.begin());
      ZERODP_CHECK(i > begin);
      for (--i; i < end && l.pieces[i].at < first + to; ++i) {
        const FactoredPiece& p = l.pieces[i];
        const std::size_t lo = std::max(p.at, first + from) - p.at;
        const std::size_t hi = std::min(p.at + p.count, first + to) - p.at;
        for (std::size_t done = lo; done < hi; done += kFactoredPart) {
          const std::size_t len = std::min(kFactoredPart, hi - done);
          float grad[kFactoredPart], u[kFactoredPart];
          half_to_float(opt.precision, g + (p.at - first) + done, grad, len);
          direction(p, done, {grad, len}, grad_mul, u, false, decay, nullptr);
          float* w = master.data() + p.at + done;
          optim::adafactor_apply(w, u, len, divisors[p.tensor], lr, hyper.weight_decay);
          float_to_half(opt.precision, w, p16 + (p.at - first) + done, len);
        }
      }
    });
    publish_params16(bucket, opt.overlap);
  }
}

void Engine::Impl::direction(const FactoredPiece& p, std::size_t done, std::span<const float> grad,
                             float grad_mul, float* u, bool update_v, optim::AdafactorDecay decay,
                             optim::ExactSum* sq) {
  const FactoredTensor& ft = layoutf->tensors[p.tensor];
  if (ft.matrix()) {
    const float* factor = factors.data() + ft.factor;
    optim::adafactor_direction_matrix(grad.data(), grad.size(), grad_mul, p.flat + done - ft.flat,
                                      ft.cols, factor, factor + ft.rows, u, sq);
  } else {
    optim::adafactor_direction_vector(grad.data(), grad.size(), grad_mul,
                                      factored_states.data() + p.store + done, update_v, decay, u,
                                      sq);
  }
}

void Engine::Impl::read_factored(std::size_t at, std::span<float> out) {
  // A matrix's slot holds its R row states and then its C column states at its first R + C
  // elements (R C >= R + C for R, C >= 2), zeros after; a vector's, its v.
  const FactoredLayout& l = *layoutf;
  auto it = std::upper_bound(l.pieces.begin(), l.pieces.end(), at,
                             [](std::size_t x, const FactoredPiece& p) { return x < p.at; });
  ZERODP_CHECK(it != l.pieces.begin());
  --it;
  for (std::size_t done = 0; done < out.size(); ++it) {
    ZERODP_CHECK(it != l.pieces.end());
    const FactoredPiece& p = *it;
    const FactoredTensor& ft = l.tensors[p.tensor];
    const std::size_t skip = at + done - p.at;
    const std::size_t n = std::min(p.count - skip, out.size() - done);
    for (std::size_t k = 0; k < n; ++k) {
      const std::uint64_t e = p.flat + skip + k - ft.flat;
      out[done + k] = !ft.matrix()            ? factored_states[p.store + skip + k]
                      : e < ft.rows + ft.cols ? factored_states[ft.state + e]
                                              : 0.0f;
    }
    done += n;
  }
}

void Engine::Impl::import_factored(const RangeReader& read) {
  import_master(read);
  const FactoredLayout& l = *layoutf;
  for (const FactoredTensor& ft : l.tensors) {
    if (ft.matrix())
      read({ft.flat, ft.rows + ft.cols}, nullptr, factored_states.data() + ft.state, nullptr);
  }
  for (const FactoredPiece& p : l.pieces) {
    if (!l.tensors[p.tensor].matrix())
      read({p.flat, p.count}, nullptr, factored_states.data() + p.store, nullptr);
  }
}

}  // namespace zerodp::zero
