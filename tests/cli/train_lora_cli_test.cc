// `zerodp train --lora-rank R --base CHECKPOINT` as a user runs it: adapters trained beside a
// frozen base, checkpoints that hold the adapters alone with a reference to the base, a resume
// that ends with the bits of a run never stopped, eval and sample reading base and adapters
// together, and a one-line refusal of every flag given wrong.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_testing.h"
#include "testing/temp_dir.h"
#include "zerodp/checkpoint/checkpoint.h"

namespace zerodp {
namespace {

using testing::fresh_path;
using testing::run_zerodp;

const std::string kBaseModel =
    "--layers 1 --heads 2 --hidden 32 --seq-len 16 --micro-batch 2 --out '' ";

// A base trained and saved once for the suite.
const std::string& base_dir() {
  static const std::string dir = [] {
    const std::string d = fresh_path("lora_base");
    const auto r = run_zerodp("train " + kBaseModel + "--ranks 2 --steps 4 --save-every 4 " +
                              "--save-dir '" + d + "' --json");
    EXPECT_EQ(r.status, 0) << r.err;
    return d;
  }();
  return dir;
}

std::string lora_run(const std::string& more) {
  return "train --lora-rank 4 --base '" + base_dir() + "' --micro-batch 2 --lr 1e-2 --out '' " +
         more;
}

TEST(TrainLoraCli, AdaptersTrainBesideTheBaseAndAResumeEndsWithTheSameBits) {
  const std::string dir = fresh_path("lora_adapters");
  const auto straight = run_zerodp(lora_run("--ranks 2 --stage 3 --steps 6 --json"));
  ASSERT_EQ(straight.status, 0) << straight.err;
  const nlohmann::json s = nlohmann::json::parse(straight.out);
  // Rank 4 on c_attn (PEFT's default for GPT-2): A [4, 32] and B [96, 4] in one block.
  EXPECT_EQ(s["params"], 4 * 32 + 96 * 4);
  // The base: 256 C + T C + 12 C^2 + 13 C + 2 C with C = 32, T = 16.
  EXPECT_EQ(s["frozen_params"], 256 * 32 + 16 * 32 + 12 * 32 * 32 + 13 * 32 + 2 * 32);
  EXPECT_EQ(s["model"]["lora_rank"], 4);
  EXPECT_EQ(s["model"]["lora_targets"], nlohmann::json::array({"attn.c_attn"}));
  EXPECT_EQ(s["model"]["lora_base_manifest_sha256"].get<std::string>().size(), 64u);
  // The frozen base in the ledger, as predicted, to the byte.
  EXPECT_EQ(s["peak_bytes"], s["predicted_peak_bytes"]);
  EXPECT_EQ(s["model_state_bytes"], s["predicted_model_state_bytes"]);
  EXPECT_LT(s["final_loss"].get<double>(), s["first_loss"].get<double>() + 0.5);

  const auto saved = run_zerodp(
      lora_run("--ranks 2 --stage 3 --steps 6 --save-every 3 --save-dir '" + dir + "' --json"));
  ASSERT_EQ(saved.status, 0) << saved.err;
  EXPECT_EQ(nlohmann::json::parse(saved.out)["weights_sha256"], s["weights_sha256"]);
  // A checkpoint holds what changed: the adapters, not the base.
  const checkpoint::Checkpoint ck = checkpoint::Checkpoint::open(dir + "/step-00000003");
  EXPECT_EQ(ck.params(), 4u * 32 + 96 * 4);
  // Resumed from step 3 with no flag but the steps: every LoRA setting comes from the record.
  const auto resumed =
      run_zerodp("train --steps 6 --resume '" + dir + "/step-00000003' --out '' --json");
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_EQ(nlohmann::json::parse(resumed.out)["weights_sha256"], s["weights_sha256"]);
  // Adapters of another rank, or beside another base, are not the checkpoint's.
  const auto other_rank = run_zerodp("train --steps 6 --lora-rank 8 --resume '" + dir +
                                     "/step-00000003' --out '' --json");
  EXPECT_EQ(other_rank.status, 2);
  EXPECT_NE(other_rank.err.find("holds a model with lora_rank 4, this run asks 8"),
            std::string::npos)
      << other_rank.err;
  // Another stage and N resume it too (the same adapters, sharded otherwise).
  const auto resharded =
      run_zerodp("train --steps 6 --ranks 1 --stage 0 --micro-batch 4 --resume '" + dir +
                 "/step-00000003' --out '' --json");
  EXPECT_EQ(resharded.status, 0) << resharded.err;

  // eval and sample read the adapters with their base.
  const auto with_adapters = run_zerodp("eval --checkpoint '" + dir + "' --json");
  ASSERT_EQ(with_adapters.status, 0) << with_adapters.err;
  const auto base = run_zerodp("eval --checkpoint '" + base_dir() + "' --json");
  ASSERT_EQ(base.status, 0) << base.err;
  const double lora_loss = nlohmann::json::parse(with_adapters.out)["loss"].get<double>();
  const double base_loss = nlohmann::json::parse(base.out)["loss"].get<double>();
  EXPECT_TRUE(std::isfinite(lora_loss));
  EXPECT_NE(lora_loss, base_loss);  // six steps moved B from zero
  const auto sampled = run_zerodp("sample --checkpoint '" + dir + "' --length 8 --prompt ab");
  EXPECT_EQ(sampled.status, 0) << sampled.err;
  EXPECT_EQ(sampled.out.rfind("ab", 0), 0u) << sampled.out;  // the prompt, then 8 bytes shown
  EXPECT_GE(sampled.out.size(), 10u);

  // Export writes PEFT's folder (tests/export/peft_folder_test.py checks its contents).
  const std::string exported_dir = fresh_path("lora_export");
  const auto exported =
      run_zerodp("export --checkpoint '" + dir + "' --out '" + exported_dir + "'");
  EXPECT_EQ(exported.status, 0) << exported.err;
  EXPECT_TRUE(std::filesystem::is_regular_file(exported_dir + "/adapter_config.json"));
}

// measure with LoRA at stage 3: the base's gathers are in the bytes each rank sends, and
// predicted; so is every byte of the peak.
TEST(TrainLoraCli, MeasureCountsTheBasesGathersAndPredictsThem) {
  const auto r = run_zerodp("measure --model gpt --lora-rank 4 --lora-targets all-linear --base '" +
                            base_dir() + "' --stage 3 --ranks 2 --steps 1 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const std::uint64_t base = 256 * 32 + 16 * 32 + 12 * 32 * 32 + 13 * 32 + 2 * 32;
  for (const nlohmann::json& rank : j["per_rank"]) {
    EXPECT_EQ(rank["comm_ring_bytes"], rank["predicted_comm_bytes"]);
    EXPECT_EQ(rank["peak_bytes"], rank["predicted_peak_bytes"]);
    // The base, gathered in 16 bits twice a step, is most of what moves: at least its two
    // gathers' ring bytes, 2 x 2 x (N - 1) / N of it.
    EXPECT_GE(rank["comm_ring_bytes"].get<std::uint64_t>(), 2 * base);
  }
}

// A base of its own saved at step 2 in `base`, and adapters trained on it saved in `dir`.
void save_base_and_adapters(const std::string& base, const std::string& dir) {
  ASSERT_EQ(run_zerodp("train " + kBaseModel + "--ranks 1 --steps 2 --save-every 2 --save-dir '" +
                       base + "' --json")
                .status,
            0);
  ASSERT_EQ(run_zerodp("train --lora-rank 2 --base '" + base +
                       "' --micro-batch 2 --ranks 1 --steps 2 --save-every 2 --save-dir '" + dir +
                       "' --out '' --json")
                .status,
            0);
}

TEST(TrainLoraCli, ABaseChangedSinceTheAdaptersTrainedIsRefused) {
  // Then the base's manifest rewritten.
  const std::string base = fresh_path("lora_base_changed"), dir = fresh_path("lora_changed");
  save_base_and_adapters(base, dir);
  const std::string manifest = base + "/step-00000002/manifest.json";
  std::ofstream(manifest, std::ios::app) << "\n";  // the same JSON, other bytes
  const auto r = run_zerodp("eval --checkpoint '" + dir + "' --json");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("is no longer the one the adapters were trained beside"), std::string::npos)
      << r.err;
}

// A LoRA manifest edited by hand, and a base moved away: one line each, naming the file.
TEST(TrainLoraCli, AnEditedRecordOrAMissingBaseIsRefusedInOneLine) {
  const std::string base = fresh_path("lora_base_moved"), dir = fresh_path("lora_edited");
  save_base_and_adapters(base, dir);
  const std::string manifest = dir + "/step-00000002/manifest.json";
  const std::string good = testing::slurp(manifest);
  for (const auto& [key, value] : {std::pair<std::string, nlohmann::json>{"lora_rank", "2"},
                                   {"lora_targets", "c_attn"},
                                   {"lora_base_manifest_sha256", "00"}}) {
    nlohmann::json m = nlohmann::json::parse(good);
    m["model"][key] = value;
    std::ofstream(manifest) << m.dump(1);
    const auto r = run_zerodp("eval --checkpoint '" + dir + "' --json");
    EXPECT_EQ(r.status, 2) << key << ": " << r.err;
    EXPECT_NE(r.err.find(manifest), std::string::npos) << key << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << key << ": " << r.err;
  }
  std::ofstream(manifest) << good;
  std::filesystem::rename(base, base + ".moved");
  const auto r = run_zerodp("eval --checkpoint '" + dir + "' --json");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("the base checkpoint of these adapters"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

TEST(TrainLoraCli, EveryFlagGivenWrongIsRefusedInOneLine) {
  const std::string base = "'" + base_dir() + "'";
  const std::pair<std::string, std::string> cases[] = {
      {"--lora-rank 4", "--lora-rank: LoRA trains adapters beside a trained model: give --base"},
      {"--base " + base, "--base: it names the frozen base of a LoRA run; give --lora-rank R too"},
      {"--lora-alpha 16", "--lora-alpha: it sets LoRA's adapters; give --lora-rank R too"},
      {"--lora-targets c_fc", "--lora-targets: it sets LoRA's adapters"},
      {"--lora-rank 4 --base " + base + " --lora-targets q_proj", "--lora-targets: expected"},
      {"--lora-rank 33 --base " + base, "--lora-rank: expected a whole number from 1 to 32"},
      {"--lora-rank 4 --base " + base + " --lora-alpha 0", "--lora-alpha: expected a positive"},
      {"--lora-rank 4 --base " + base + " --hidden 64",
       "--hidden 64: --base '" + base_dir() +
           "/step-00000004' has 32; a LoRA run keeps its base's "
           "shape"},
      {"--lora-rank 4 --base /nonexistent", "--base: no complete checkpoint in /nonexistent"},
      {"--model mlp --lora-rank 4", "--lora-rank applies to --model gpt"},
      {"--lora-rank 4 --base " + base + " --stage 3 --zeropp qwz",
       "--zeropp: ZeRO++ is not available for a model with frozen parameters"},
  };
  for (const auto& [args, message] : cases) {
    testing::expect_refused("train " + args + " --steps 1 --ranks 1 --out ''", message);
  }
}

}  // namespace
}  // namespace zerodp
