// zero::Engine's step for optimizers with 8-bit block-wise slots (8-bit AdamW and Lion): where a
// rank keeps them (zerodp/common/blockwise_layout.h) and how a step agrees on the blocks that
// straddle ranks before it quantizes them (zerodp/optim/blockwise8.h computes each piece).
#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "zero/engine_impl.h"
#include "zerodp/common/dtype.h"
#include "zerodp/common/error.h"
#include "zerodp/optim/blockwise8.h"

namespace zerodp::zero {
namespace {

// bitsandbytes' blocks are 256 elements; a piece of a block fits these stack arrays.
constexpr std::size_t kMaxBlock = 256;
// fp32 pieces (small tensors) step in parts of this many elements.
constexpr std::size_t kPart = 1024;

}  // namespace

void Engine::Impl::allocate_blockwise() {
  const OptimizerRow& row = *rule.row;
  ZERODP_CHECK(row.slots.size() >= 1 && row.slots.size() <= 2 && row.block >= 1 &&
               row.block <= kMaxBlock);
  std::vector<std::uint64_t> counts;
  for (const TensorDims& t : flat_tensors(units)) counts.push_back(t.count);
  layout8 = make_layout8(counts, part, full_optimizer(), ranks, rank, row.block, row.min_quantized);
  for (std::size_t k = 0; k < row.slots.size(); ++k) {
    const Category c = holds_squares(row.slots[k]) ? Category::optim_v : Category::optim_m;
    codes8[k] = Buffer<std::uint8_t>(ledger, c, layout8->codes);
    absmax8[k] = Buffer<float>(ledger, c, layout8->blocks);
    states8[k] = Buffer<float>(ledger, c, layout8->fp32);
  }
  // Two maxima an edge slot (one a slot of the row, 0 for a row of one); every rank's when they
  // are exchanged.
  edge_max = Buffer<float>(ledger, Category::scratch32, 2 * layout8->edges);
  if (layout8->exchange) {
    all_edge_max = Buffer<float>(ledger, Category::scratch32, 2 * layout8->edges * ranks);
  }
}

void Engine::Impl::update_blockwise(float lr, float grad_mul) {
  const Layout8& layout = *layout8;
  const std::size_t slots = rule.row->slots.size();
  // A quantized piece's codes, and its block's maxima before this step.
  auto codes_of = [&](const Piece8& p, std::uint8_t*(&codes)[2], float(&old_max)[2]) {
    codes[0] = codes[1] = nullptr;
    old_max[0] = old_max[1] = 0.0f;
    for (std::size_t k = 0; k < slots; ++k)
      codes[k] = codes8[k].data() + p.store, old_max[k] = absmax8[k][p.block];
  };

  // 1. Each edge piece's part of its block's maxima.
  std::fill_n(edge_max.data(), edge_max.size(), 0.0f);
  for (std::size_t b = 0; b < part.buckets.size(); ++b) {
    const std::size_t first = update_first(part.buckets[b]);
    const std::uint16_t* g = update_grads(part.buckets[b]);
    for (std::size_t i = layout.bucket_pieces[b]; i < layout.bucket_pieces[b + 1]; ++i) {
      const Piece8& p = layout.pieces[i];
      if (p.edge < 0) continue;
      float grad[kMaxBlock], old_max[2];
      std::uint8_t* codes[2];
      codes_of(p, codes, old_max);
      half_to_float(opt.precision, g + (p.at - first), grad, p.count);
      optim::piece_maxima8(rule, master.data() + p.at, grad, p.count, codes, old_max, grad_mul, lr,
                           t, hyper, edge_max.data() + 2 * p.edge);
    }
  }
  // 2. Every rank's, when a block straddles ranks: 8 bytes an edge slot, 2 slots a bucket.
  const float* all = edge_max.data();
  if (layout.exchange) {
    comm.all_gather(edge_max.data(), all_edge_max.data(), all_edge_max.size(), DType::f32);
    all = all_edge_max.data();
  }
  // The block's maximum of slot k over every part of it.
  auto agreed = [&](const Piece8& p, int k) {
    float top = 0.0f;
    for (std::size_t s = p.src_begin; s < p.src_end; ++s) {
      const float x = all[2 * layout.sources[s] + k];
      if (!(x <= top)) top = x;  // NaN wins
    }
    return top;
  };

  // 3. Every piece: the step on its dequantized slots, then the slots quantized with their
  // block's maxima.
  for (std::size_t b = 0; b < part.buckets.size(); ++b) {
    const Bucket& bucket = part.buckets[b];
    const std::size_t first = update_first(bucket);
    const std::uint16_t* g = update_grads(bucket);
    std::uint16_t* p16 = own_params16(bucket);
    const std::size_t begin = layout.bucket_pieces[b];
    const std::size_t pieces = layout.bucket_pieces[b + 1] - begin;
    split(
        pieces,
        [&](std::size_t from, std::size_t to) {
          for (std::size_t i = begin + from; i < begin + to; ++i) {
            const Piece8& p = layout.pieces[i];
            float* w = master.data() + p.at;
            if (p.quantized) {
              float grad[kMaxBlock], old_max[2], new_max[2];
              std::uint8_t* codes[2];
              codes_of(p, codes, old_max);
              half_to_float(opt.precision, g + (p.at - first), grad, p.count);
              const float agreed_max[2] = {p.edge >= 0 ? agreed(p, 0) : 0.0f,
                                           p.edge >= 0 ? agreed(p, 1) : 0.0f};
              optim::step_block8(rule, w, grad, p.count, codes, old_max,
                                 p.edge >= 0 ? agreed_max : nullptr, new_max, grad_mul, lr, t,
                                 hyper);
              // An edge piece's block may have another piece on this rank, still to read the old
              // maxima: those are written after every piece.
              for (std::size_t k = 0; k < slots && p.edge < 0; ++k)
                absmax8[k][p.block] = new_max[k];
            } else {
              for (std::size_t done = 0; done < p.count; done += kPart) {
                const std::size_t len = std::min(kPart, p.count - done);
                float grad[kPart];
                half_to_float(opt.precision, g + (p.at - first) + done, grad, len);
                optim::StepSpans spans{.param = {w + done, len}, .grad = {grad, len}};
                for (std::size_t k = 0; k < slots; ++k)
                  spans.slot[k] = {states8[k].data() + p.store + done, len};
                rule.step(spans, grad_mul, lr, t, hyper);
              }
            }
            float_to_half(opt.precision, w, p16 + (p.at - first), p.count);
          }
        },
        /*worth=*/128, /*align=*/1);
    publish_params16(bucket, opt.overlap);
  }
  // 4. The edge pieces' blocks' maxima.
  for (const Piece8& p : layout.pieces) {
    for (std::size_t k = 0; k < slots && p.edge >= 0; ++k) absmax8[k][p.block] = agreed(p, int(k));
  }
}

void Engine::Impl::read_blockwise(std::size_t k, std::size_t at, std::span<float> out) {
  if (out.empty()) return;
  const std::vector<Piece8>& pieces = layout8->pieces;
  const optim::DynamicMap& map = optim::slot_map(rule, k);
  // The piece holding master element `at`: pieces are in master order.
  auto it = std::upper_bound(pieces.begin(), pieces.end(), at,
                             [](std::size_t x, const Piece8& p) { return x < p.at; });
  ZERODP_CHECK(it != pieces.begin());
  --it;
  std::size_t done = 0;
  for (; done < out.size(); ++it) {
    ZERODP_CHECK(it != pieces.end());
    const Piece8& p = *it;
    const std::size_t skip = at + done - p.at;
    const std::size_t n = std::min(p.count - skip, out.size() - done);
    if (p.quantized) {
      float values[kMaxBlock];
      optim::dequantize(codes8[k].data() + p.store, p.count, absmax8[k][p.block], map, values);
      std::copy_n(values + skip, n, out.data() + done);
    } else {
      std::copy_n(states8[k].data() + p.store + skip, n, out.data() + done);
    }
    done += n;
  }
}

void Engine::Impl::import_blockwise(const RangeReader& read) {
  import_master(read);
  const std::size_t slots = rule.row->slots.size();
  for (const Piece8& p : layout8->pieces) {
    if (!p.quantized) {
      read({p.flat, p.count}, nullptr, states8[0].data() + p.store,
           slots > 1 ? states8[1].data() + p.store : nullptr);
      continue;
    }
    // The whole block, whoever holds the rest of it: its absmax is the whole block's.
    float values[2][kMaxBlock];
    read({p.block_first, p.block_count}, nullptr, values[0], slots > 1 ? values[1] : nullptr);
    for (std::size_t k = 0; k < slots; ++k) {
      std::uint8_t codes[kMaxBlock];
      float absmax = 0.0f;
      if (!optim::recover_block(values[k], p.block_count, optim::slot_map(rule, k), &absmax,
                                codes)) {
        throw Error("the checkpoint's 8-bit " + std::string(rule.row->slots[k].holds) +
                    " of the block at element " + std::to_string(p.block_first) +
                    " is not one a quantization gives: it was not written by zerodp's 8-bit step");
      }
      std::copy_n(codes + (p.flat - p.block_first), p.count, codes8[k].data() + p.store);
      absmax8[k][p.block] = absmax;
    }
  }
}

}  // namespace zerodp::zero
