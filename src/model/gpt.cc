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
// The residual stream's gradient needs no copies: both branches of x + f(x) read dres, and
// the LayerNorm backward at the branch's start adds its part into dres.
#include <algorithm>
#include <cstring>

#include "model/gpt_tensors.h"
#include "model/layers.h"
#include "zerodp/error.h"
#include "zerodp/gpt.h"

namespace zerodp::model {

namespace {

struct BlockActs {
  float* ln1;       // [BT, C]
  float* ln1_mean;  // [BT]
  float* ln1_rstd;  // [BT]
  float* qkv;       // [BT, 3C]
  float* att;       // [B, NH, T, T]
  float* atty;      // [BT, C]
  float* attproj;   // [BT, C]
  float* res2;      // [BT, C]   x + attn(ln_1(x))
  float* ln2;       // [BT, C]
  float* ln2_mean;  // [BT]
  float* ln2_rstd;  // [BT]
  float* fch;       // [BT, 4C]
  float* fch_gelu;  // [BT, 4C]
  float* fcproj;    // [BT, C]
};

// Pointers to a block's 12 tensors inside its unit's params (or grads).
template <class F>
struct BlockTensors {
  F* p[kBlockTensors];
  BlockTensors(F* base, const UnitInfo& unit) {
    for (std::size_t i = 0; i < kBlockTensors; ++i) p[i] = base + unit.tensors[i].offset;
  }
  F* operator[](BlockTensor t) const { return p[t]; }
};

}  // namespace

struct GptModel::Impl {
  GptConfig cfg;
  std::vector<UnitInfo> units;
  std::size_t L, C, T, V, NH;

  std::shared_ptr<const io::TextData> data;
  io::Split split = io::Split::train;
  std::uint64_t data_seed = 0;

  std::size_t capacity = 0;  // samples the buffers hold
  std::size_t B = 0;         // samples in the current micro-batch
  float grad_scale = 1.0f;
  float mean_loss = 0.0f;

  std::vector<std::uint8_t> tokens, targets;  // [capacity * T] each
  std::vector<std::uint8_t> window;           // [T + 1], for begin_micro_batch
  std::vector<float> arena;
  std::vector<float*> x;          // L + 1 of [BT, C]
  std::vector<BlockActs> blocks;  // L, or 1 when checkpointing
  float *lnf = nullptr, *lnf_mean = nullptr, *lnf_rstd = nullptr;
  float *logits = nullptr, *probs = nullptr, *losses = nullptr;
  float *dres = nullptr, *dln = nullptr, *datty = nullptr, *dqkv = nullptr;
  float *dfch = nullptr, *dfch_gelu = nullptr, *datt = nullptr, *dlogits = nullptr;

  explicit Impl(const GptConfig& config)
      : cfg(config),
        units(gpt_units(config)),
        L(config.layers),
        C(config.hidden),
        T(config.seq_len),
        V(config.vocab),
        NH(config.heads),
        window(T + 1) {}

  // Carves the arena for `samples` samples, in the order of GptConfig::activation_bytes().
  void allocate(std::size_t samples) {
    const std::size_t BT = samples * T;
    arena.assign((cfg.activation_bytes(samples) - 2 * BT) / sizeof(float), 0.0f);
    tokens.assign(BT, 0);
    targets.assign(BT, 0);
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
      a.attproj = take(BT * C);
      a.res2 = take(BT * C);
      a.ln2 = take(BT * C);
      a.ln2_mean = take(BT);
      a.ln2_rstd = take(BT);
      a.fch = take(BT * 4 * C);
      a.fch_gelu = take(BT * 4 * C);
      a.fcproj = take(BT * C);
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
    dfch_gelu = take(BT * 4 * C);
    dlogits = take(BT * V);
    datt = take(T * T);
    ZERODP_CHECK(next == arena.data() + arena.size());
    capacity = samples;
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
    for (std::size_t i = 0; i < views.params.size(); ++i) {
      const std::size_t n = units[i == 0 ? u : static_cast<std::size_t>(reads[i - 1])].param_count;
      ZERODP_CHECK(views.params[i].size() == n);
      ZERODP_CHECK(!with_grads || views.grads[i].size() == n);
    }
  }

  BlockActs& acts(std::size_t l) { return blocks[cfg.checkpoint_activations ? 0 : l]; }

  // Block l (0-based) from x[l] into x[l + 1].
  void block_forward(std::size_t l, const float* params) {
    const BlockTensors<const float> w(params, units[l + 1]);
    BlockActs& a = acts(l);
    const std::size_t BT = B * T;
    const float* in = x[l];
    layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, in, w[kLn1Weight], w[kLn1Bias], BT, C);
    matmul_forward(a.qkv, a.ln1, w[kAttnWeight], w[kAttnBias], BT, C, 3 * C);
    attention_forward(a.atty, a.att, a.qkv, B, T, C, NH);
    matmul_forward(a.attproj, a.atty, w[kAttnProjWeight], w[kAttnProjBias], BT, C, C);
    residual_forward(a.res2, in, a.attproj, BT * C);
    layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, w[kLn2Weight], w[kLn2Bias], BT, C);
    matmul_forward(a.fch, a.ln2, w[kFcWeight], w[kFcBias], BT, C, 4 * C);
    gelu_forward(a.fch_gelu, a.fch, BT * 4 * C);
    matmul_forward(a.fcproj, a.fch_gelu, w[kFcProjWeight], w[kFcProjBias], BT, 4 * C, C);
    residual_forward(x[l + 1], a.res2, a.fcproj, BT * C);
  }

  // On entry dres = d loss / d x[l + 1]; on exit dres = d loss / d x[l].
  void block_backward(std::size_t l, const float* params, float* grads) {
    const BlockTensors<const float> w(params, units[l + 1]);
    const BlockTensors<float> g(grads, units[l + 1]);
    if (cfg.checkpoint_activations)
      block_forward(l, params);  // refills acts(l); rewrites
                                 // x[l + 1] with the same bits
    const BlockActs& a = acts(l);
    const std::size_t BT = B * T;
    // MLP branch: x[l+1] = res2 + fcproj, so d fcproj = dres.
    matmul_backward(dfch_gelu, g[kFcProjWeight], g[kFcProjBias], dres, a.fch_gelu, w[kFcProjWeight],
                    BT, 4 * C, C);
    gelu_backward(dfch, a.fch, dfch_gelu, BT * 4 * C);
    matmul_backward(dln, g[kFcWeight], g[kFcBias], dfch, a.ln2, w[kFcWeight], BT, C, 4 * C);
    layernorm_backward(dres, g[kLn2Weight], g[kLn2Bias], dln, a.res2, w[kLn2Weight], a.ln2_mean,
                       a.ln2_rstd, BT, C);  // dres is now d res2
    // Attention branch: res2 = x + attproj, so d attproj = dres.
    matmul_backward(datty, g[kAttnProjWeight], g[kAttnProjBias], dres, a.atty, w[kAttnProjWeight],
                    BT, C, C);
    attention_backward(dqkv, datt, datty, a.qkv, a.att, B, T, C, NH);
    matmul_backward(dln, g[kAttnWeight], g[kAttnBias], dqkv, a.ln1, w[kAttnWeight], BT, C, 3 * C);
    layernorm_backward(dres, g[kLn1Weight], g[kLn1Bias], dln, x[l], w[kLn1Weight], a.ln1_mean,
                       a.ln1_rstd, BT, C);  // dres is now d x[l]
  }

  void final_forward(const float* params, const float* embeddings) {
    const std::size_t BT = B * T;
    const float* wte = embeddings + units[0].tensors[kWte].offset;
    layernorm_forward(lnf, lnf_mean, lnf_rstd, x[L],
                      params + units[L + 1].tensors[kLnfWeight].offset,
                      params + units[L + 1].tensors[kLnfBias].offset, BT, C);
    matmul_forward(logits, lnf, wte, nullptr, BT, C, V);  // LM head tied to wte
    crossentropy_softmax_forward(probs, losses, logits, targets.data(), BT, V);
    double sum = 0.0;
    for (std::size_t i = 0; i < BT; ++i) sum += losses[i];
    mean_loss = static_cast<float>(sum / static_cast<double>(BT));
  }

  void final_backward(const float* params, const float* embeddings, float* grads,
                      float* embedding_grads) {
    const std::size_t BT = B * T;
    const auto& lnf_tensors = units[L + 1].tensors;
    const std::size_t wte_offset = units[0].tensors[kWte].offset;
    // The objective is grad_scale * mean over BT positions of the losses.
    const float dloss = grad_scale / static_cast<float>(BT);
    crossentropy_softmax_backward(dlogits, probs, targets.data(), dloss, BT, V);
    matmul_backward(dln, embedding_grads + wte_offset, nullptr, dlogits, lnf,
                    embeddings + wte_offset, BT, C, V);
    std::fill(dres, dres + BT * C, 0.0f);  // the residual stream's gradient starts here
    layernorm_backward(dres, grads + lnf_tensors[kLnfWeight].offset,
                       grads + lnf_tensors[kLnfBias].offset, dln, x[L],
                       params + lnf_tensors[kLnfWeight].offset, lnf_mean, lnf_rstd, BT, C);
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

void GptModel::set_data(std::shared_ptr<const io::TextData> data, io::Split split,
                        std::uint64_t seed) {
  ZERODP_CHECK(data != nullptr);
  ZERODP_CHECK_MSG(data->seq_len() == impl_->T, "the data's seq_len must be the model's");
  impl_->data = std::move(data);
  impl_->split = split;
  impl_->data_seed = seed;
}

void GptModel::begin_windows(std::span<const std::uint8_t> windows, std::size_t batch,
                             float grad_scale) {
  Impl& m = *impl_;
  ZERODP_CHECK(windows.size() == batch * (m.T + 1));
  m.begin(batch, grad_scale);
  for (std::size_t b = 0; b < batch; ++b) {
    const std::uint8_t* w = windows.data() + b * (m.T + 1);
    std::memcpy(m.tokens.data() + b * m.T, w, m.T);
    std::memcpy(m.targets.data() + b * m.T, w + 1, m.T);
  }
}

void GptModel::begin_micro_batch(const MicroBatch& batch) {
  Impl& m = *impl_;
  if (!m.data) throw Error("GptModel: no data set (set_data) before begin_micro_batch");
  m.begin(batch.samples, batch.grad_scale);
  for (std::size_t b = 0; b < batch.samples; ++b) {
    m.data->window(m.split, m.data_seed, batch.first_sample + b, m.window);
    std::memcpy(m.tokens.data() + b * m.T, m.window.data(), m.T);
    std::memcpy(m.targets.data() + b * m.T, m.window.data() + 1, m.T);
  }
}

void GptModel::forward(int unit, const UnitViews& views) {
  Impl& m = *impl_;
  ZERODP_CHECK_MSG(m.B > 0, "forward before begin_micro_batch");
  const auto u = static_cast<std::size_t>(unit);
  m.check_views(u, views, false);
  const float* p = views.params[0].data();
  if (u == 0) {
    encoder_forward(m.x[0], m.tokens.data(), p + m.units[0].tensors[kWte].offset,
                    p + m.units[0].tensors[kWpe].offset, m.B, m.T, m.C);
  } else if (u <= m.L) {
    m.block_forward(u - 1, p);
  } else {
    m.final_forward(p, views.params[1].data());
  }
}

void GptModel::backward(int unit, const UnitViews& views) {
  Impl& m = *impl_;
  const auto u = static_cast<std::size_t>(unit);
  ZERODP_CHECK_MSG(m.B > 0, "backward before begin_micro_batch");
  m.check_views(u, views, true);
  const float* p = views.params[0].data();
  float* g = views.grads[0].data();
  if (u == 0) {
    encoder_backward(g + m.units[0].tensors[kWte].offset, g + m.units[0].tensors[kWpe].offset,
                     m.dres, m.tokens.data(), m.B, m.T, m.C);
  } else if (u <= m.L) {
    m.block_backward(u - 1, p, g);
  } else {
    m.final_backward(p, views.params[1].data(), g, views.grads[1].data());
  }
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
  return impl_->capacity == 0 ? 0 : impl_->cfg.activation_bytes(impl_->capacity);
}

std::string GptModel::describe() const {
  const GptConfig& c = impl_->cfg;
  std::string s = c.describe() + ": " + std::to_string(c.param_count()) + " parameters";
  if (c.checkpoint_activations) s += ", activation checkpointing";
  return s;
}

}  // namespace zerodp::model
