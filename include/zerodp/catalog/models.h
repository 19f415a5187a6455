// A published model's size from its Hugging Face config.json: the exact parameter count, the
// parameters one token passes through, and the largest single layer (what DeepSpeed's ZeRO-3
// estimator calls largest_layer_params).
//
// Families (model_type), counted module by module as the Hugging Face implementations build
// them:
//   gpt2      learned positions, fused qkv, LayerNorm and every linear with a bias, MLP 4h (or
//             n_inner), LM head tied unless tie_word_embeddings is false
//   gpt_neox  (Pythia) rotary positions (no parameters), fused qkv with bias, LayerNorm, MLP of
//             intermediate_size with biases, untied embed_out unless tied; a parallel residual
//             changes the order of work, not the count
//   llama, mistral   RMSNorm (weight only), no biases unless attention_bias / mlp_bias,
//             grouped-query attention (num_key_value_heads, head_dim), gated MLP (SwiGLU: gate,
//             up, down of intermediate_size), LM head untied unless tie_word_embeddings
//   qwen2     llama with biases on q, k and v
//   qwen3     llama with an RMSNorm over each head of q and of k (q_norm, k_norm: head_dim)
//   phi3      llama with q, k, v fused in one linear and gate and up in another
//   olmo2     llama with RMSNorms over the whole q and k (heads x head_dim, kv heads x
//             head_dim) and the norms after attention and MLP instead of before
//   gemma2, gemma3_text   llama with four RMSNorms a layer (before and after attention and
//             MLP), tied by default; gemma3 adds qwen3's per-head q and k norms
//   mixtral   llama with every MLP a mixture of num_local_experts gated experts, a router of
//             hidden x experts without bias, num_experts_per_tok experts active per token
//   qwen3_moe qwen3 with mixtures of num_experts experts of moe_intermediate_size; layers in
//             mlp_only_layers or off the decoder_sparse_step keep a dense MLP
//   qwen2_moe qwen2 with those mixtures plus a shared expert of
//             shared_expert_intermediate_size that every token passes, scaled by a sigmoid
//             gate (hidden x 1)
//   deepseek_v2   multi-head latent attention (q through q_lora_rank when given, k and v
//             through a kv_lora_rank latent with an RMSNorm, a rope part of qk_rope_head_dim
//             shared by the heads), the first first_k_dense_replace layers dense, the others a
//             mixture of n_routed_experts plus n_shared_experts fused into one MLP
// The family comes from model_type; any other model_type is refused, naming the ones above.
//
// Contract: pure. parse_model_config() throws UsageError with one line naming the source, the
// field and what it expected; counts saturate at UINT64_MAX rather than wrap. The catalogue's
// configs are copied from the published config.json files; model_params() of each equals its
// published count (tests/catalog/models_test.cc).
//
// Hub ids: find_model() takes an entry's name, its hf_id, or any Hub id of hub_aliases(), each
// matched whole and case-insensitively ("meta-llama/llama-3.1-8b-instruct"). An alias is a
// published model whose config.json sets every size-setting field (model_type, vocabulary,
// widths, layers, heads, head_dim, MLP and expert sizes, tied embeddings, biases) as its
// entry's does, so it has the entry's parameters and activations; a variant that differs in
// any of them (Mistral-7B-Instruct-v0.3's 32768-token vocabulary against v0.1's 32000) is an
// entry of its own or absent. An alias resolves to its entry: the plan shows the entry's name
// and cites the entry's hf_id, the config its count was checked against, whichever id was
// typed. model_catalogue() and catalogue_names() list the entries alone.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zerodp/plan/activations.h"
#include "zerodp/plan/torch_runtime.h"

namespace zerodp::catalog {

enum class QkNorm { none, per_head, whole };  // norms of q and k after their projections

// DeepSeek-V2's multi-head latent attention: q = W_qb norm(W_qa x) (or W_q x without a q
// rank), [k_nope, v] = W_kvb norm(c), c and the rope part k_rope from W_kva x.
struct LatentAttention {
  std::uint64_t q_rank = 0;  // 0: q projected from the hidden state directly
  std::uint64_t kv_rank = 0, rope_dim = 0, nope_dim = 0, v_dim = 0;
};

struct ModelConfig {
  std::string model_type;
  std::uint64_t vocab = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  std::uint64_t intermediate = 0;  // a dense MLP's width
  std::uint64_t positions = 0;     // learned position embeddings (gpt2); 0 for rotary
  bool tied_embeddings = false;
  bool gated_mlp = false;      // gate, up, down (SwiGLU, GeGLU) rather than up, down
  bool fused_qkv = false;      // q, k, v in one linear (gpt2, gpt_neox, phi3)
  bool fused_gate_up = false;  // gate and up in one linear (phi3)
  bool qkv_bias = false;       // biases on the q, k, v projections
  bool out_bias = false;       // bias on the attention output projection
  bool mlp_bias = false;       // biases on the MLP's linears
  bool norm_bias = false;      // LayerNorm (weight and bias) rather than RMSNorm (weight)
  bool parallel_residual = false;
  std::uint64_t norms_per_layer = 2;  // gemma: 4
  QkNorm qk_norm = QkNorm::none;
  std::optional<LatentAttention> latent;  // deepseek_v2
  // A mixture of experts; experts == 0 for dense models. dense_layers of the layers keep a
  // dense MLP of `intermediate`; the others hold `experts` experts of expert_intermediate.
  std::uint64_t experts = 0;
  std::uint64_t experts_per_token = 0;
  std::uint64_t expert_intermediate = 0;
  std::uint64_t shared_intermediate = 0;  // a shared expert every token passes; 0 for none
  bool shared_expert_gate = false;        // qwen2_moe: sigmoid(hidden x 1) scales it
  std::uint64_t dense_layers = 0;
  bool first_layer_dense = true;       // a mixture's: whether layer 0 keeps the dense MLP
  bool attention_dropout = false;      // dropout on the attention probabilities (> 0)
  bool hidden_dropout = false;         // dropout on each residual branch (> 0)
  bool attention_softcap = false;      // gemma2: tanh soft-capping of the attention scores
  bool final_softcap = false;          // gemma2: tanh soft-capping of the logits
  bool embedding_dropout = false;      // dropout on the embeddings' output (gpt2, gpt_neox, phi3)
  bool norm_topk_prob = false;         // a mixture's top-k routing weights divided by their sum
  bool gelu_formula = false;           // gpt2's gelu_new: the tanh formula as separate operations
  bool group_limited_routing = false;  // deepseek_v2's topk_method group_limited_greedy
  // Rotary positions: the dimensions of each head they turn (0 with learned positions) and
  // how many cos/sin tables a forward computes (gemma3: local and global when both occur).
  std::uint64_t rotary_dim = 0;
  std::uint64_t rope_tables = 1;
  // gemma3 with both tables: the first layer the only one of its kind, so its table is kept
  // only where that layer's q or k needs a gradient (a LoRA run's first layer: lora.h).
  bool first_table_alone = false;
  std::uint64_t moe_layers() const { return experts > 0 ? layers - dense_layers : 0; }
};

struct ModelParams {
  std::uint64_t params = 0;                // every parameter, tied ones once
  std::uint64_t active_params = 0;         // those one token passes through (differs for MoE)
  std::uint64_t largest_layer_params = 0;  // the largest module's own parameters
  std::uint64_t embedding_params = 0;      // token (and position) embeddings
  std::uint64_t per_layer_params = 0;      // one transformer block (a mixture's, if any)
  std::uint64_t outside_params = 0;        // outside the blocks: embeddings, final norm, head
};

// json_text: a config.json; source names it in errors ("--model-config llama.json").
ModelConfig parse_model_config(std::string_view json_text, const std::string& source);
ModelParams model_params(const ModelConfig& config);

// Every linear of the model (nn.Linear, gpt2's Conv1D), named as the family's implementation
// names it within a layer ("self_attn.q_proj", "mlp.experts.*.down_proj", "*" standing for an
// expert's index) or outside the layers (the head: "lm_head", gpt_neox's "embed_out", listed
// also when tied to the embeddings, as transformers builds it there too). `count` is how many
// the model holds: its layers (of that kind, dense or mixture) times its experts. The same
// modules model_params() counts, so a layer's linears and its norms sum to its parameters.
struct LinearLayer {
  std::string_view name;
  std::uint64_t in = 0, out = 0, count = 0;
  bool bias = false;
  bool head = false;  // the output layer, which PEFT's "all-linear" leaves out
};
std::vector<LinearLayer> linear_layers(const ModelConfig& config);

// The floating-point operations of one token of training, forward and backward (a multiply-add
// counts 2), in sequences of s tokens, with L layers:
//   params     N: the parameters a token's products use: model_params()'s active parameters
//              less the embeddings' (a lookup, not a product), plus the LM head's when it is tied
//              to them (norms' and biases' few elementwise parameters are counted as products)
//   attention  A: one layer's attention products in the forward, per token: 2 s w_qk for the
//              scores and 2 s w_v for their use of the values (w: heads x each one's width), over
//              the whole sequence, as PaLM counts (a causal kernel computes about half)
//   model      6 N + 3 L A: the forward (2 N + L A) and the backward (twice the forward);
//              Chowdhery et al. 2022 (PaLM), appendix B: the "model FLOPs" MFU divides
//   hardware   model and what activation checkpointing computes again: with full checkpointing
//              the forward (8 N + 4 L A), with selective the attention products (6 N + 4 L A,
//              Korthikanti et al. 2022): what the GPU computes
// Exact in double up to 2^53 FLOPs a token (models past 10^15 parameters).
struct TrainingFlops {
  double params = 0;     // N
  double attention = 0;  // A
  double model = 0;
  double hardware = 0;
  double forward = 0;  // of model: the forward's, 2 N + L A
};
TrainingFlops training_flops(const ModelConfig& config, std::uint64_t seq_len,
                             plan::Checkpointing checkpointing);

// The parameters of the tensors with at most `max_numel` elements each (norm weights, biases,
// a mixture's router), counted over the whole model: what ZeRO-3 keeps whole on every GPU
// below DeepSpeed's stage3_param_persistence_threshold instead of partitioning.
std::uint64_t small_tensor_params(const ModelConfig& config, std::uint64_t max_numel);

// The parameters DeepSpeed's ZeRO-3 keeps gathered at the turn from forward to backward
// because they are used again within `max_reuse_distance` elements of its trace
// (stage3_max_reuse_distance; partitioned_param_coordinator.py:543-551): walking the forward
// back from the head, every module whose successors in the forward hold fewer than half the
// distance (the trace passes them twice, forward and back, before the module's reuse). The
// layers' modules in the order of their forward; a mixture's dense layers taken to be the
// first ones, as in every published config. Exact for distances up to 2^64 - 1.
std::uint64_t reuse_kept_params(const ModelConfig& config, std::uint64_t max_reuse_distance);

// Activation bytes one rank keeps for backward in one micro-batch of b sequences of s tokens,
// with 16-bit parameters and activations, as the Hugging Face implementations keep them
// (model_activations.cc, module by module): every tensor autograd saves, counted once per
// storage at its whole size, as PyTorch counts it (tests/plan/torch_reference checks the sums
// against PyTorch's own, to the byte, for every family, in eager attention). T = sb tokens,
// q and k the widths of the query and of each of key and value (heads x head_dim, kv heads x
// head_dim), I the MLP width, a the heads, V the vocabulary; under torch 2.x on CUDA
// (torch_runtime.h), a llama layer keeps
//   16Th + 8TI + 8Tq + 6as²b + 8T + 8
// the input norm and the post-attention norm (an fp32 copy, rsqrt per row and the 16-bit
// normalized rows: 6Th + 4T each), the projections' input, q and k copied by matmul, k and v
// at every head (repeat_kv materialises grouped heads: they save nothing), the output
// projection's input, the fp32 softmax and its 16-bit copy (6 bytes a score), and the gated
// MLP's input, gate, activation, up and product. The families differ as their code does
// (q/k norms, gemma's four fp32 norms and soft-caps, a mixture's router and k experts a token,
// latent attention, GPT-2's LayerNorm and tanh GELU); flash attention keeps q, k, v at their
// own widths (a fused projection's whole output when v is a view of it; DeepSeek's padded v
// and output) and an fp32 log-sum-exp (4aT) instead of the scores, as flash_attn's code saves
// them (the eager terms are the ones checked against PyTorch). Outside the layers: the
// token ids, the final norm, the head's input and the loss's fp32 log-softmax (4TV) with the
// labels; and while the loss runs backward, its two fp32 gradients (8TV): with 128k-152k
// vocabularies these can pass all the layers'. Selective recomputation drops the s² terms;
// full checkpointing keeps each layer's input (2Th) and one layer's activations while it is
// recomputed in backward.
// SDPA (PyTorch's scaled_dot_product_attention, transformers' default attn_implementation)
// keeps what flash attention keeps and its own output besides (model_activations.cc).
enum class Attention { eager, sdpa, flash };
std::string_view attention_name(Attention attention);  // "eager", "sdpa", "flash"

// What autograd saves, without checkpointing.
struct SavedTensors {
  std::uint64_t dense_layer = 0;  // a layer with a dense MLP (0 when there is none)
  std::uint64_t moe_layer = 0;    // a mixture's layer (0 for a dense model)
  std::uint64_t outside = 0;      // embedding, final norm, LM head, loss
  std::uint64_t rope_tables = 0;  // the rotary cos/sin, computed once, saved by the layers
  std::uint64_t total = 0;
  // The first layer, where it differs from dense_layer (a LoRA run's: catalog/lora.h); else
  // equal to it.
  std::uint64_t first_layer = 0;
};
// nullopt when the bytes do not fit in 64 bits; seq_len, micro_batch >= 1.
std::optional<SavedTensors> saved_tensor_bytes(
    const ModelConfig& config, std::uint64_t seq_len, std::uint64_t micro_batch,
    Attention attention, const plan::TorchRuntime& runtime = plan::kCudaTorch2);

struct ModelActivations {
  std::uint64_t per_layer = 0;        // one layer's, without checkpointing (the largest)
  std::uint64_t layers = 0;           // all layers', as the checkpointing keeps them
  std::uint64_t logits_and_loss = 0;  // saved outside the layers, and the loss's gradients
  std::uint64_t total = 0;
};
// nullopt when the bytes do not fit in 64 bits; seq_len, micro_batch >= 1.
std::optional<ModelActivations> model_activation_bytes(
    const ModelConfig& config, std::uint64_t seq_len, std::uint64_t micro_batch,
    plan::Checkpointing checkpointing, Attention attention,
    const plan::TorchRuntime& runtime = plan::kCudaTorch2);

struct CatalogueModel {
  std::string_view name;           // what --model takes
  std::string_view hf_id;          // where its config.json is published
  std::uint64_t published_params;  // its published count (the safetensors, a card, a paper)
  std::string_view config_json;    // its config.json's fields that set the size
};
std::span<const CatalogueModel> model_catalogue();

// A Hub id with the same size-setting config.json fields as a catalogue entry: an instruct,
// chat or "-it" release of it, a fine-tune published by the same organisation, or the name
// the repository had before.
struct HubAlias {
  std::string_view hf_id;  // "meta-llama/Llama-3.1-8B-Instruct"
  std::string_view model;  // the entry's name: "llama-3.1-8b"
};
std::span<const HubAlias> hub_aliases();

// The entry `name` names (its name, its hf_id or an alias's Hub id; see the contract above),
// or nullptr.
const CatalogueModel* find_model(std::string_view name);
// "gpt2, gpt2-medium, ..." for error messages: the entries' names, not the aliases.
std::string catalogue_names();
// The name or Hub id `name` most likely means (catalog/names.h), as the catalogue spells it, or
// "": "llama3-8b" -> "llama-3-8b", "Qwen/Qwen2.5-7B-Instruc" -> "Qwen/Qwen2.5-7B-Instruct".
std::string suggest_model(std::string_view name);

}  // namespace zerodp::catalog
