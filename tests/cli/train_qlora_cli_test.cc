// `zerodp train --lora-rank R --base CHECKPOINT --quantize nf4` (QLoRA) as a user runs it: the
// base's block weights held in NF4, its bytes in the ledger and on the wire as predicted, the
// setting recorded and taken back by a resume that ends with the bits of a run never stopped,
// eval reading the dequantized base, and a one-line refusal of every flag given wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_testing.h"
#include "testing/temp_dir.h"

namespace zerodp {
namespace {

using testing::fresh_path;
using testing::run_zerodp;

// A base trained and saved once for the suite: hidden 64, so the block weights are 64 to 256
// blocks of NF4.
const std::string& qlora_base_dir() {
  static const std::string dir = [] {
    const std::string d = fresh_path("qlora_base");
    const auto r = run_zerodp(
        "train --layers 1 --heads 2 --hidden 64 --seq-len 16 --micro-batch 2 --out '' --ranks 1 "
        "--steps 4 --save-every 4 --save-dir '" +
        d + "' --json");
    EXPECT_EQ(r.status, 0) << r.err;
    return d;
  }();
  return dir;
}

std::string qlora_run(const std::string& more) {
  return "train --lora-rank 4 --lora-targets all-linear --base '" + qlora_base_dir() +
         "' --micro-batch 2 --lr 1e-2 --out '' " + more;
}

TEST(TrainQloraCli, TheNf4BaseIsRecordedPredictedAndResumedToTheBit) {
  const std::string dir = fresh_path("qlora_adapters");
  const auto straight =
      run_zerodp(qlora_run("--quantize nf4 --ranks 2 --stage 3 --steps 6 --json"));
  ASSERT_EQ(straight.status, 0) << straight.err;
  const nlohmann::json s = nlohmann::json::parse(straight.out);
  EXPECT_EQ(s["model"]["quantize"], "nf4");
  EXPECT_EQ(s["model"]["double_quant"], true);
  EXPECT_EQ(s["peak_bytes"], s["predicted_peak_bytes"]);
  EXPECT_EQ(s["model_state_bytes"], s["predicted_model_state_bytes"]);
  // The 16-bit base trains other adapters: the quantization is felt.
  const auto plain = run_zerodp(qlora_run("--ranks 2 --stage 3 --steps 6 --json"));
  ASSERT_EQ(plain.status, 0) << plain.err;
  const nlohmann::json p = nlohmann::json::parse(plain.out);
  EXPECT_NE(p["weights_sha256"], s["weights_sha256"]);
  EXPECT_FALSE(p["model"].contains("quantize"));
  EXPECT_LT(s["peak_bytes"].get<std::uint64_t>(), p["peak_bytes"].get<std::uint64_t>());

  const auto saved =
      run_zerodp(qlora_run("--quantize nf4 --ranks 2 --stage 3 --steps 6 "
                           "--save-every 3 --save-dir '" +
                           dir + "' --json"));
  ASSERT_EQ(saved.status, 0) << saved.err;
  EXPECT_EQ(nlohmann::json::parse(saved.out)["weights_sha256"], s["weights_sha256"]);
  // Resumed with no flag but the steps: NF4 and its double quantization from the record, and
  // at another stage and rank count the same bits.
  const auto resumed = run_zerodp("train --steps 6 --ranks 1 --stage 0 --micro-batch 4 --resume '" +
                                  dir + "/step-00000003' --out '' --json");
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  const nlohmann::json r = nlohmann::json::parse(resumed.out);
  EXPECT_EQ(r["model"]["quantize"], "nf4");
  // A base quantized otherwise is not the checkpoint's.
  const auto other = run_zerodp("train --steps 6 --double-quant off --quantize nf4 --resume '" +
                                dir + "/step-00000003' --out '' --json");
  EXPECT_EQ(other.status, 2);
  EXPECT_NE(other.err.find("holds a model with double_quant true, this run asks false"),
            std::string::npos)
      << other.err;

  // eval reads the adapters beside the dequantized base.
  const auto evaluated = run_zerodp("eval --checkpoint '" + dir + "' --json");
  ASSERT_EQ(evaluated.status, 0) << evaluated.err;
  EXPECT_TRUE(std::isfinite(nlohmann::json::parse(evaluated.out)["loss"].get<double>()));
  const auto merged = run_zerodp("export --checkpoint '" + dir + "' --merge --out '" +
                                 fresh_path("qlora_merged") + "'");
  EXPECT_EQ(merged.status, 0) << merged.err;
}

// measure with QLoRA at stage 3: each rank gathers the base's codes, a quarter of its 16-bit
// bytes, as predicted to the byte.
TEST(TrainQloraCli, MeasurePredictsTheGathersOfTheCodes) {
  std::uint64_t sent[2] = {0, 0};
  for (const bool nf4 : {false, true}) {
    const auto r = run_zerodp(
        "measure --model gpt --lora-rank 4 --lora-targets all-linear --base '" + qlora_base_dir() +
        "' " + (nf4 ? "--quantize nf4 " : "") + "--stage 3 --ranks 2 --steps 1 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    for (const nlohmann::json& rank : j["per_rank"]) {
      EXPECT_EQ(rank["comm_ring_bytes"], rank["predicted_comm_bytes"]);
      EXPECT_EQ(rank["peak_bytes"], rank["predicted_peak_bytes"]);
    }
    sent[nf4] = j["per_rank"][0]["comm_ring_bytes"].get<std::uint64_t>();
  }
  // The block weights are 12 C² of the base's 69,376 elements (C = 64): NF4 moves a quarter of
  // their bytes, the embeddings' and norms' as before.
  EXPECT_LT(sent[1], sent[0]);
}

TEST(TrainQloraCli, EveryQuantizeFlagGivenWrongIsRefusedInOneLine) {
  const std::string lora = "--lora-rank 4 --base '" + qlora_base_dir() + "' ";
  const std::pair<std::string, std::string> cases[] = {
      {lora + "--quantize int8", "--quantize: expected nf4, got 'int8'"},
      {lora + "--double-quant off", "--double-quant: needs --quantize nf4"},
      {lora + "--quantize nf4 --double-quant maybe", "--double-quant: expected on or off"},
      {"--quantize nf4",
       "--quantize: it quantizes the frozen base of a LoRA run (QLoRA); give "
       "--lora-rank R and --base too"},
  };
  for (const auto& [args, message] : cases) {
    testing::expect_refused("train " + args + " --steps 1 --ranks 1 --out ''", message);
  }
}

}  // namespace
}  // namespace zerodp
