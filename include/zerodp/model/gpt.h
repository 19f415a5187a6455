// GptModel: a byte-level GPT-2, forward and backward written by hand, as a Model of the engine.
//
// Architecture (GPT-2's, at byte level): vocabulary 256, learned position embeddings, L
// pre-LayerNorm blocks  x += attn(ln_1(x)); x += mlp(ln_2(x))  with causal multi-head
// self-attention and an MLP of width 4C with GELU (tanh approximation), a final LayerNorm
// and an LM head tied to the token embedding. LayerNorm eps 1e-5. fp32 everywhere, except the
// matrix products under GptConfig::compute = bf16 (bf16 inputs, fp32 sums; zerodp/model/gemm.h).
//
// Units over the flat layout (see docs/gpt.md for the tensor table):
//   unit 0        "embeddings"  wte.weight [256, C], wpe.weight [T, C]
//   unit 1..L     "h.{i}"       the block's 12 tensors, named as Hugging Face names them
//   unit L+1      "final"       ln_f.weight, ln_f.bias; reads unit 0 (wte) for the LM head
// The matmul weights are stored [out, in] (as torch.nn.Linear); Hugging Face's GPT-2 stores
// them [in, out] (Conv1D), and the safetensors export transposes them.
//
// Data: each sample of MicroBatch::tokens is a window of seq_len + 1 bytes: the model reads
// the first seq_len and predicts every next byte (data::TextWindows draws such windows).
//
// Memory: activations and backward scratch are allocated once, when a micro-batch larger than
// any before arrives, and reused; forward and backward allocate nothing. activation_bytes()
// is exactly GptConfig::activation_bytes(largest micro-batch seen), plus, with P threads,
// (P - 1) private gradient buffers (the largest unit with the units it reads) and attention
// scratch (T^2 floats), plus in bf16 compute P scratches of GptConfig::gemm_scratch_floats()
// for the rows of the largest part (ceil(B / P) T): every one of them a Buffer in the ledger given
// by set_ledger(), in Category::activations (predict::gpt_activation_bytes predicts the same sum).
//
// Threads (set_threads): 1 by default, all the work on the caller's thread (the GEMMs then use
// as many threads as OpenBLAS is set to). With P > 1, each unit's forward and backward split
// the micro-batch's samples into P contiguous parts computed at once, one on the caller's
// thread, the others on threads the model owns; each part's parameter gradients are summed
// into the engine's views in part order. The same P gives the same bits every call; another P
// sums the gradients in another order. Set OpenBLAS to one thread then (concurrent calls into
// a multi-threaded OpenBLAS queue behind each other). For one rank with several cores; with
// several ranks as threads, keep 1.
//
// Thread-safety: one GptModel per rank thread (Model's rule); a shared TextData is read-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "zerodp/model/gemm.h"
#include "zerodp/model/model.h"

namespace zerodp::model {

// The projections LoRA may adapt, by PEFT's names for GPT-2's modules.
enum LoraTarget : unsigned {
  kLoraAttn = 1,      // attn.c_attn: q, k, v [3C, C]
  kLoraAttnProj = 2,  // attn.c_proj [C, C]
  kLoraFc = 4,        // mlp.c_fc [4C, C]
  kLoraFcProj = 8,    // mlp.c_proj [C, 4C]
  kLoraAllTargets = 15,
};
inline constexpr int kLoraTargets = 4;
// "attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj" for target bit i (0..3).
const char* lora_target_name(int i);

struct GptConfig {
  int layers = 4;     // --layers: transformer blocks L, >= 1
  int heads = 4;      // --heads: attention heads NH; must divide hidden
  int hidden = 256;   // --hidden: channels C
  int seq_len = 128;  // --seq-len: context T, also the number of learned positions
  int vocab = 256;    // bytes: fixed at 256
  // --checkpoint-activations: keep only each block's input and recompute the block inside
  // backward. Activations drop from L sets of block internals to one, for about one more
  // forward of the blocks per step; gradients are bitwise the same.
  bool checkpoint_activations = false;
  // --compute: the type the matrix products multiply in. bf16 rounds both operands of every
  // product to bf16 and sums in fp32; the weights, gradients and every other operation are the
  // same. fp32 gives the bits of a model without the field.
  Compute compute = Compute::fp32;
  // --lora-rank: 0 trains every parameter. R > 0 freezes every parameter of the model above
  // (the base, frozen parameters of model.h) and trains, beside each projection W [out, in]
  // that lora_targets names, A [R, in] and B [out, R]: the projection's output gains
  // (lora_alpha / R) (x A^T) B^T, as PEFT's LoRA Linear computes it with lora_dropout 0.
  // A starts uniform in +-1/sqrt(in) (PEFT's kaiming_uniform with a = sqrt(5)), B at zero,
  // so the first forward is the base's.
  int lora_rank = 0;
  float lora_alpha = 8.0f;            // --lora-alpha: PEFT's default
  unsigned lora_targets = kLoraAttn;  // --lora-targets: LoraTarget bits; PEFT's default for GPT-2

  // Throws InvalidArgument naming the field (layers, heads, hidden, seq_len, lora_rank,
  // lora_alpha, lora_targets) and the accepted values.
  void validate() const;

  // V C + T C + L (12 C^2 + 13 C) + 2 C: the base's (frozen under LoRA).
  std::size_t param_count() const;
  // LoRA's trained parameters: L R (sum over the targets of in + out); 0 without LoRA.
  std::size_t lora_param_count() const;

  // Bytes GptModel holds for a micro-batch of B samples (see docs/gpt.md), with BT = B T and
  // S = 1 with checkpointing, L without:
  //   4 * ( BT [ (L+1) C  +  S (15 C + 4 + NH T)  +  (C + 2 V + 3)  +  (10 C + V) ]  +  T T )
  //   + 2 BT
  // and under LoRA, for each block's set the inputs' products with A (R a position and
  // target, k targets) and in backward one more [BT, R]:  + 4 BT R (S k + 1).
  std::size_t activation_bytes(std::size_t micro_batch) const;

  // Floats of the scratch one thread's bf16 products round their operands into, for `rows`
  // positions (B T of its samples) at once: the largest left operand plus the largest right,
  //   max(R max(4C, V), T T)  +  max(4 C C, V C, 4 R C),      R = rows.
  // 0 in fp32 compute.
  std::size_t gemm_scratch_floats(std::size_t rows) const;

  // "GPT-2 (byte-level): 4 layers, 4 heads, hidden 256, context 128, vocab 256"
  std::string describe() const;
};

// The unit table of a config: names, offsets, tensors (as GptModel::units() returns it).
// Under LoRA the units' params are the adapters ("h.{i}.attn.c_attn.lora_A.weight", ...; none
// in the embeddings and the final unit) and their frozen tensors are the base's, as
// gpt_base_units() lays them out. Requires a valid config.
std::vector<UnitInfo> gpt_units(const GptConfig& config);
// The base's table: every parameter trained, the layout above without LoRA.
std::vector<UnitInfo> gpt_base_units(const GptConfig& config);

class GptModel final : public Model {
 public:
  // Validates the config (UsageError).
  explicit GptModel(const GptConfig& config);
  ~GptModel() override;
  GptModel(const GptModel&) = delete;
  GptModel& operator=(const GptModel&) = delete;

  const GptConfig& config() const;

  // Threads that compute each forward and backward (see above): >= 1 (ZERODP_CHECK).
  void set_threads(int threads);
  int threads() const;

  // After the final unit's forward: logits [B, T, 256] and per-position losses [B, T] of the
  // current micro-batch. (A prompt shorter than T can be padded with any bytes: position t
  // sees positions <= t only.)
  std::span<const float> logits() const;
  std::span<const float> losses() const;
  // Inputs [B, T] of the current micro-batch.
  std::span<const std::uint8_t> tokens() const;

  // Model.
  const std::vector<UnitInfo>& units() const override;
  void init_unit(int unit, std::span<float> params, std::uint64_t seed) const override;
  void init_frozen_unit(int unit, std::span<float> frozen, std::uint64_t seed) const override;
  void begin_micro_batch(const MicroBatch& batch) override;
  void forward(int unit, const UnitViews& views) override;
  float loss() const override;
  void backward(int unit, const UnitViews& views) override;
  void set_ledger(Ledger* ledger) override;
  std::size_t activation_bytes() const override;
  std::string describe() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zerodp::model
