// LoRA's adapter counts (catalog::lora_count) against what PEFT prints for the same model,
// rank and targets (print_trainable_parameters(): "trainable params: N || all params: M"),
// and the linears each family names.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "zerodp/catalog/lora.h"
#include "zerodp/common/error.h"

namespace zerodp::catalog {
namespace {

ModelConfig catalogued(std::string_view name) {
  const CatalogueModel* m = find_model(name);
  EXPECT_NE(m, nullptr) << name;
  return parse_model_config(m->config_json, std::string(name));
}

std::uint64_t adapters(const ModelConfig& c, std::uint64_t rank, std::vector<std::string> targets) {
  return lora_count(c, rank, targets, "--lora-targets").adapter_params;
}

TEST(LoraCount, EqualsWhatPeftPrints) {
  // Llama-2-7B, r = 8 on q_proj and v_proj: "trainable params: 4,194,304 || all params:
  // 6,742,609,920" (32 layers x 2 x 8 x (4096 + 4096)).
  const ModelConfig llama2 = catalogued("meta-llama/Llama-2-7b-hf");
  EXPECT_EQ(adapters(llama2, 8, {"q_proj", "v_proj"}), 4'194'304u);
  EXPECT_EQ(model_params(llama2).params + 4'194'304u, 6'742'609'920u);
  // Llama-3-8B, r = 16 on the seven projections: "trainable params: 41,943,040 || all params:
  // 8,072,204,288"; all-linear names the same seven (the head left out).
  const ModelConfig llama3 = catalogued("meta-llama/Meta-Llama-3-8B");
  const std::vector<std::string> seven = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                          "gate_proj", "up_proj", "down_proj"};
  EXPECT_EQ(adapters(llama3, 16, seven), 41'943'040u);
  EXPECT_EQ(adapters(llama3, 16, {"all-linear"}), 41'943'040u);
  EXPECT_EQ(model_params(llama3).params + 41'943'040u, 8'072'204'288u);
  // GPT-2, r = 8 on c_attn (Conv1D 768 -> 2304): "trainable params: 294,912 || all params:
  // 124,734,720".
  const ModelConfig gpt2 = catalogued("openai-community/gpt2");
  EXPECT_EQ(adapters(gpt2, 8, {"c_attn"}), 294'912u);
  EXPECT_EQ(model_params(gpt2).params + 294'912u, 124'734'720u);
}

TEST(LoraCount, MatchesTargetsAsPeftDoes) {
  const ModelConfig gpt2 = catalogued("openai-community/gpt2");
  // "c_proj" ends both attn.c_proj (768 x 768) and mlp.c_proj (3072 -> 768); "mlp.c_proj" one.
  EXPECT_EQ(adapters(gpt2, 8, {"c_proj"}), 12u * 8 * ((768 + 768) + (3072 + 768)));
  EXPECT_EQ(adapters(gpt2, 8, {"mlp.c_proj"}), 12u * 8 * (3072 + 768));
  // all-linear: c_attn, both c_proj and c_fc; the head (tied to wte) left out.
  EXPECT_EQ(adapters(gpt2, 1, {"all-linear"}),
            12u * ((768 + 2304) + (768 + 768) + (768 + 3072) + (3072 + 768)));
  // The head is a linear to name even tied: r (768 + 50257).
  EXPECT_EQ(adapters(gpt2, 2, {"lm_head"}), 2u * (768 + 50257));
  // Mixtral: w1 is every expert's gate (8 a layer), "gate" the router alone (4096 -> 8).
  const ModelConfig mixtral = catalogued("mistralai/Mixtral-8x7B-v0.1");
  EXPECT_EQ(adapters(mixtral, 8, {"w1"}), 32u * 8 * 8 * (4096 + 14336));
  EXPECT_EQ(adapters(mixtral, 8, {"gate"}), 32u * 8 * (4096 + 8));
  // A target given twice, or named two ways, adapts its linears once.
  EXPECT_EQ(adapters(gpt2, 8, {"c_attn", "attn.c_attn", "c_attn"}), 294'912u);
  const LoraCount count = lora_count(gpt2, 8, std::vector<std::string>{"c_attn"}, "--lora-targets");
  ASSERT_EQ(count.targets.size(), 1u);
  EXPECT_EQ(count.targets[0].name, "attn.c_attn");
  EXPECT_EQ(count.targets[0].count, 12u);
  EXPECT_EQ(count.adapted_params, 12u * 768 * 2304);
}

TEST(LinearLayers, ASmallLlamaByHand) {
  // vocab 10, hidden 8, 2 layers, 4 heads of 2, 2 kv heads, MLP 16 (models_test.cc's).
  const ModelConfig c = parse_model_config(
      R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 16})",
      "test");
  const std::vector<LinearLayer> l = linear_layers(c);
  ASSERT_EQ(l.size(), 8u);
  const std::vector<std::tuple<std::string_view, std::uint64_t, std::uint64_t>> want = {
      {"self_attn.q_proj", 8, 8}, {"self_attn.k_proj", 8, 4}, {"self_attn.v_proj", 8, 4},
      {"self_attn.o_proj", 8, 8}, {"mlp.gate_proj", 8, 16},   {"mlp.up_proj", 8, 16},
      {"mlp.down_proj", 16, 8},   {"lm_head", 8, 10}};
  std::uint64_t weights = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(l[i].name, std::get<0>(want[i]));
    EXPECT_EQ(l[i].in, std::get<1>(want[i]));
    EXPECT_EQ(l[i].out, std::get<2>(want[i]));
    EXPECT_EQ(l[i].count, i + 1 < want.size() ? 2u : 1u);
    EXPECT_EQ(l[i].head, i + 1 == want.size());
    weights += l[i].in * l[i].out * l[i].count;
  }
  // The linears and what is not one (embedding 80, norms 2 x 2 x 8 + 8) are every parameter.
  EXPECT_EQ(weights + 80 + 40, model_params(c).params);
}

TEST(LoraCount, RefusesWhatItCannotCount) {
  const ModelConfig llama2 = catalogued("meta-llama/Llama-2-7b-hf");
  auto refusal = [&](std::uint64_t rank, std::vector<std::string> targets) {
    try {
      lora_count(llama2, rank, targets, "--lora-targets");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal(0, {"q_proj"}), "--lora-targets: a LoRA rank must be 1 or more");
  EXPECT_NE(refusal(8, {"qproj"})
                .find("'qproj' names no linear of llama; its linears: "
                      "self_attn.q_proj, self_attn.k_proj"),
            std::string::npos);
  EXPECT_NE(refusal(8, {"all-linear", "q_proj"}).find("give it alone"), std::string::npos);
  // Every name listed once, a prefix of another too (Qwen3-MoE's router beside gate_proj).
  const ModelConfig qwen_moe = parse_model_config(
      R"({"model_type": "qwen3_moe", "vocab_size": 10, "hidden_size": 8,
          "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
          "head_dim": 4, "intermediate_size": 16, "moe_intermediate_size": 4, "num_experts": 4,
          "num_experts_per_tok": 2, "mlp_only_layers": [0]})",
      "test");
  const std::string names = linear_layer_names(qwen_moe);
  EXPECT_NE(names.find("mlp.gate,"), std::string::npos) << names;
  EXPECT_EQ(names.find("self_attn.q_proj"), names.rfind("self_attn.q_proj")) << names;
  EXPECT_NE(refusal(8, {"layers.0.self_attn.q_proj"}).find("by its index"), std::string::npos);
  EXPECT_NE(refusal(8, {""}).find("an empty name"), std::string::npos);
  EXPECT_NE(refusal(8, {"q\x1b[2J"}).find("q\\x1b[2J"), std::string::npos);
  // DeepSeek-V2's router is a module holding a weight, not a linear: PEFT cannot adapt it.
  const ModelConfig deepseek = catalogued("deepseek-ai/DeepSeek-V2-Lite");
  EXPECT_THROW(lora_count(deepseek, 8, std::vector<std::string>{"gate"}, "--lora-targets"),
               UsageError);
  // Rank and shapes past 2^64 saturate.
  EXPECT_EQ(adapters(llama2, UINT64_MAX, {"q_proj"}), UINT64_MAX);
}

TEST(AdapterConfig, ReadsWhatPeftSaves) {
  // As LoraConfig.save_pretrained writes it (PEFT 0.13), fields that change no byte included.
  const LoraSettings lora = parse_adapter_config(R"({
      "alpha_pattern": {}, "auto_mapping": null,
      "base_model_name_or_path": "meta-llama/Llama-2-7b-hf", "bias": "none",
      "fan_in_fan_out": false, "inference_mode": true, "init_lora_weights": true,
      "layer_replication": null, "layers_pattern": null, "layers_to_transform": null,
      "loftq_config": {}, "lora_alpha": 32, "lora_dropout": 0.05, "megatron_config": null,
      "megatron_core": "megatron.core", "modules_to_save": null, "peft_type": "LORA", "r": 8,
      "rank_pattern": {}, "revision": null, "target_modules": ["v_proj", "q_proj"],
      "task_type": "CAUSAL_LM", "use_dora": false, "use_rslora": false})",
                                                 "adapter_config.json");
  EXPECT_EQ(lora.rank, 8u);
  EXPECT_EQ(lora.alpha, 32.0);
  EXPECT_EQ(lora.dropout, 0.05);
  EXPECT_EQ(lora.targets, (std::vector<std::string>{"v_proj", "q_proj"}));
  EXPECT_TRUE(lora.modules_to_save.empty());
  EXPECT_EQ(adapters(catalogued("meta-llama/Llama-2-7b-hf"), lora.rank, lora.targets), 4'194'304u);
  // As PEFT 0.19.1 writes it: the newer fields at their defaults.
  const LoraSettings newer = parse_adapter_config(R"({
      "alora_invocation_tokens": null, "alpha_pattern": {}, "arrow_config": null,
      "auto_mapping": null, "base_model_name_or_path": null, "bias": "none",
      "corda_config": null, "ensure_weight_tying": false, "eva_config": null,
      "exclude_modules": null, "fan_in_fan_out": false, "inference_mode": true,
      "init_lora_weights": true, "layer_replication": null, "layers_pattern": null,
      "layers_to_transform": null, "loftq_config": {}, "lora_alpha": 256.0, "lora_bias": false,
      "lora_dropout": 0.05, "lora_ga_config": null, "megatron_config": null,
      "megatron_core": "megatron.core", "modules_to_save": null, "peft_type": "LORA",
      "peft_version": "0.19.1", "qalora_group_size": 16, "r": 128, "rank_pattern": {},
      "revision": null, "target_modules": ["q_proj", "o_proj"], "target_parameters": null,
      "task_type": "CAUSAL_LM", "trainable_token_indices": null, "use_bdlora": null,
      "use_dora": false, "use_qalora": false, "use_rslora": false})",
                                                  "adapter_config.json");
  EXPECT_EQ(newer.rank, 128u);
  EXPECT_EQ(newer.alpha, 256.0);
  EXPECT_EQ(newer.targets, (std::vector<std::string>{"q_proj", "o_proj"}));
  const LoraSettings all = parse_adapter_config(
      R"({"r": 16, "target_modules": "all-linear", "modules_to_save": ["lm_head"]})", "a.json");
  EXPECT_EQ(all.targets, std::vector<std::string>{"all-linear"});
  EXPECT_EQ(all.modules_to_save, std::vector<std::string>{"lm_head"});
}

TEST(AdapterConfig, RefusesWhatItCannotCountNamingTheField) {
  auto refusal = [](std::string_view text) {
    try {
      parse_adapter_config(text, "a.json");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal(R"({"target_modules": ["q_proj"]})"),
            "a.json: \"r\" must be the LoRA rank, a whole number >= 1, got nothing");
  EXPECT_EQ(refusal(R"({"r": 0, "target_modules": ["q_proj"]})"),
            "a.json: \"r\" must be the LoRA rank, a whole number >= 1, got 0");
  EXPECT_EQ(refusal(R"({"r": 8.5, "target_modules": ["q_proj"]})"),
            "a.json: \"r\" must be the LoRA rank, a whole number >= 1, got 8.5");
  EXPECT_EQ(refusal(R"({"r": 8})"),
            "a.json: \"target_modules\" is missing (a list of module names, or \"all-linear\")");
  EXPECT_NE(refusal(R"({"r": 8, "target_modules": ".*(q|v)_proj"})").find("regular expression"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"r": 8, "target_modules": [""]})").find("\"target_modules\" must hold"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"peft_type": "IA3", "r": 8, "target_modules": ["q"]})").find("peft_type"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"r": 8, "target_modules": ["q"], "lora_dropout": 1})").find("[0, 1)"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"r": 8, "target_modules": ["q"], "lora_alpha": "x"})").find("lora_alpha"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"r": 8, "target_modules": ["q"], "bias": "all"})").find("\"bias\""),
            std::string::npos);
  EXPECT_NE(refusal(R"({"r": 8, "target_modules": ["q"], "use_dora": true})").find("use_dora"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"r": 8, "target_modules": ["q"], "rank_pattern": {"q": 4}})")
                .find("\"rank_pattern\" is set"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"r": 8, "target_modules": ["q"], "lora_bias": true})").find("lora_bias"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"r": 8, "target_modules": ["q"], "target_parameters": ["w"]})")
                .find("\"target_parameters\" is set"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"r": 8, "target_modules": ["q"], "layers_to_transform": 0})")
                .find("\"layers_to_transform\" is set"),
            std::string::npos);
  // Hostile files: one line each, bounded, no terminal escapes.
  EXPECT_NE(refusal("[").find("a.json: not JSON"), std::string::npos);
  EXPECT_NE(refusal(std::string(100'000, '[')).find("a.json: "), std::string::npos);
  EXPECT_NE(refusal(R"({"r": 1e400, "target_modules": ["q"]})").find("a.json: "),
            std::string::npos);
  const std::string escape =
      refusal("{\"r\": 8, \"target_modules\": \"\\u001b[2J" + std::string(10'000, 'x') + "\"}");
  EXPECT_EQ(escape.find('\x1b'), std::string::npos);
  EXPECT_LT(escape.size(), 400u);
  EXPECT_EQ(refusal("[1]"), "a.json: expected a JSON object (adapter_config.json)");
}

TEST(SavedModules, AreTrainableCopiesOfTheEmbeddingsAndTheHead) {
  const ModelConfig llama2 = catalogued("meta-llama/Llama-2-7b-hf");
  const std::vector<std::string> both = {"embed_tokens", "model.lm_head"};
  EXPECT_EQ(saved_module_params(llama2, both, "modules_to_save"), 2u * 32'000 * 4096);
  const ModelConfig gpt2 = catalogued("openai-community/gpt2");
  const std::vector<std::string> wpe = {"wpe"};
  EXPECT_EQ(saved_module_params(gpt2, wpe, "modules_to_save"), 1024u * 768);
  const std::vector<std::string> norm = {"norm"};
  try {
    saved_module_params(llama2, norm, "modules_to_save");
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "modules_to_save: 'norm' is not a module whose copy is counted; counted for llama: "
              "embed_tokens, lm_head");
  }
}

TEST(LoraActivations, CheckpointingMakesTheFirstLayerLikeTheOthers) {
  // Llama-2-7B, all-linear r 16, 4 x 4096 tokens: with checkpointing every layer's input needs
  // a gradient (transformers' enable_input_require_grads), so layers are alike and full
  // checkpointing keeps each layer's input and one layer; without it the first layer keeps less.
  const ModelConfig c = catalogued("meta-llama/Llama-2-7b-hf");
  const LoraCount count = lora_count(c, 16, std::vector<std::string>{"all-linear"}, "t");
  LoraShape lora{16, 0.0, {}, false};
  for (const LoraTarget& t : count.targets) lora.adapted.push_back(t.name);
  const auto saved = lora_saved_tensor_bytes(c, 4096, 4, Attention::flash, lora, "t");
  ASSERT_TRUE(saved.has_value());
  EXPECT_LT(saved->first_layer, saved->dense_layer);
  EXPECT_EQ(saved->total,
            saved->first_layer + 31 * saved->dense_layer + saved->outside + saved->rope_tables);
  const auto none =
      lora_activation_bytes(c, 4096, 4, plan::Checkpointing::none, Attention::flash, lora, "t");
  const auto full =
      lora_activation_bytes(c, 4096, 4, plan::Checkpointing::full, Attention::flash, lora, "t");
  ASSERT_TRUE(none && full);
  EXPECT_EQ(none->layers, saved->total - saved->outside);
  const std::uint64_t T = 4 * 4096;
  EXPECT_EQ(full->layers, 2 * T * 4096 * 32 + saved->dense_layer + saved->rope_tables);
  // A LoRA run keeps less than the full fine-tune's layer: no normalized rows, no inputs of
  // frozen linears beyond the adapters' (all-linear keeps the same inputs), lora_A's outputs.
  const auto full_ft = saved_tensor_bytes(c, 4096, 4, Attention::flash);
  ASSERT_TRUE(full_ft.has_value());
  EXPECT_EQ(full_ft->dense_layer - saved->dense_layer, 2 * 2 * T * 4096 - 7 * (2 * T * 16 + 8));
}

// A LoRA step's FLOPs against the full fine-tune's of the same model: the base's backward
// loses its weight gradients (2 N of the 6 N), the adapters add 6 P for the P a token passes
// through, and full checkpointing computes the forward again, the adapters' included.
TEST(LoraFlops, AreTheFullFineTunesLessTheBasesWeightGradientsPlusTheAdapters) {
  const ModelConfig llama = catalogued("meta-llama/Llama-2-7b-hf");
  const LoraCount count = lora_count(llama, 16, std::vector<std::string>{"all-linear"}, "t");
  LoraShape lora{16, 0.0, {}, false};
  for (const LoraTarget& t : count.targets) lora.adapted.push_back(t.name);
  const double p = double(count.adapter_params);  // every layer's: a token passes them all
  for (const plan::Checkpointing c :
       {plan::Checkpointing::none, plan::Checkpointing::selective, plan::Checkpointing::full}) {
    const TrainingFlops full = training_flops(llama, 4096, c);
    const TrainingFlops f = lora_training_flops(llama, 4096, c, lora);
    EXPECT_EQ(f.params, full.params);
    EXPECT_EQ(f.attention, full.attention);
    EXPECT_EQ(f.forward, full.forward + 2 * p);
    EXPECT_EQ(f.model, full.model - 2 * full.params + 6 * p);
    const double recomputed = c == plan::Checkpointing::full        ? f.forward
                              : c == plan::Checkpointing::selective ? 32 * f.attention
                                                                    : 0;
    EXPECT_EQ(f.hardware, f.model + recomputed);
  }
  // Mixtral routes a token to 2 of its 8 experts: their adapters count a quarter.
  const ModelConfig mixtral = catalogued("mistralai/Mixtral-8x7B-v0.1");
  const std::vector<std::string> w1{"w1"}, q{"q_proj"};
  LoraShape experts{8, 0.0, {}, false}, attention{8, 0.0, {}, false};
  for (const LoraTarget& t : lora_count(mixtral, 8, w1, "t").targets)
    experts.adapted.push_back(t.name);
  for (const LoraTarget& t : lora_count(mixtral, 8, q, "t").targets)
    attention.adapted.push_back(t.name);
  const double full_model = training_flops(mixtral, 1024, plan::Checkpointing::none).model;
  const double n = training_flops(mixtral, 1024, plan::Checkpointing::none).params;
  // w1: 4096 -> 14336 in each of 8 experts of 32 layers; q_proj: 4096 -> 4096 in 32 layers.
  EXPECT_EQ(lora_training_flops(mixtral, 1024, plan::Checkpointing::none, experts).model,
            full_model - 2 * n + 6 * (8.0 * (4096 + 14336) * 32 * 8 * 2 / 8));
  EXPECT_EQ(lora_training_flops(mixtral, 1024, plan::Checkpointing::none, attention).model,
            full_model - 2 * n + 6 * (8.0 * (4096 + 4096) * 32));
}

TEST(LoraActivations, OtherFamiliesAreRefusedByName) {
  const ModelConfig deepseek = catalogued("deepseek-ai/DeepSeek-V2-Lite");
  try {
    lora_saved_tensor_bytes(deepseek, 128, 1, Attention::flash, LoraShape{8, 0, {}, false},
                            "--lora-rank");
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--lora-rank: what a LoRA run keeps for backward is counted for gpt2, gpt_neox, "
              "llama, mistral, qwen2, qwen3, phi3, olmo2, gemma2, gemma3_text, mixtral, "
              "qwen2_moe and qwen3_moe; not yet for deepseek_v2");
  }
}

TEST(Nf4, AWeightsBytesAreWhatQuantize4bitKeeps) {
  // 4096 x 4096 with double quantization: codes 8,388,608; 262,144 blocks of 64, a byte each;
  // 1,024 blocks of 256 of those, 4 bytes each; the dynamic map 1,024, the offset 4 and the NF4
  // table 64: 4.127 bits a weight, the QLoRA paper's 4 + 8/64 + 32/(64·256).
  const std::uint64_t n = 4096ull * 4096;
  EXPECT_EQ(nf4_tensor_bytes(n, {}), 8'388'608u + 262'144 + 4'096 + 1'024 + 4 + 64);
  EXPECT_NEAR(8.0 * double(nf4_tensor_bytes(n, {})) / double(n), 4.0 + 8.0 / 64 + 32.0 / (64 * 256),
              8.0 * 1'092 / double(n));
  // Without it: an fp32 absmax a block, 4.5 bits a weight, and the table.
  EXPECT_EQ(nf4_tensor_bytes(n, {.double_quant = false}), 8'388'608u + 4 * 262'144 + 64);
  // 4096 x 11008: 704,512 blocks, 2,752 blocks of those.
  EXPECT_EQ(nf4_tensor_bytes(4096ull * 11008, {}), 22'544'384u + 704'512 + 4 * 2'752 + 1'092);
  // 7 elements: four bytes of codes (the last nibble pads), one block, one block of blocks.
  EXPECT_EQ(nf4_tensor_bytes(7, {}), 4u + 1 + 4 + 1'092);
  // bfloat16 storage holds the same codes in (n + 1) // 4 elements of 2 bytes, as
  // quantize_4bit allocates them: 4096 x 4096 is the same bytes; 7 elements take 4.
  EXPECT_EQ(nf4_tensor_bytes(n, {.storage_bytes = 2}), nf4_tensor_bytes(n, {}));
  EXPECT_EQ(nf4_tensor_bytes(7, {.storage_bytes = 2}), 4u + 1 + 4 + 1'092);
  // The largest count is exact: 2^63 bytes of codes and 2^58 blocks' fp32 absmax.
  EXPECT_EQ(nf4_tensor_bytes(UINT64_MAX, {.double_quant = false}),
            (1ull << 63) + 4 * (1ull << 58) + 64);
}

TEST(Nf4, Llama2BaseQuantizesEveryLinearButTheHead) {
  // 32 layers of q, k, v, o (4096 x 4096) and gate, up, down (4096 x 11008), each its own
  // tensor; the embeddings, the head and the norms (262,410,240) keep 16 bits.
  const QuantizedBase base = nf4_base(catalogued("meta-llama/Llama-2-7b-hf"), {});
  EXPECT_EQ(base.quantized_tensors, 32u * 7);
  EXPECT_EQ(base.quantized_params, 32ull * (4 * 4096 * 4096 + 3 * 4096 * 11008));
  EXPECT_EQ(base.kept_params, 6'738'415'616u - base.quantized_params);
  EXPECT_EQ(base.kept_params, 2u * 32'000 * 4096 + 65 * 4096);
  EXPECT_EQ(base.quantized_bytes,
            32u * (4 * nf4_tensor_bytes(4096 * 4096, {}) + 3 * nf4_tensor_bytes(4096 * 11008, {})));
  EXPECT_EQ(base.largest_quantized, 4096u * 11008);
  // Mixtral's routers are linears too, and quantized: 32 of 4096 x 8 beside the 768 experts'
  // three each.
  const QuantizedBase mixtral = nf4_base(catalogued("mistralai/Mixtral-8x7B-v0.1"), {});
  EXPECT_EQ(mixtral.quantized_tensors, 32u * (4 + 8 * 3 + 1));
}

}  // namespace
}  // namespace zerodp::catalog
