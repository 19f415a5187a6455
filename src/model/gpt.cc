// GptModel: the units' forward and backward over the layers of layers.h.
//
// Activations live in one arena, carved once per micro-batch capacity:
//   x[0..L]        block inputs [BT, C]: x[0] the embeddings' output, x[l] block l's output
//                  and block l+1's input, x[L] the final unit's input. Always kept.
//   blocks[...]    a block's internals (LayerNorm outputs and statistics, qkv, attention
//                  probabilities, MLP activations): L sets, or one set reused by every block
//                  when checkpointing, refilled by recomputing the block inside its backward.
//   final          ln_f output and statistics, logits, probabilities, losses.
//   scratch        backward only: the residual stream's gradient dres [BT, C], carried from
//                  unit to unit and updated in place, and per-block gradients used in turn.
// In bf16 compute, each lane (below) also has a scratch its products round their operands
// into, a Buffer of its own, sized for the lane's rows (GptConfig::gemm_scratch_floats). The
// products run on bf16_kernel(); oneDNN's needs (bf16 operands at 2 bytes, its scratchpad)
// are taken from the same scratch, sized in floats for the emulation's 4-byte operands.
// The residual stream's gradient needs no copies: both branches of x + f(x) read dres, and
// the LayerNorm backward at the branch's start adds its part into dres.
//
// Lanes (set_threads): every activation above is sample-major, so samples [s0, s0 + n) of the
// micro-batch are a row range of every buffer, and each lane computes its own samples' part
// of a unit without touching another lane's rows. Lane 0 runs on the caller's thread and adds
// its parameter gradients into the engine's views; lane p > 0 adds its own into a private
// buffer, and after the unit's backward the buffers are added into the views, lane by lane in
// order, each lane summing a slice of the elements. The attention backward's T x T scratch is
// per lane too.
#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "model/gpt_tensors.h"
#include "zerodp/common/error.h"
#include "zerodp/common/lane_pool.h"
#include "zerodp/model/gpt.h"
#include "zerodp/model/layers.h"

namespace zerodp::model {

// Named, not anonymous: GptModel::Impl, a class with linkage, holds these types.
namespace gpt_detail {

struct BlockActs {
  float* ln1;       // [BT, C]
  float* ln1_mean;  // [BT]
  float* ln1_rstd;  // [BT]
  float* qkv;       // [BT, 3C]
  float* att;       // [B, NH, T, T]
  float* atty;      // [BT, C]
  float* res2;      // [BT, C]   x + attn(ln_1(x))
  float* ln2;       // [BT, C]
  float* ln2_mean;  // [BT]
  float* ln2_rstd;  // [BT]
  float* fch;       // [BT, 4C]  GELU'(fc output): the backward needs the output only through it
  float* fch_gelu;  // [BT, 4C]
  // LoRA: each adapted projection's input times A^T, [BT, R] (null for a target not adapted).
  std::array<float*, kLoraTargets> lora_u;
};

// The same buffers from row r0 on (row = one position of one sample).
BlockActs rows_from(const BlockActs& a, std::size_t r0, std::size_t C, std::size_t NH,
                    std::size_t T, std::size_t R) {
  BlockActs b{a.ln1 + r0 * C,
              a.ln1_mean + r0,
              a.ln1_rstd + r0,
              a.qkv + r0 * 3 * C,
              a.att + r0 * NH * T,
              a.atty + r0 * C,
              a.res2 + r0 * C,
              a.ln2 + r0 * C,
              a.ln2_mean + r0,
              a.ln2_rstd + r0,
              a.fch + r0 * 4 * C,
              a.fch_gelu + r0 * 4 * C,
              {}};
  for (int i = 0; i < kLoraTargets; ++i) b.lora_u[i] = a.lora_u[i] ? a.lora_u[i] + r0 * R : nullptr;
  return b;
}

// A block's adapters inside its unit's params (or grads): A and B of each target, null for a
// target not adapted (gpt_units lays them out in target order, A before B).
template <class F>
struct LoraTensors {
  std::array<F*, kLoraTargets> a{}, b{};
  LoraTensors(F* base, const UnitInfo& unit, unsigned targets) {
    std::size_t t = 0;
    for (int i = 0; i < kLoraTargets; ++i) {
      if (((targets >> i) & 1u) == 0) continue;
      a[i] = base + unit.tensors[t++].offset;
      b[i] = base + unit.tensors[t++].offset;
    }
  }
};

// Pointers to a block's 12 tensors inside its unit's params (or grads).
template <class F>
struct BlockTensors {
  F* p[kBlockTensors];
  // A null base gives null pointers: a frozen block's gradients.
  BlockTensors(F* base, const UnitInfo& unit) {
    for (std::size_t i = 0; i < kBlockTensors; ++i)
      p[i] = base == nullptr ? nullptr : base + unit.tensors[i].offset;
  }
  F* operator[](BlockTensor t) const { return p[t]; }
};

}  // namespace gpt_detail

using gpt_detail::BlockActs;
using gpt_detail::BlockTensors;
using gpt_detail::LoraTensors;
using gpt_detail::rows_from;

struct GptModel::Impl {
  GptConfig cfg;
  std::vector<UnitInfo> units;  // under LoRA: the adapters, with the base's as frozen tensors
  std::vector<UnitInfo> base;   // the base's layout (gpt_base_units)
  std::size_t L, C, T, V, NH;
  // LoRA: R, its scale alpha / R, and which targets are adapted; R = 0 without.
  std::size_t R;
  float lora_scale;
  bool lora() const { return R > 0; }
  bool adapted(int target) const { return lora() && ((cfg.lora_targets >> target) & 1u) != 0; }

  std::size_t capacity = 0;  // samples the buffers hold
  std::size_t B = 0;         // samples in the current micro-batch
  float grad_scale = 1.0f;
  float mean_loss = 0.0f;

  // Everything here that grows with the batch or the model is a Buffer counted in the ledger
  // (Category::activations) set by set_ledger; null outside the engine.
  Ledger* ledger = nullptr;
  Buffer<std::uint8_t> tokens, targets;  // [capacity * T] each
  Buffer<float> arena;
  std::vector<float*> x;          // L + 1 of [BT, C]
  std::vector<BlockActs> blocks;  // L, or 1 when checkpointing
  float *lnf = nullptr, *lnf_mean = nullptr, *lnf_rstd = nullptr;
  float *logits = nullptr, *probs = nullptr, *losses = nullptr;
  float *dres = nullptr, *dln = nullptr, *datty = nullptr, *dqkv = nullptr;
  float *dfch = nullptr, *datt = nullptr, *dlogits = nullptr;
  float* dlora = nullptr;  // LoRA's backward: an output gradient times B, [BT, R]

  // Lanes (set_threads): lane p > 0 has its own gradients, sized for the largest unit view
  // (the unit and the units it reads), and its own attention scratch.
  int lanes = 1;
  std::unique_ptr<LanePool> pool;
  std::size_t max_view = 0;
  std::vector<Buffer<float>> lane_grads, lane_datt;  // [lanes - 1]

  // bf16 compute: lane p's products round their operands into floats
  // [p lane_scratch, (p + 1) lane_scratch) of gemm_scratch. Empty in fp32.
  Buffer<float> gemm_scratch;
  std::size_t lane_scratch = 0;

  explicit Impl(const GptConfig& config)
      : cfg(config),
        units(gpt_units(config)),
        base(gpt_base_units(config)),
        L(config.layers),
        C(config.hidden),
        T(config.seq_len),
        V(config.vocab),
        NH(config.heads),
        R(std::size_t(config.lora_rank)),
        lora_scale(config.lora_rank > 0 ? config.lora_alpha / float(config.lora_rank) : 0.0f) {
    for (const auto& u : units) {
      std::size_t view = u.param_count;
      for (int r : u.reads) view += units[static_cast<std::size_t>(r)].param_count;
      max_view = std::max(max_view, view);
    }
  }

  void set_lanes(int n) {
    ZERODP_CHECK_MSG(n >= 1, "GptModel::set_threads: expected at least 1 thread");
    pool.reset();
    lanes = n;
    lane_grads.clear();
    lane_datt.clear();
    for (int p = 1; p < n; ++p) {
      lane_grads.emplace_back(ledger, Category::activations, max_view);
      lane_datt.emplace_back(ledger, Category::activations, T * T);
    }
    if (n > 1) pool = std::make_unique<LanePool>(n);
    allocate_gemm_scratch();
  }

  // For the current capacity and lanes: the rows of the largest lane, ceil(capacity / lanes)
  // samples.
  void allocate_gemm_scratch() {
    gemm_scratch = {};
    lane_scratch = 0;
    if (cfg.compute == Compute::fp32 || capacity == 0) return;
    const std::size_t per_lane = (capacity + std::size_t(lanes) - 1) / std::size_t(lanes);
    const std::size_t floats = cfg.gemm_scratch_floats(per_lane * T);
    // Set only once allocated: a budget that refuses it leaves every lane an empty scratch,
    // which gemm() refuses, rather than a size over no memory.
    gemm_scratch = Buffer<float>(ledger, Category::activations, std::size_t(lanes) * floats);
    lane_scratch = floats;
  }

  // How lane p computes its products.
  GemmCompute how(int lane) {
    if (cfg.compute == Compute::fp32) return {};
    return {cfg.compute,
            {gemm_scratch.data() + std::size_t(lane) * lane_scratch, lane_scratch},
            bf16_kernel()};
  }

  // Samples [first, first + count) of the current micro-batch that lane p computes.
  struct Samples {
    std::size_t first = 0, count = 0;
  };
  Samples lane_samples(int p) const {
    const std::size_t begin = B * std::size_t(p) / std::size_t(lanes);
    const std::size_t end = B * std::size_t(p + 1) / std::size_t(lanes);
    return {begin, end - begin};
  }

  // fn(samples, lane) on every lane that has samples.
  void for_lanes(const std::function<void(Samples, int)>& fn) {
    if (lanes == 1) {
      fn({0, B}, 0);
      return;
    }
    pool->run([&](int p) {
      const Samples s = lane_samples(p);
      if (s.count > 0) fn(s, p);
    });
  }

  // Carves the arena for `samples` samples, in the order of GptConfig::activation_bytes().
  void allocate(std::size_t samples) {
    const std::size_t BT = samples * T;
    // The old buffers go first: a larger batch never holds both.
    arena = {}, tokens = {}, targets = {}, gemm_scratch = {};
    capacity = 0;
    arena = Buffer<float>(ledger, Category::activations,
                          (cfg.activation_bytes(samples) - 2 * BT) / sizeof(float));
    tokens = Buffer<std::uint8_t>(ledger, Category::activations, BT);
    targets = Buffer<std::uint8_t>(ledger, Category::activations, BT);
    float* next = arena.data();
    auto take = [&next](std::size_t n) {
      float* p = next;
      next += n;
      return p;
    };
    x.resize(L + 1);
    for (auto& xl : x) xl = take(BT * C);
    blocks.resize(cfg.checkpoint_activations ? 1 : L);
    for (auto& a : blocks) {
      a.ln1 = take(BT * C);
      a.ln1_mean = take(BT);
      a.ln1_rstd = take(BT);
      a.qkv = take(BT * 3 * C);
      a.att = take(BT * NH * T);
      a.atty = take(BT * C);
      a.res2 = take(BT * C);
      a.ln2 = take(BT * C);
      a.ln2_mean = take(BT);
      a.ln2_rstd = take(BT);
      a.fch = take(BT * 4 * C);
      a.fch_gelu = take(BT * 4 * C);
      for (int i = 0; i < kLoraTargets; ++i) a.lora_u[i] = adapted(i) ? take(BT * R) : nullptr;
    }
    lnf = take(BT * C);
    lnf_mean = take(BT);
    lnf_rstd = take(BT);
    logits = take(BT * V);
    probs = take(BT * V);
    losses = take(BT);
    dres = take(BT * C);
    dln = take(BT * C);
    datty = take(BT * C);
    dqkv = take(BT * 3 * C);
    dfch = take(BT * 4 * C);
    dlogits = take(BT * V);
    datt = take(T * T);
    dlora = lora() ? take(BT * R) : nullptr;
    ZERODP_CHECK(next == arena.data() + arena.size());
    capacity = samples;
    allocate_gemm_scratch();
  }

  void set_ledger(Ledger* to) {
    arena.recount(to), tokens.recount(to), targets.recount(to);
    for (auto& b : lane_grads) b.recount(to);
    for (auto& b : lane_datt) b.recount(to);
    gemm_scratch.recount(to);
    ledger = to;
  }

  void begin(std::size_t samples, float scale) {
    ZERODP_CHECK_MSG(samples >= 1, "a micro-batch needs at least one sample");
    if (samples > capacity) allocate(samples);
    B = samples;
    grad_scale = scale;
  }

  // The engine's views: the unit's own slice, then one per unit it reads, each the size of
  // that unit; grads likewise in backward.
  void check_views(std::size_t u, const UnitViews& views, bool with_grads) const {
    ZERODP_CHECK(u < units.size());
    const auto& reads = units[u].reads;
    ZERODP_CHECK(views.params.size() == 1 + reads.size());
    ZERODP_CHECK(!with_grads || views.grads.size() == views.params.size());
    ZERODP_CHECK(views.frozen.size() == (lora() ? views.params.size() : 0));
    for (std::size_t i = 0; i < views.params.size(); ++i) {
      const UnitInfo& unit = units[i == 0 ? u : static_cast<std::size_t>(reads[i - 1])];
      ZERODP_CHECK(views.params[i].size() == unit.param_count);
      ZERODP_CHECK(!with_grads || views.grads[i].size() == unit.param_count);
      ZERODP_CHECK(!lora() || views.frozen[i].size() == unit.frozen_count);
    }
  }

  // The base's weights of view i: the frozen view under LoRA, the trained one without.
  const float* weights(const UnitViews& views, std::size_t i) const {
    return lora() ? views.frozen[i].data() : views.params[i].data();
  }

  // LoRA's forward for target i: u = inp A^T, kept, then out += scale u B^T.
  void lora_forward(int i, float* out, float* u, const float* inp,
                    const LoraTensors<const float>& w, std::size_t BT, std::size_t in,
                    std::size_t out_dim, const GemmCompute& how) {
    if (adapted(i))
      model::lora_forward(out, u, inp, w.a[i], w.b[i], lora_scale, BT, in, out_dim, R, how);
  }
  // Its backward (layers.h), dinp already holding the base's dout W.
  void lora_backward(int i, float* dinp, float* du, const float* dout, const float* inp,
                     const float* u, const LoraTensors<const float>& w, const LoraTensors<float>& g,
                     std::size_t BT, std::size_t in, std::size_t out_dim, const GemmCompute& how) {
    if (adapted(i)) {
      model::lora_backward(dinp, g.a[i], g.b[i], du, dout, inp, u, w.a[i], w.b[i], lora_scale, BT,
                           in, out_dim, R, how);
    }
  }

  // Block l's internals from sample s.first on.
  BlockActs acts(std::size_t l, const Samples& s) const {
    return rows_from(blocks[cfg.checkpoint_activations ? 0 : l], s.first * T, C, NH, T, R);
  }

  // Block l (0-based) from x[l] into x[l + 1], for samples s.
  // weights: the block's base tensors; adapters: its LoRA tensors (unused without LoRA).
  void block_forward(std::size_t l, const float* weights, const float* adapters, const Samples& s,
                     const GemmCompute& how) {
    const BlockTensors<const float> w(weights, base[l + 1]);
    const LoraTensors<const float> lw(adapters, units[l + 1], lora() ? cfg.lora_targets : 0u);
    const BlockActs a = acts(l, s);
    const std::size_t BT = s.count * T, r0 = s.first * T;
    const float* in = x[l] + r0 * C;
    float* out = x[l + 1] + r0 * C;
    layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, in, w[kLn1Weight], w[kLn1Bias], BT, C);
    matmul_forward(a.qkv, a.ln1, w[kAttnWeight], w[kAttnBias], BT, C, 3 * C, how);
    lora_forward(0, a.qkv, a.lora_u[0], a.ln1, lw, BT, C, 3 * C, how);
    attention_forward(a.atty, a.att, a.qkv, s.count, T, C, NH, how);
    matmul_residual_forward(a.res2, in, a.atty, w[kAttnProjWeight], w[kAttnProjBias], BT, C, C,
                            how);
    lora_forward(1, a.res2, a.lora_u[1], a.atty, lw, BT, C, C, how);
    layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, w[kLn2Weight], w[kLn2Bias], BT, C);
    matmul_forward(a.fch, a.ln2, w[kFcWeight], w[kFcBias], BT, C, 4 * C, how);
    lora_forward(2, a.fch, a.lora_u[2], a.ln2, lw, BT, C, 4 * C, how);
    gelu_forward_keep_slope(a.fch_gelu, a.fch, a.fch, BT * 4 * C);
    matmul_residual_forward(out, a.res2, a.fch_gelu, w[kFcProjWeight], w[kFcProjBias], BT, 4 * C, C,
                            how);
    lora_forward(3, out, a.lora_u[3], a.fch_gelu, lw, BT, 4 * C, C, how);
  }

  // On entry dres = d loss / d x[l + 1]; on exit dres = d loss / d x[l] (samples s).
  // grads: the base's gradients (null under LoRA: the base is frozen); adapter_grads: the
  // adapters' (unused without LoRA).
  void block_backward(std::size_t l, const float* weights, const float* adapters, float* grads,
                      float* adapter_grads, const Samples& s, float* att_scratch,
                      const GemmCompute& how) {
    const BlockTensors<const float> w(weights, base[l + 1]);
    const LoraTensors<const float> lw(adapters, units[l + 1], lora() ? cfg.lora_targets : 0u);
    const LoraTensors<float> lg(adapter_grads, units[l + 1], lora() ? cfg.lora_targets : 0u);
    // Under LoRA every base tensor's gradient pointer is null: the layers then skip them.
    const BlockTensors<float> g(grads, base[l + 1]);
    if (cfg.checkpoint_activations)
      block_forward(l, weights, adapters, s, how);  // refills acts(l); rewrites
                                                    // x[l + 1] with the same bits
    const BlockActs a = acts(l, s);
    const std::size_t BT = s.count * T, r0 = s.first * T;
    float* dr = dres + r0 * C;
    float* dl = dln + r0 * C;
    float* dy = datty + r0 * C;
    float* dq = dqkv + r0 * 3 * C;
    float* df = dfch + r0 * 4 * C;  // d fch_gelu, then d fch in place
    float* du = lora() ? dlora + r0 * R : nullptr;
    // MLP branch: x[l+1] = res2 + fcproj, so d fcproj = dres.
    matmul_backward(df, g[kFcProjWeight], g[kFcProjBias], dr, a.fch_gelu, w[kFcProjWeight], BT,
                    4 * C, C, how);
    lora_backward(3, df, du, dr, a.fch_gelu, a.lora_u[3], lw, lg, BT, 4 * C, C, how);
    gelu_backward_from_slope(df, g[kFcBias], a.fch, df, BT, 4 * C);
    matmul_backward(dl, g[kFcWeight], nullptr, df, a.ln2, w[kFcWeight], BT, C, 4 * C, how);
    lora_backward(2, dl, du, df, a.ln2, a.lora_u[2], lw, lg, BT, C, 4 * C, how);
    layernorm_backward(dr, g[kLn2Weight], g[kLn2Bias], dl, a.res2, w[kLn2Weight], a.ln2_mean,
                       a.ln2_rstd, BT, C);  // dres is now d res2
    // Attention branch: res2 = x + attproj, so d attproj = dres.
    matmul_backward(dy, g[kAttnProjWeight], g[kAttnProjBias], dr, a.atty, w[kAttnProjWeight], BT, C,
                    C, how);
    lora_backward(1, dy, du, dr, a.atty, a.lora_u[1], lw, lg, BT, C, C, how);
    attention_backward(dq, att_scratch, dy, a.qkv, a.att, s.count, T, C, NH, how);
    matmul_backward(dl, g[kAttnWeight], g[kAttnBias], dq, a.ln1, w[kAttnWeight], BT, C, 3 * C, how);
    lora_backward(0, dl, du, dq, a.ln1, a.lora_u[0], lw, lg, BT, C, 3 * C, how);
    layernorm_backward(dr, g[kLn1Weight], g[kLn1Bias], dl, x[l] + r0 * C, w[kLn1Weight], a.ln1_mean,
                       a.ln1_rstd, BT, C);  // dres is now d x[l]
  }

  void final_forward(const float* params, const float* embeddings, const Samples& s,
                     const GemmCompute& how) {
    const std::size_t BT = s.count * T, r0 = s.first * T;
    const float* wte = embeddings + base[0].tensors[kWte].offset;
    layernorm_forward(lnf + r0 * C, lnf_mean + r0, lnf_rstd + r0, x[L] + r0 * C,
                      params + base[L + 1].tensors[kLnfWeight].offset,
                      params + base[L + 1].tensors[kLnfBias].offset, BT, C);
    matmul_forward(logits + r0 * V, lnf + r0 * C, wte, nullptr, BT, C, V, how);  // tied to wte
    crossentropy_softmax_forward(probs + r0 * V, losses + r0, logits + r0 * V, targets.data() + r0,
                                 BT, V);
  }

  // grads and embedding_grads null: a frozen final unit and embedding (LoRA).
  void final_backward(const float* params, const float* embeddings, float* grads,
                      float* embedding_grads, const Samples& s, const GemmCompute& how) {
    const std::size_t BT = s.count * T, r0 = s.first * T;
    const auto& lnf_tensors = base[L + 1].tensors;
    const std::size_t wte_offset = base[0].tensors[kWte].offset;
    auto at = [](float* g, std::size_t offset) { return g == nullptr ? nullptr : g + offset; };
    // The objective is grad_scale * mean over the micro-batch's B*T positions of the losses.
    const float dloss = grad_scale / static_cast<float>(B * T);
    crossentropy_softmax_backward(dlogits + r0 * V, probs + r0 * V, targets.data() + r0, dloss, BT,
                                  V);
    matmul_backward(dln + r0 * C, at(embedding_grads, wte_offset), nullptr, dlogits + r0 * V,
                    lnf + r0 * C, embeddings + wte_offset, BT, C, V, how);
    float* dr = dres + r0 * C;
    std::fill(dr, dr + BT * C, 0.0f);  // the residual stream's gradient starts here
    layernorm_backward(dr, at(grads, lnf_tensors[kLnfWeight].offset),
                       at(grads, lnf_tensors[kLnfBias].offset), dln + r0 * C, x[L] + r0 * C,
                       params + lnf_tensors[kLnfWeight].offset, lnf_mean + r0, lnf_rstd + r0, BT,
                       C);
  }

  void forward(std::size_t u, const UnitViews& views) {
    const float* p = weights(views, 0);
    for_lanes([&](Samples s, int lane) {
      if (u == 0) {
        encoder_forward(x[0] + s.first * T * C, tokens.data() + s.first * T,
                        p + base[0].tensors[kWte].offset, p + base[0].tensors[kWpe].offset, s.count,
                        T, C);
      } else if (u <= L) {
        block_forward(u - 1, p, views.params[0].data(), s, how(lane));
      } else {
        final_forward(p, weights(views, 1), s, how(lane));
      }
    });
    if (u == L + 1) {
      const std::size_t BT = B * T;
      double sum = 0.0;
      for (std::size_t i = 0; i < BT; ++i) sum += losses[i];
      mean_loss = static_cast<float>(sum / static_cast<double>(BT));
    }
  }

  // Unit u's backward for samples s, adding its gradients into grads (one pointer per view).
  void unit_backward(std::size_t u, const UnitViews& views, const std::vector<float*>& grads,
                     const Samples& s, float* att_scratch, const GemmCompute& how) {
    const float* p = weights(views, 0);
    float* g = grads[0];
    if (u == 0) {
      if (lora()) return;  // a frozen embedding: nothing before it needs a gradient
      encoder_backward(g + base[0].tensors[kWte].offset, g + base[0].tensors[kWpe].offset,
                       dres + s.first * T * C, tokens.data() + s.first * T, s.count, T, C);
    } else if (u <= L) {
      if (lora()) {
        block_backward(u - 1, p, views.params[0].data(), nullptr, g, s, att_scratch, how);
      } else {
        block_backward(u - 1, p, nullptr, g, nullptr, s, att_scratch, how);
      }
    } else if (lora()) {
      final_backward(p, weights(views, 1), nullptr, nullptr, s, how);
    } else {
      final_backward(p, weights(views, 1), g, grads[1], s, how);
    }
  }

  void backward(std::size_t u, const UnitViews& views) {
    std::vector<float*> own(views.grads.size());
    for (std::size_t i = 0; i < own.size(); ++i) own[i] = views.grads[i].data();
    if (lanes == 1) {
      unit_backward(u, views, own, {0, B}, datt, how(0));
      return;
    }
    for_lanes([&](Samples s, int lane) {
      if (lane == 0) {
        unit_backward(u, views, own, s, datt, how(0));
        return;
      }
      // This lane's gradients, laid out view after view in its private buffer.
      std::vector<float*> mine(views.grads.size());
      float* at = lane_grads[std::size_t(lane - 1)].data();
      for (std::size_t i = 0; i < mine.size(); ++i) {
        mine[i] = at;
        std::fill_n(at, views.grads[i].size(), 0.0f);
        at += views.grads[i].size();
      }
      unit_backward(u, views, mine, s, lane_datt[std::size_t(lane - 1)].data(), how(lane));
    });
    // views += lane 1 + lane 2 + ..., in lane order; lane p sums elements [p n / P, (p+1) n / P)
    // of every view. Lanes without samples added nothing.
    pool->run([&](int p) {
      std::size_t base = 0;
      for (const auto& view : views.grads) {
        const std::size_t n = view.size();
        const std::size_t begin = n * std::size_t(p) / std::size_t(lanes);
        const std::size_t end = n * std::size_t(p + 1) / std::size_t(lanes);
        float* out = view.data();
        for (int q = 1; q < lanes; ++q) {
          if (lane_samples(q).count == 0) continue;
          const float* in = lane_grads[std::size_t(q - 1)].data() + base;
          for (std::size_t i = begin; i < end; ++i) out[i] += in[i];
        }
        base += n;
      }
    });
  }
};

GptModel::GptModel(const GptConfig& config) {
  config.validate();
  impl_ = std::make_unique<Impl>(config);
}

GptModel::~GptModel() = default;

const GptConfig& GptModel::config() const {
  return impl_->cfg;
}
const std::vector<UnitInfo>& GptModel::units() const {
  return impl_->units;
}

void GptModel::set_threads(int threads) {
  impl_->set_lanes(threads);
}
void GptModel::set_ledger(Ledger* ledger) {
  impl_->set_ledger(ledger);
}

int GptModel::threads() const {
  return impl_->lanes;
}

void GptModel::begin_micro_batch(const MicroBatch& batch) {
  Impl& m = *impl_;
  if (batch.tokens.size() != batch.samples * (m.T + 1)) {
    throw Error("GptModel: a micro-batch of " + std::to_string(batch.samples) + " samples needs " +
                std::to_string(batch.samples * (m.T + 1)) +
                " tokens (windows of seq_len + 1), got " + std::to_string(batch.tokens.size()));
  }
  m.begin(batch.samples, batch.grad_scale);
  for (std::size_t b = 0; b < batch.samples; ++b) {
    const std::uint8_t* w = batch.tokens.data() + b * (m.T + 1);
    std::memcpy(m.tokens.data() + b * m.T, w, m.T);
    std::memcpy(m.targets.data() + b * m.T, w + 1, m.T);
  }
}

void GptModel::forward(int unit, const UnitViews& views) {
  Impl& m = *impl_;
  ZERODP_CHECK_MSG(m.B > 0, "forward before begin_micro_batch");
  const auto u = static_cast<std::size_t>(unit);
  m.check_views(u, views, false);
  m.forward(u, views);
}

void GptModel::backward(int unit, const UnitViews& views) {
  Impl& m = *impl_;
  const auto u = static_cast<std::size_t>(unit);
  ZERODP_CHECK_MSG(m.B > 0, "backward before begin_micro_batch");
  m.check_views(u, views, true);
  m.backward(u, views);
}

float GptModel::loss() const {
  return impl_->mean_loss;
}

std::span<const float> GptModel::logits() const {
  return {impl_->logits, impl_->B * impl_->T * impl_->V};
}
std::span<const float> GptModel::losses() const {
  return {impl_->losses, impl_->B * impl_->T};
}
std::span<const std::uint8_t> GptModel::tokens() const {
  return {impl_->tokens.data(), impl_->B * impl_->T};
}

std::size_t GptModel::activation_bytes() const {
  const Impl& m = *impl_;
  if (m.capacity == 0) return 0;
  const std::size_t lane_floats = std::size_t(m.lanes - 1) * (m.max_view + m.T * m.T);
  return m.cfg.activation_bytes(m.capacity) + 4 * (lane_floats + m.gemm_scratch.size());
}

std::string GptModel::describe() const {
  const GptConfig& c = impl_->cfg;
  std::string s = c.describe() + ": " + std::to_string(c.param_count()) + " parameters";
  if (c.checkpoint_activations) s += ", activation checkpointing";
  if (c.compute != Compute::fp32) s += ", " + std::string(compute_name(c.compute)) + " compute";
  return s;
}

}  // namespace zerodp::model
