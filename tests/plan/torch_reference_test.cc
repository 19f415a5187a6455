// The planner's activations and optimizer-step temporaries against PyTorch's own: for every
// family, scripts/torch_activations.py runs the family's modules (written from its Hugging
// Face modeling code, eager attention, bf16 parameters) on this machine's PyTorch and counts
// every storage autograd saves for backward; the planner's formula, given this build's
// differences (plan/torch_runtime.h: kCpuTorch113), must give the same bytes layer by layer,
// outside the layers and in the rotary tables, exactly. The configs are
// tests/plan/torch_reference/FAMILY.json, small shapes; a test counts all its configs in one
// run of the script, as importing torch takes longer than the counting.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "zerodp/catalog/lora.h"
#include "zerodp/catalog/models.h"
#include "zerodp/deepspeed/runtime.h"

namespace zerodp::catalog {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kSource = ZERODP_SOURCE_DIR;
// Debian's python3-torch is for the system interpreter, whatever python3 the PATH finds.
constexpr const char* kPython = "/usr/bin/python3";

std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  while (const std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  const int status = pclose(pipe);
  return status == 0 ? out : "";
}

bool torch_installed() {
  static const bool installed =
      run(std::string(kPython) + " -c 'import torch' >/dev/null 2>&1 && echo yes") == "yes\n";
  return installed;
}

// The script's arguments for these configs, each a --config.
std::string reference(const std::vector<fs::path>& configs, const std::string& extra) {
  std::string command = kSource + "/scripts/torch_activations.py";
  for (const fs::path& config : configs) command += " --config " + config.string();
  return command + " " + extra;
}

// The counts at each shape of each config in turn, one JSON object per shape.
std::vector<json> counted(const std::vector<fs::path>& configs, const std::string& shapes) {
  const std::string out =
      run(std::string(kPython) + " " + reference(configs, "--shapes " + shapes) + " 2>/dev/null");
  std::vector<json> results;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) results.push_back(json::parse(line));
  return results;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A config to count: a family's file, or that file with fields changed.
struct Case {
  std::string name;
  json config;
};

// Each config at three shapes, the batch of one among them (fused projections and the labels
// are kept differently there), all counted by one run of the script: starting Python and
// importing torch is most of what a run costs.
void expect_equal_counts(const std::vector<Case>& cases) {
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> shapes = {{8, 2}, {12, 3}, {16, 1}};
  std::vector<fs::path> paths;
  for (const Case& c : cases) {
    paths.push_back(fs::path(::testing::TempDir()) / (c.name + ".json"));
    std::ofstream(paths.back()) << c.config.dump();
  }
  const std::vector<json> results = counted(paths, "8x2,12x3,16x1");
  ASSERT_EQ(results.size(), cases.size() * shapes.size()) << reference(paths, "--shapes ...");
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const std::string& name = cases[c].name;
    const ModelConfig config = parse_model_config(cases[c].config.dump(), name);
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const auto [s, b] = shapes[i];
      const json& got = results[c * shapes.size() + i];
      const auto want = saved_tensor_bytes(config, s, b, Attention::eager, plan::kCpuTorch113);
      ASSERT_TRUE(want.has_value());
      const std::string where = name + " s=" + std::to_string(s) + " b=" + std::to_string(b);
      // Layer by layer, as a multiset: which layers are dense is the config's business.
      std::vector<std::uint64_t> layers = got["layers"].get<std::vector<std::uint64_t>>();
      std::vector<std::uint64_t> expected(config.layers - config.moe_layers(), want->dense_layer);
      expected.insert(expected.end(), config.moe_layers(), want->moe_layer);
      std::sort(layers.begin(), layers.end());
      std::sort(expected.begin(), expected.end());
      EXPECT_EQ(layers, expected) << where << " per_layer " << got["per_layer"].dump();
      std::uint64_t outside = 0;
      for (const auto& [part, bytes] : got["outside"].items())
        outside += bytes.get<std::uint64_t>();
      EXPECT_EQ(outside, want->outside) << where << " outside " << got["outside"].dump();
      EXPECT_EQ(got["shared"].get<std::uint64_t>(), want->rope_tables) << where;
      EXPECT_EQ(got["total_saved"].get<std::uint64_t>(), want->total) << where;
    }
  }
}

class TorchReference : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch_installed())
      GTEST_SKIP() << kPython << " has no torch: apt-get install python3-torch";
  }
  static json family(const std::string& name) {
    return json::parse(read_file(kSource + "/tests/plan/torch_reference/" + name + ".json"));
  }
};

TEST_F(TorchReference, EveryFamilySavesWhatThePlannerCounts) {
  const char* families[] = {"gpt2",    "gpt_neox",  "llama",     "mistral",    "qwen2",
                            "qwen3",   "phi3",      "olmo2",     "gemma2",     "gemma3_text",
                            "mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2"};
  std::vector<Case> cases;
  for (const char* name : families) cases.push_back({name, family(name)});
  expect_equal_counts(cases);
}

TEST_F(TorchReference, DropoutMasksAndTheVariantsOfEachFamily) {
  std::vector<Case> cases;
  // Dropout's masks on the scores, the residual branches and the embeddings.
  json gpt2 = family("gpt2");
  gpt2["attn_pdrop"] = gpt2["resid_pdrop"] = gpt2["embd_pdrop"] = 0.1;
  cases.push_back({"gpt2_dropout", gpt2});
  json phi3 = family("phi3");
  phi3["attention_dropout"] = phi3["resid_pdrop"] = phi3["embd_pdrop"] = 0.1;
  cases.push_back({"phi3_dropout", phi3});
  json neox = family("gpt_neox");
  neox["hidden_dropout"] = neox["attention_dropout"] = 0.1;
  neox["use_parallel_residual"] = false;
  cases.push_back({"gpt_neox_sequential_dropout", neox});
  // Without grouped heads a fused qkv's v is a view at batch 1; partial rotary on phi3.
  phi3 = family("phi3");
  phi3["num_key_value_heads"] = phi3["num_attention_heads"];
  phi3["partial_rotary_factor"] = 0.5;
  cases.push_back({"phi3_mha_partial_rotary", phi3});
  json llama = family("llama");
  llama["num_key_value_heads"] = llama["num_attention_heads"];
  cases.push_back({"llama_mha", llama});
  // Renormalised routing weights, and a mixture with dense layers.
  json qwen3_moe = family("qwen3_moe");
  qwen3_moe["norm_topk_prob"] = true;
  qwen3_moe["num_hidden_layers"] = 3;
  qwen3_moe["mlp_only_layers"] = {1};
  qwen3_moe["intermediate_size"] = 96;
  cases.push_back({"qwen3_moe_normalised_mixed", qwen3_moe});
  // DeepSeek's q through a low rank.
  json deepseek = family("deepseek_v2");
  deepseek["q_lora_rank"] = 24;
  cases.push_back({"deepseek_v2_q_lora", deepseek});
  // Routing limited to the best groups of experts keeps the mask of the others.
  deepseek = family("deepseek_v2");
  deepseek["topk_method"] = "group_limited_greedy";
  deepseek["n_group"] = 2;
  deepseek["topk_group"] = 1;
  cases.push_back({"deepseek_v2_group_limited", deepseek});
  expect_equal_counts(cases);
}

// LoRA's adapters on these configs (catalog/lora.h): each config counted by the script with the
// model frozen and PEFT's LoRA on the linears `targets` name, at three shapes, against
// lora_saved_tensor_bytes(): the first layer apart (its input needs no gradient), every other
// layer alike, outside the layers and the rotary tables.
bool shape_has(const LoraShape& shape, std::string_view name) {
  return std::find(shape.adapted.begin(), shape.adapted.end(), name) != shape.adapted.end();
}

void expect_equal_lora_counts(const std::vector<Case>& cases, std::uint64_t rank,
                              const std::vector<std::string>& targets, double dropout,
                              bool quantized = false) {
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> shapes = {{8, 2}, {12, 3}, {16, 1}};
  std::vector<fs::path> paths;
  for (const Case& c : cases) {
    paths.push_back(fs::path(::testing::TempDir()) / (c.name + "_lora.json"));
    std::ofstream(paths.back()) << c.config.dump();
  }
  std::string joined;
  for (const std::string& t : targets) joined += (joined.empty() ? "" : ",") + t;
  std::ostringstream lora;
  lora << "--lora-rank " << rank << " --lora-targets " << joined << " --lora-dropout " << dropout;
  if (quantized) lora << " --quantize nf4";
  const std::string out =
      run(std::string(kPython) + " " + reference(paths, "--shapes 8x2,12x3,16x1 " + lora.str()) +
          " 2>/dev/null");
  std::vector<json> results;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) results.push_back(json::parse(line));
  ASSERT_EQ(results.size(), cases.size() * shapes.size()) << reference(paths, lora.str());
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const std::string& name = cases[c].name;
    const ModelConfig config = parse_model_config(cases[c].config.dump(), name);
    const LoraCount count = lora_count(config, rank, targets, "--lora-targets");
    LoraShape shape{rank, dropout, {}, false, quantized};
    for (const LoraTarget& t : count.targets) shape.adapted.push_back(t.name);
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const auto [s, b] = shapes[i];
      const json& got = results[c * shapes.size() + i];
      const auto want = lora_saved_tensor_bytes(config, s, b, Attention::eager, shape,
                                                "--lora-rank", plan::kCpuTorch113);
      ASSERT_TRUE(want.has_value());
      const std::string where =
          name + " " + lora.str() + " s=" + std::to_string(s) + " b=" + std::to_string(b);
      std::vector<std::uint64_t> layers = got["layers"].get<std::vector<std::uint64_t>>();
      // Layer by layer in order: the first apart, a mixture's layer where the script routed
      // tokens in it. Every expert is taken as hit: an adapter on an expert's linear keeps a
      // scale each pass, so a pass not made (an expert no token of these few reached) is 8
      // bytes fewer for each.
      std::uint64_t expert_adapters = 0;
      for (std::string_view name : shape.adapted) {
        expert_adapters += name.find("experts.*.") != std::string_view::npos ? 1 : 0;
      }
      const json routing = got.value("tokens_per_expert", json::array());
      std::vector<std::uint64_t> expected;
      std::uint64_t missed = 0;
      for (std::size_t layer = 0, m = 0; layer < layers.size(); ++layer) {
        const bool mixture =
            config.moe_layers() > 0 &&
            (layer == 0                                ? !config.first_layer_dense
             : got["per_layer"].contains("mlp.router") ? got["per_layer"]["mlp.router"][layer] != 0
                                                       : true);
        std::uint64_t idle = 0;
        if (mixture) {
          for (const auto& n : routing.at(m++)) idle += n.get<std::uint64_t>() == 0 ? 1 : 0;
        }
        missed += 8 * expert_adapters * idle;
        const std::uint64_t whole = layer == 0 ? want->first_layer
                                    : mixture  ? want->moe_layer
                                               : want->dense_layer;
        expected.push_back(whole - 8 * expert_adapters * idle);
      }
      // olmo2's first layer has no norm before q, k and v: their adapters keep the embedding's
      // output itself, which the script counts as shared (made outside the layers).
      std::uint64_t moved = 0;
      if (config.model_type == "olmo2" && dropout == 0 &&
          (shape_has(shape, "self_attn.q_proj") || shape_has(shape, "self_attn.k_proj") ||
           shape_has(shape, "self_attn.v_proj"))) {
        moved = 2 * s * b * config.hidden;
      }
      expected.front() -= moved;
      EXPECT_EQ(layers, expected) << where << " per_layer " << got["per_layer"].dump();
      std::uint64_t outside = 0;
      for (const auto& [part, bytes] : got["outside"].items())
        outside += bytes.get<std::uint64_t>();
      EXPECT_EQ(outside, want->outside) << where << " outside " << got["outside"].dump();
      EXPECT_EQ(got["shared"].get<std::uint64_t>(), want->rope_tables + moved) << where;
      EXPECT_EQ(got["total_saved"].get<std::uint64_t>(), want->total - missed) << where;
    }
  }
}

TEST_F(TorchReference, ALoraRunSavesWhatThePlannerCounts) {
  // Each call counts its configs in one run of the script, one LoRA choice for all of them.
  std::vector<Case> llama_family;
  for (const char* name : {"llama", "mistral", "qwen2", "qwen3"}) {
    llama_family.push_back({name, family(name)});
  }
  json llama_mha = family("llama");
  llama_mha["num_key_value_heads"] = llama_mha["num_attention_heads"];
  llama_family.push_back({"llama_mha", llama_mha});
  // phi3's fused q, k, v and gate-up; at batch 1 without grouped heads v is a view.
  json phi3_mha = family("phi3");
  phi3_mha["num_key_value_heads"] = phi3_mha["num_attention_heads"];
  const std::vector<Case> phi3 = {{"phi3", family("phi3")}, {"phi3_mha", phi3_mha}};
  // Norms after attention and MLP (olmo2, with whole q and k norms), and before and after them
  // (gemma2 with its soft-caps, gemma3 with per-head q and k norms and two rotary tables).
  std::vector<Case> post_norms;
  for (const char* name : {"olmo2", "gemma2", "gemma3_text"}) {
    post_norms.push_back({name, family(name)});
  }
  // GPT-2's Conv1D linears and LayerNorms; GPT-NeoX's fused projection, parallel and not.
  json neox_sequential = family("gpt_neox");
  neox_sequential["use_parallel_residual"] = false;
  const std::vector<Case> gpt = {
      {"gpt2", family("gpt2")}, {"gpt_neox", family("gpt_neox")}, {"neox_seq", neox_sequential}};
  // The mixtures, one with a mixture's first layer and a dense one after it.
  json qwen3_moe_mixed = family("qwen3_moe");
  qwen3_moe_mixed["num_hidden_layers"] = 3;
  qwen3_moe_mixed["mlp_only_layers"] = {1};
  qwen3_moe_mixed["intermediate_size"] = 96;
  const std::vector<Case> mixtures = {{"mixtral", family("mixtral")},
                                      {"qwen2_moe", family("qwen2_moe")},
                                      {"qwen3_moe", family("qwen3_moe")},
                                      {"qwen3_moe_mixed", qwen3_moe_mixed}};
  auto join = [](std::initializer_list<const std::vector<Case>*> groups) {
    std::vector<Case> all;
    for (const auto* g : groups) all.insert(all.end(), g->begin(), g->end());
    return all;
  };
  // Every linear, no dropout: the adapters share their inputs.
  expect_equal_lora_counts(join({&llama_family, &phi3, &post_norms, &gpt, &mixtures}), 4,
                           {"all-linear"}, 0.0);
  // q and v: k needs no gradient in the first layer, so its scores keep no q.
  expect_equal_lora_counts(join({&llama_family, &post_norms, &mixtures}), 8, {"q_proj", "v_proj"},
                           0.0);
  // Dropout before each adapter: a mask where the input needs a gradient, a copy each.
  expect_equal_lora_counts(llama_family, 4, {"all-linear"}, 0.1);
  // The attention's output and the MLP's down projection (the experts' too), and the head.
  const std::vector<Case> qwen_mixtures = {mixtures[1], mixtures[2]};
  expect_equal_lora_counts(join({&llama_family, &post_norms, &qwen_mixtures}), 2,
                           {"o_proj", "down_proj", "lm_head"}, 0.05);
  expect_equal_lora_counts(phi3, 4, {"gate_up_proj"}, 0.1);
  expect_equal_lora_counts({gpt[0]}, 4, {"c_proj", "c_fc"}, 0.1);
  expect_equal_lora_counts({gpt[1], gpt[2]}, 4, {"dense", "dense_4h_to_h", "embed_out"}, 0.1);
  // Mixtral's experts' w2 and its router; Qwen's shared expert and its gate.
  expect_equal_lora_counts({mixtures[0]}, 2, {"w2", "gate"}, 0.1);
  expect_equal_lora_counts({mixtures[1]}, 2, {"shared_expert_gate", "up_proj"}, 0.0);
  // QLoRA: a 4-bit linear keeps its input wherever it needs a gradient, adapted or not (k's,
  // o's, the MLP's inputs here); with dropout, beside the adapters' copies.
  expect_equal_lora_counts(join({&llama_family, &post_norms, &mixtures}), 8, {"q_proj", "v_proj"},
                           0.0, true);
  expect_equal_lora_counts(phi3, 4, {"qkv_proj"}, 0.0, true);
  expect_equal_lora_counts({gpt[0]}, 4, {"c_attn"}, 0.0, true);
  expect_equal_lora_counts({gpt[1], gpt[2]}, 4, {"query_key_value"}, 0.0, true);
  expect_equal_lora_counts(join({&llama_family, &qwen_mixtures}), 4, {"all-linear"}, 0.1, true);
}

TEST_F(TorchReference, TheLossWorksInTwoFp32GradientsOfTheLogitsBeyondWhatIsSaved) {
  // A large vocabulary on a tiny model, so that the loss's backward sets the peak: the live
  // bytes beyond the saved ones reach 8TV (the fp32 gradients of the log-softmax's output and
  // input) less the few small tensors freed before it (labels, token ids: under 1 %).
  json llama = family("llama");
  llama["vocab_size"] = 4096;
  llama["hidden_size"] = 16;
  llama["intermediate_size"] = 32;
  llama["num_attention_heads"] = 2;
  llama["num_key_value_heads"] = 1;
  llama["head_dim"] = 8;
  llama["num_hidden_layers"] = 1;
  const fs::path path = fs::path(::testing::TempDir()) / "llama_vocab.json";
  std::ofstream(path) << llama.dump();
  const std::vector<json> results = counted({path}, "128x4");
  ASSERT_EQ(results.size(), 1u);
  const double tv = 128.0 * 4 * 4096;
  const double beyond =
      results[0]["backward_peak"].get<double>() - results[0]["total_saved"].get<double>();
  EXPECT_NEAR(beyond, 8 * tv, 0.01 * 8 * tv);
  // And so the planner's activations are the saved bytes and those 8TV.
  const ModelConfig config = parse_model_config(llama.dump(), "llama_vocab");
  const auto saved = saved_tensor_bytes(config, 128, 4, Attention::eager, plan::kCpuTorch113);
  const auto activations = model_activation_bytes(config, 128, 4, plan::Checkpointing::none,
                                                  Attention::eager, plan::kCpuTorch113);
  EXPECT_EQ(activations->total, saved->total + std::uint64_t(8 * tv));
  EXPECT_EQ(saved->total, results[0]["total_saved"].get<std::uint64_t>());
}

TEST_F(TorchReference, AdamWsStepTemporariesAreTheCopiesThePlannerCounts) {
  // One flat fp32 tensor of S elements with its state, as ZeRO hands torch's AdamW its shard:
  // the step's peak of new bytes is the fp32 copies the planner counts, and a few scalar
  // tensors (bias corrections, step counts: under 1 KiB).
  constexpr std::uint64_t S = 1'000'000;
  const std::string out =
      run(std::string(kPython) + " " + kSource + "/scripts/torch_activations.py --optimizer-step " +
          std::to_string(S));
  ASSERT_FALSE(out.empty());
  const json got = json::parse(out);
  const std::uint64_t foreach = got["adamw_foreach_peak_bytes"];
  const std::uint64_t single = got["adamw_single_peak_bytes"];
  using deepspeed::OptimizerImpl;
  const std::uint64_t want_foreach =
      4 * S * deepspeed::optimizer_step_copies(OptimizerImpl::foreach, plan::kCpuTorch113);
  const std::uint64_t want_single =
      4 * S * deepspeed::optimizer_step_copies(OptimizerImpl::single, plan::kCpuTorch113);
  EXPECT_GE(foreach, want_foreach);
  EXPECT_LT(foreach - want_foreach, 1024u);
  EXPECT_GE(single, want_single);
  EXPECT_LT(single - want_single, 1024u);
}

}  // namespace
}  // namespace zerodp::catalog
