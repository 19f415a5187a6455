// Parameter counts from config.json (catalog::model_params) against the counts each family's
// publishers give, and the parsing's one-line errors.
#include <gtest/gtest.h>

#include "zerodp/catalog/models.h"
#include "zerodp/common/error.h"

namespace zerodp::catalog {
namespace {

TEST(ModelParams, EveryCatalogueModelHasItsPublishedCount) {
  // GPT-2 (HF), Pythia (its README's "total params"), Llama 2, 3, 3.1 (to 405B), 3.2 and 3.3,
  // TinyLlama, SmolLM2, Mistral (v0.1 and v0.3) and Mistral NeMo, Mixtral, Qwen2.5 (0.5B to
  // 72B), Qwen3 (0.6B to 32B), Qwen3-30B-A3B, Qwen1.5-MoE, Gemma 2 and 3, Phi-3 mini and
  // medium, Phi-4 and Phi-4-mini, OLMo 2 (1B to 32B), DeepSeek-V2-Lite (the totals of their
  // published safetensors, or a port's count of them where catalogue.cc says so): every
  // family's shape, every count exact.
  ASSERT_GE(model_catalogue().size(), 59u);
  for (const CatalogueModel& m : model_catalogue()) {
    const ModelConfig c = parse_model_config(m.config_json, std::string(m.name));
    EXPECT_EQ(model_params(c).params, m.published_params) << m.name;
  }
}

TEST(ModelParams, ASmallLlamaCountedByHand) {
  // vocab 10, hidden 8, 2 layers, 4 heads of 2, 2 kv heads, MLP 16, untied:
  // q 8x8, k and v 8x4, o 8x8 = 192; gate, up, down 3 x 8 x 16 = 384; two RMSNorms 16;
  // per layer 592; embedding and head 2 x 80; final norm 8: 2 x 592 + 160 + 8 = 1352.
  const ModelConfig c = parse_model_config(
      R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 16})",
      "test");
  const ModelParams p = model_params(c);
  EXPECT_EQ(p.per_layer_params, 592u);
  EXPECT_EQ(p.params, 1352u);
  EXPECT_EQ(p.active_params, 1352u);
  EXPECT_EQ(p.largest_layer_params, 128u);  // gate or up: 8 x 16
  // Tied, the head is the embedding: 80 fewer. qwen2 adds the q, k, v biases: 8 + 4 + 4.
  EXPECT_EQ(model_params(parse_model_config(
                             R"({"model_type": "qwen2", "vocab_size": 10, "hidden_size": 8,
                                 "num_hidden_layers": 2, "num_attention_heads": 4,
                                 "num_key_value_heads": 2, "intermediate_size": 16,
                                 "tie_word_embeddings": true})",
                             "test"))
                .params,
            1352u - 80 + 2 * 16);
}

TEST(ModelParams, MixtralActivatesTwoOfEightExperts) {
  // Mixtral 8x7B: 46.7B in all, 12.9B through which a token passes (its model card's figures:
  // "46.7B total", "12.9B active"); the largest module is the 32000 x 4096 embedding.
  const ModelParams p =
      model_params(parse_model_config(find_model("mixtral-8x7b")->config_json, "mixtral"));
  EXPECT_EQ(p.params, 46'702'792'704u);
  EXPECT_EQ(p.active_params, 12'879'925'248u);
  EXPECT_EQ(p.largest_layer_params, 32000u * 4096);
  // Dense models pass every parameter.
  const ModelParams dense =
      model_params(parse_model_config(find_model("llama-3-8b")->config_json, "llama"));
  EXPECT_EQ(dense.active_params, dense.params);
  EXPECT_EQ(dense.largest_layer_params, 128256u * 4096);
}

TEST(ModelParams, SmallTensorsAreTheNormsBiasesAndRouters) {
  // What ZeRO-3 keeps whole below DeepSpeed's default persistence threshold of 1e5 elements.
  auto small = [](const char* name, std::uint64_t threshold) {
    return small_tensor_params(parse_model_config(find_model(name)->config_json, name), threshold);
  };
  // Llama-3-8B: two RMSNorm weights a layer and the final one, 4096 each.
  EXPECT_EQ(small("llama-3-8b", 100'000), (2 * 32 + 1) * 4096u);
  // GPT-2: per layer two LayerNorms (weight, bias), the qkv bias (2304), the output bias, the
  // MLP's biases (3072, 768); and the final LayerNorm. Positions (1024 x 768) are too large.
  EXPECT_EQ(small("gpt2", 100'000), 12 * (4 * 768 + 2304 + 768 + 3072 + 768) + 2 * 768u);
  // Mixtral: the norms and the 4096 x 8 router of each layer.
  EXPECT_EQ(small("mixtral-8x7b", 100'000), 32 * (2 * 4096 + 4096 * 8) + 4096u);
  // A threshold above every tensor keeps the whole model; the exact size is included.
  const ModelConfig gpt2 = parse_model_config(find_model("gpt2")->config_json, "gpt2");
  EXPECT_EQ(small_tensor_params(gpt2, UINT64_MAX), model_params(gpt2).params);
  EXPECT_EQ(small_tensor_params(gpt2, 767), 0u);
  EXPECT_EQ(small_tensor_params(gpt2, 768), 12 * (4 * 768 + 2 * 768) + 2 * 768u);
}

TEST(ModelParams, MixturesCountTheExpertsATokenPasses) {
  auto params = [](const char* name) {
    return model_params(parse_model_config(find_model(name)->config_json, name));
  };
  // Qwen3-30B-A3B ("3.3B activated"): per layer attention 2048 x (4096 + 2 x 512) + 4096 x
  // 2048 + q and k norms 2 x 128 = 18,874,624, norms 4096, 8 of 128 experts of 3 x 2048 x 768
  // and the 2048 x 128 router: 56,889,600; 48 layers, embedding and head 2 x 151936 x 2048 and
  // the final norm.
  EXPECT_EQ(params("qwen3-30b-a3b").active_params, 48 * 56'889'600u + 622'331'904u);
  // Qwen1.5-MoE-A2.7B ("2.7B activated"): 4 of 60 experts, and the shared expert every token
  // passes, with its gate.
  const std::uint64_t qwen15_layer =
      16'783'360 + 4096 + 4 * 3 * 2048 * 1408 + 3 * 2048 * 5632 + 2048 + 60 * 2048;
  EXPECT_EQ(params("qwen1.5-moe-a2.7b").active_params, 24 * qwen15_layer + 622'331'904u);
  // DeepSeek-V2-Lite: the first layer is dense (MLP 3 x 2048 x 10944), the 26 others hold 64
  // experts and 2 shared ones; 6 routed experts a token.
  const std::uint64_t attention =
      2048 * 16 * 192 + 2048 * 576 + 512 + 512 * 16 * 256 + 16 * 128 * 2048;
  const std::uint64_t dense = attention + 4096 + 3 * 2048 * 10944;
  const std::uint64_t mixture_active =
      attention + 4096 + 6 * 3 * 2048 * 1408 + 3 * 2048 * 2816 + 64 * 2048;
  EXPECT_EQ(params("deepseek-v2-lite").active_params,
            dense + 26 * mixture_active + 2 * 102400 * 2048u + 2048);
  // Phi-3 fuses q, k, v (3072 x 9216) and gate and up (3072 x 16384); the embedding is larger.
  EXPECT_EQ(params("phi-3-mini").largest_layer_params, 32064u * 3072);
}

TEST(ModelParams, QwenMixturesKeepDenseLayersWhereTheConfigSays) {
  // 4 layers, hidden 8, 2 heads of 4: attention 4 x 64 = 256 (+ qkv biases 24 in qwen2_moe),
  // norms 16. A dense MLP of 16: 384. A mixture of 4 experts of 4: 4 x 96 + router 32 = 416.
  const char* base = R"({"model_type": "qwen3_moe", "vocab_size": 10, "hidden_size": 8,
      "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 2,
      "intermediate_size": 16, "moe_intermediate_size": 4, "num_experts": 4,
      "num_experts_per_tok": 2, "tie_word_embeddings": true)";
  auto total = [&](const std::string& extra) {
    return model_params(parse_model_config(std::string(base) + extra + "}", "test")).params;
  };
  // qwen3_moe's q and k norms: 2 x head_dim = 8 a layer. Outside: embedding 80, final norm 8.
  const std::uint64_t attention = 256 + 16 + 8, outside = 88;
  EXPECT_EQ(total(""), 4 * (attention + 416) + outside);
  EXPECT_EQ(total(R"(, "mlp_only_layers": [0, 3])"),
            2 * (attention + 416) + 2 * (attention + 384) + outside);
  EXPECT_EQ(total(R"(, "decoder_sparse_step": 2)"),
            2 * (attention + 416) + 2 * (attention + 384) + outside);
  // 2^32 layers, every second sparse: counted, not walked, and each kind half of them.
  const ModelConfig huge = parse_model_config(
      R"({"model_type": "qwen3_moe", "vocab_size": 10, "hidden_size": 8,
          "num_hidden_layers": 4294967296, "num_attention_heads": 2, "intermediate_size": 16,
          "moe_intermediate_size": 4, "num_experts": 4, "num_experts_per_tok": 2,
          "decoder_sparse_step": 2, "mlp_only_layers": [1, 2]})",
      "test");
  EXPECT_EQ(huge.dense_layers, (1ull << 31) + 1);  // layer 2 is dense anyway, layer 1 was not
  for (const char* bad : {R"(, "mlp_only_layers": [4])", R"(, "mlp_only_layers": [1, 1])",
                          R"(, "mlp_only_layers": "0")"}) {
    EXPECT_THROW(total(bad), UsageError) << bad;
  }
}

TEST(ModelParams, NormsOfQAndKArePerHeadOrWhole) {
  // hidden 8, 2 heads of 4, 1 kv head: qwen3 and gemma3 norm each head (4 + 4 a layer), olmo2
  // the whole q (8) and k (4); gemma has four norms a layer where llama has two.
  const std::string shape = R"("vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
      "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 16,
      "tie_word_embeddings": true})";
  auto small = [&](const char* type) {
    return small_tensor_params(
        parse_model_config(std::string(R"({"model_type": ")") + type + "\", " + shape, "t"), 16);
  };
  EXPECT_EQ(small("llama"), 2 * 8 + 8u);
  EXPECT_EQ(small("qwen3"), 2 * 8 + 8 + 8u);
  EXPECT_EQ(small("olmo2"), 2 * 8 + 12 + 8u);
  EXPECT_EQ(small("gemma3_text"), 4 * 8 + 8 + 8u);
  // The k and v projections (8 x 4) are small tensors too at a threshold of 32.
  EXPECT_EQ(small_tensor_params(parse_model_config(R"({"model_type": "llama", )" + shape, "t"), 32),
            2 * 8 + 2 * 32 + 8u);
}

TEST(ModelParams, TheReuseDistanceKeepsTheModulesNearestTheHead) {
  // The small llama of ASmallLlamaCountedByHand, walked back from its head (80), final norm
  // (8), then layer 2's down (128), up (128), gate (128), post-norm and input norm (8 each, in
  // the list's order), o (64), v and k (32 each), q (64). A module is kept when the elements
  // after it are fewer than half the distance.
  const ModelConfig c = parse_model_config(
      R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 16})",
      "test");
  EXPECT_EQ(reuse_kept_params(c, 0), 0u);
  EXPECT_EQ(reuse_kept_params(c, 1), 80u);    // the head alone (0 after it)
  EXPECT_EQ(reuse_kept_params(c, 160), 80u);  // the norm has 80 after it: 160 is not more
  EXPECT_EQ(reuse_kept_params(c, 161), 88u);  // now it is
  EXPECT_EQ(reuse_kept_params(c, 2 * 88 + 1), 88u + 128);
  // A distance beyond the model keeps all of it, counted once.
  EXPECT_EQ(reuse_kept_params(c, UINT64_MAX), model_params(c).params);
  // Llama-3-8B with DeepSpeed's default 1e9: the head (525M) has nothing after it; the final
  // norm has 525M > 5e8 after it: the head alone.
  const ModelConfig llama = parse_model_config(find_model("llama-3-8b")->config_json, "l");
  EXPECT_EQ(reuse_kept_params(llama, 1'000'000'000), 128256u * 4096);
  // GPT-2 (tied, 124M): 1e9 keeps the whole model.
  const ModelConfig gpt2 = parse_model_config(find_model("gpt2")->config_json, "gpt2");
  EXPECT_EQ(reuse_kept_params(gpt2, 1'000'000'000), model_params(gpt2).params);
}

TEST(ModelParams, NamesAreFoundByShortNameOrHubId) {
  EXPECT_EQ(find_model("Llama-3-8B"), find_model("meta-llama/Meta-Llama-3-8B"));
  EXPECT_NE(find_model("gpt2"), nullptr);
  EXPECT_EQ(find_model("gpt5"), nullptr);
  EXPECT_NE(catalogue_names().find("mixtral-8x7b"), std::string::npos);
}

TEST(ModelParams, BadConfigsAreOneLineErrorsNamingTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"model_type": "falcon"})", "model_type \"falcon\" is not supported; supported: gpt2"},
      {R"({"vocab_size": 10})", "\"model_type\" is missing"},
      {R"({"model_type": "llama", "vocab_size": 10})", "\"hidden_size\" is missing"},
      {R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 3, "intermediate_size": 16})",
       "\"num_key_value_heads\" must divide num_attention_heads (4)"},
      {R"({"model_type": "gpt2", "vocab_size": 10, "n_embd": -8})", "\"n_embd\" must be a whole"},
      {R"({"model_type": "mixtral", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
           "num_attention_heads": 4, "intermediate_size": 16, "num_local_experts": 2,
           "num_experts_per_tok": 3})",
       "\"num_experts_per_tok\" must be at most num_local_experts (2)"},
      {R"({"model_type": "deepseek_v2", "vocab_size": 10, "hidden_size": 8,
           "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 16})",
       "\"kv_lora_rank\" is missing"},
      {R"({"model_type": "gemma2", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
           "num_attention_heads": 2, "intermediate_size": 16, "attn_logit_softcapping": -1})",
       "\"attn_logit_softcapping\" must be a positive number or null"},
      {R"([1, 2])", "expected a JSON object"},
      {R"({"model_type": )", "not JSON"},
  };
  for (const auto& [text, message] : cases) {
    try {
      parse_model_config(text, "--model-config c.json");
      ADD_FAILURE() << text << ": accepted";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("--model-config c.json: ", 0), 0u) << what;
      EXPECT_NE(what.find(message), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace zerodp::catalog

namespace zerodp::catalog {
namespace {

TEST(ModelActivations, GptTwosLayerIsKorthikantisFormulaPlusWhatItsCodeKeepsBesides) {
  // GPT-2 (dropout 0.1, eager, q = k = h, I = 4h) under torch 2.x on CUDA. Korthikanti et al.'s
  // 34sbh + 5as²b (plan/activations.h) counts its tensors but three: gelu_new, written as a
  // formula, keeps 0.5x, tanh and 1 + tanh of the 4h width besides its input (3 x 8sbh), and
  // each LayerNorm keeps an fp32 mean and rstd per row (2 x 8sb); and 26 bytes of scalars
  // (the 16-bit scale, three of the formula's constants). The 5 bytes a score are the same:
  // the 16-bit softmax, a bool dropout mask and the dropped copy.
  const ModelConfig gpt2 = parse_model_config(find_model("gpt2")->config_json, "gpt2");
  const plan::TransformerShape shape{12, 768, 12, 1024, 4};
  const std::uint64_t sb = 4096, h = 768;
  const auto none =
      model_activation_bytes(gpt2, 1024, 4, plan::Checkpointing::none, Attention::eager);
  ASSERT_TRUE(none.has_value());
  const std::uint64_t korthikanti = *plan::activation_bytes(shape, plan::Checkpointing::none) / 12;
  EXPECT_EQ(none->per_layer, korthikanti + 24 * sb * h + 16 * sb + 26);
  EXPECT_EQ(none->layers, 12 * none->per_layer);  // learned positions: no rotary tables
  // Outside: token and position ids (int64), the embeddings' dropout mask, ln_f, the head's
  // input, the fp32 log-softmax, the labels and the total weight; then the loss's two fp32
  // gradients in backward.
  const std::uint64_t V = 50257;
  EXPECT_EQ(none->logits_and_loss, 8 * sb + 8 * 1024 + sb * h + (2 * sb * h + 8 * sb) + 2 * sb * h +
                                       4 * sb * V + 8 * sb + 4 + 8 * sb * V);
  // Selective recomputation drops the scores; full checkpointing keeps each layer's input
  // and one layer at a time in backward.
  const auto selective =
      model_activation_bytes(gpt2, 1024, 4, plan::Checkpointing::selective, Attention::eager);
  EXPECT_EQ(none->layers - selective->layers, 12u * 5 * 12 * 1024 * 4096);
  const auto full =
      model_activation_bytes(gpt2, 1024, 4, plan::Checkpointing::full, Attention::eager);
  EXPECT_EQ(full->layers,
            *plan::activation_bytes(shape, plan::Checkpointing::full) + none->per_layer);
  // Flash attention keeps no scores (5as²b) nor the scale but a fp32 log-sum-exp per row.
  const auto flash =
      model_activation_bytes(gpt2, 1024, 4, plan::Checkpointing::none, Attention::flash);
  EXPECT_EQ(none->per_layer - flash->per_layer, 5u * 12 * 1024 * 4096 + 2 - 4u * 12 * 4096);
}

TEST(ModelActivations, ASmallLlamaByHand) {
  // s = 4, b = 2 (T = 8), h = 8, 4 heads of 2 (q = 8), 2 kv heads (k = 4), I = 16, vocab 10,
  // eager, torch 2.x on CUDA: two RMSNorms of 6Th + 4T (fp32 copy, rsqrt, 16-bit rows) = 832;
  // the projections' input 2Th = 128; q, k and v at every head 6Tq = 384, the scale 8 and the
  // scores 6·a·s·T = 768; o_proj's input 2Tq = 128; the MLP 2Th + 8TI = 1152: 3400 a layer.
  // Rotary tables 2 x 2·s·d = 32. Outside: ids 8T = 64, final norm 416, head input 128, loss
  // 4TV + 8T + 4 = 388, and in backward 8TV = 640.
  const ModelConfig c = parse_model_config(
      R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 16})",
      "test");
  const auto a = model_activation_bytes(c, 4, 2, plan::Checkpointing::none, Attention::eager);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->per_layer, 3400u);
  EXPECT_EQ(a->layers, 6832u);
  EXPECT_EQ(a->logits_and_loss, 1636u);
  EXPECT_EQ(a->total, 8468u);
  // torch 1.13 (what tests/plan/torch_reference_test.cc checks here): mean keeps x², 4Th more
  // in each norm.
  const auto saved = saved_tensor_bytes(c, 4, 2, Attention::eager, plan::kCpuTorch113);
  EXPECT_EQ(saved->dense_layer, 3400u + 2 * 256);
  EXPECT_EQ(saved->moe_layer, 0u);
  EXPECT_EQ(saved->rope_tables, 32u);
}

TEST(ModelActivations, AMixtureKeepsTheRouterAndEveryRoutedTokensExpertWork) {
  // Mixtral's layer against the same layer with a dense MLP of the expert's width: the
  // router's fp32 softmax (4TE), its top-k indices (8Tk), the renormalised weights' clone and
  // sum (4Tk + 4T), and per routed token (kT of them) 6h + 8I + 18 bytes, where the dense MLP
  // keeps 8TI besides the input both share.
  const ModelConfig moe = parse_model_config(find_model("mixtral-8x7b")->config_json, "m");
  ModelConfig dense = moe;
  dense.experts = dense.experts_per_token = 0;
  const std::uint64_t T = 512, h = 4096, I = 14336, E = 8, k = 2;
  const auto a = model_activation_bytes(moe, 512, 1, plan::Checkpointing::none, Attention::flash);
  const auto d = model_activation_bytes(dense, 512, 1, plan::Checkpointing::none, Attention::flash);
  EXPECT_EQ(a->per_layer - d->per_layer,
            4 * T * E + 8 * T * k + 4 * T * k + 4 * T + k * T * (6 * h + 8 * I + 18) - 8 * T * I);
}

TEST(ModelActivations, TheNewerFamiliesKeepTheirOwnNormsExpertsAndLatents) {
  // One shape (s = 4, b = 2, T = 8; hidden 8, 2 heads of 4, 1 kv head: q = 8, k = 4) in
  // several families, against llama's layer (torch 2.x, CUDA).
  const std::string shape = R"("vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
      "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 16,
      "head_dim": 4, "tie_word_embeddings": true)";
  auto layer = [&](const std::string& type, const std::string& extra = "") {
    const ModelConfig c =
        parse_model_config(R"({"model_type": ")" + type + "\", " + shape + extra + "}", "t");
    return model_activation_bytes(c, 4, 2, plan::Checkpointing::none, Attention::eager)->per_layer;
  };
  // qwen3's norms over each head of q (16 rows of 4) and of k (8 rows): 6Nw + 4N each.
  EXPECT_EQ(layer("qwen3") - layer("llama"), (6u * 64 + 64) + (6u * 32 + 32));
  // gemma2: four norms in fp32 with (1 + weight) in fp32, 8Th + 4T + 4h = 576 each, for
  // llama's two of 416; the soft-capped scores' tanh (2 bytes each of a·s·T = 64) and its
  // two scalars.
  EXPECT_EQ(layer("gemma2") - layer("llama"), 4u * 576 - 2 * 416 + 2 * 64 + 16);
  // qwen2_moe: the router (4TE + 8Tk), 2 of 4 experts of 4 (kT(6h + 8·4 + 18)), the shared
  // expert of 16 on the kept input (8T·16), its gate's sigmoid and its output (2T + 2Th),
  // where the dense layer of 16 keeps 8TI; the q, k, v biases change no activation.
  const std::string moe = R"(, "moe_intermediate_size": 4, "num_experts": 4,
      "num_experts_per_tok": 2, "shared_expert_intermediate_size": 16)";
  EXPECT_EQ(
      layer("qwen2_moe", moe) - layer("qwen2"),
      (4u * 8 * 4 + 8 * 8 * 2) + 2 * 8 * (48 + 32 + 18) + 8 * 8 * 16 + (16 + 128) - 8 * 8 * 16);
}

TEST(ModelActivations, FlashKeepsAFusedProjectionsWholeOutputWhenVIsAViewOfIt) {
  // GPT-NeoX (s = 4, b = 2, T = 8; h 8, 2 heads of 4, I 32, parallel residual) under flash,
  // torch 2.x: the input LayerNorm (2Th + 8T) = 192, query_key_value's input 128, flash's q and
  // k (2T(q + k) = 256), v a view of the fused output so that output whole (2T·3h = 384) and
  // the log-sum-exp (4aT = 64), dense's input 128, the second norm's statistics 64 (the same
  // input), the MLP's input and GELU's input and output (2Th + 4TI = 1152): 2368.
  const ModelConfig neox = parse_model_config(
      R"({"model_type": "gpt_neox", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
          "num_attention_heads": 2, "intermediate_size": 32})",
      "neox");
  EXPECT_EQ(
      model_activation_bytes(neox, 4, 2, plan::Checkpointing::none, Attention::flash)->per_layer,
      2368u);
}

TEST(ModelActivations, SizesBeyondSixtyFourBitsAreRefused) {
  const ModelConfig c = parse_model_config(find_model("llama-3-70b")->config_json, "l");
  EXPECT_FALSE(
      model_activation_bytes(c, 1ull << 40, 1ull << 40, plan::Checkpointing::none, Attention::eager)
          .has_value());
  EXPECT_TRUE(
      model_activation_bytes(c, 8192, 1, plan::Checkpointing::none, Attention::eager).has_value());
}

// GPT-2's FLOPs a token counted by hand: its 124,439,808 parameters less the 786,432 of its
// position embeddings (its token embeddings are its head's weights, a product), and its
// attention over 1,024 positions at 768 wide.
TEST(TrainingFlops, GptTwoCountedByHand) {
  const ModelConfig gpt2 = parse_model_config(find_model("gpt2")->config_json, "gpt2");
  const TrainingFlops f = training_flops(gpt2, 1024, plan::Checkpointing::none);
  EXPECT_EQ(f.params, 123'653'376.0);
  EXPECT_EQ(f.attention, 2.0 * 1024 * 768 * 2);
  EXPECT_EQ(f.model, 6 * 123'653'376.0 + 3 * 12 * 3'145'728.0);
  EXPECT_EQ(f.hardware, f.model);
  // Full checkpointing computes the forward again: 4/3 of the model FLOPs, the ratio of
  // llm-foundry's published HFU to MFU for such runs (55.0 % to 41.25 %, MPT-70B on H100);
  // selective, the attention products again.
  const TrainingFlops full = training_flops(gpt2, 1024, plan::Checkpointing::full);
  EXPECT_DOUBLE_EQ(full.hardware / full.model, 4.0 / 3.0);
  const TrainingFlops selective = training_flops(gpt2, 1024, plan::Checkpointing::selective);
  EXPECT_EQ(selective.hardware, selective.model + 12 * selective.attention);
}

// Llama 3 8B as torchtitan counts it today (6 times the parameters less the embedding, plus
// 12 L H Q T), and against a published run: torchtitan's FSDP2 on 64 A100s (docs/performance.md
// of pytorch/torchtitan, April 2024: 2,973 tokens/s a GPU at 58.2 % MFU, sequences of 8,192),
// whose MFU counted the embedding as a product too. Its FLOPs a token, MFU x 312 TFLOPS / tokens
// a second, are ours plus 6 x the embedding to the figures' rounding (3 digits of MFU: 0.1 %).
TEST(TrainingFlops, LlamaThreeEightBAsTorchtitanCountsIt) {
  const ModelConfig llama = parse_model_config(find_model("llama-3-8b")->config_json, "llama");
  const TrainingFlops f = training_flops(llama, 8192, plan::Checkpointing::none);
  const double embedding = 128256.0 * 4096;
  EXPECT_EQ(f.params, 8'030'261'248.0 - embedding);  // the head is its own
  EXPECT_EQ(f.model, 6 * f.params + 12.0 * 32 * 32 * 128 * 8192);
  const double published = 0.582 * 312e12 / 2973;
  EXPECT_NEAR((f.model + 6 * embedding) / published, 1.0, 1e-3);
  // A mixture counts the experts a token passes: Mixtral's two of eight.
  const ModelConfig mixtral =
      parse_model_config(find_model("mixtral-8x7b")->config_json, "mixtral");
  const TrainingFlops m = training_flops(mixtral, 4096, plan::Checkpointing::none);
  EXPECT_LT(m.params, 0.3 * double(model_params(mixtral).params));
  EXPECT_GT(m.params, 0.25 * double(model_params(mixtral).params));
}

}  // namespace
}  // namespace zerodp::catalog
