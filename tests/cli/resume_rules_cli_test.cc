// What a resume may change (docs/checkpoints.md): the global batch is kept on another number
// of ranks or the resume is refused with the choices; the data's bytes, the data seed and the
// precision are refused with their own reasons; other recorded settings are allowed and said.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_testing.h"
#include "zerodp/checkpoint/checkpoint.h"

namespace zerodp {
namespace {
namespace fs = std::filesystem;

const std::string kRulesModel = "--layers 1 --heads 2 --hidden 32 --seq-len 16 ";

std::string shell_word(const std::string& path) {
  return "'" + path + "'";
}

// A run of 6 steps on 2 ranks, micro-batch 2 (a global batch of 4), saved at steps 2, 4 and 6;
// the tests resume it from step 4.
class ResumeRules : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = ::testing::TempDir() + "/resume_rules_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(root_);
    fs::create_directories(root_);
    text_ = write(root_ + "/text", 'a');
    const auto saved = testing::run_zerodp("train " + kRulesModel + "--data " + shell_word(text_) +
                                           " --ranks 2 --micro-batch 2 --steps 6 --save-every 2 "
                                           "--keep 3 --save-dir " +
                                           shell_word(root_ + "/ck") + " --out '' --json");
    ASSERT_EQ(saved.status, 0) << saved.err;
  }
  void TearDown() override { fs::remove_all(root_); }

  // 2100 bytes of text; `first` makes files of the same size with other bytes.
  static std::string write(const std::string& path, char first) {
    std::ofstream out(path);
    for (int i = 0; i < 100; ++i) out << first << "bcdefghij klmnopqrs\n";
    return path;
  }
  std::string ck() const { return root_ + "/ck/step-00000004"; }
  // Resumes with `flags` (and the saved run's data unless they name another).
  testing::CliResult resume(const std::string& flags, bool same_data = true, int steps = 6) const {
    return testing::run_zerodp(
        "train " + kRulesModel + (same_data ? "--data " + shell_word(text_) : "") + " --steps " +
        std::to_string(steps) + " --resume " + shell_word(ck()) + " --out '' " + flags);
  }

  std::string root_, text_;
};

TEST_F(ResumeRules, AnotherNumberOfRanksKeepsTheGlobalBatchAndSaysHow) {
  const std::string next = root_ + "/next";
  const auto r = resume("--ranks 1 --micro-batch 2 --save-every 2 --save-dir " + shell_word(next));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(
      r.has("resume: global batch of 4 samples per step kept on 1 rank: micro-batch 2 "
            "x grad-accum 2 (the checkpoint ran 2 ranks x micro-batch 2 x grad-accum 1"))
      << r.out;
  // The checkpoint it saves records the split it ran, so the next resume keeps the batch too.
  const nlohmann::json run =
      nlohmann::json::parse(checkpoint::Checkpoint::open(next).manifest().run);
  EXPECT_EQ(run.at("micro_batch"), 2);
  EXPECT_EQ(run.at("grad_accum"), 2);
  EXPECT_TRUE(resume("--ranks 4 --micro-batch 2").has("micro-batch 1 x grad-accum 1"));
}

TEST_F(ResumeRules, AnotherModelShapeIsRefusedNamingTheFlag) {
  // Before: exit 1 naming the manifest's key ('n_layer'), not the flag the user can change.
  const auto r = testing::run_zerodp("train --layers 2 --heads 2 --hidden 32 --seq-len 16 --data " +
                                     shell_word(text_) + " --steps 6 --resume " + shell_word(ck()) +
                                     " --out ''");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--layers: the checkpoint "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("n_layer 1, this run asks 2"), std::string::npos) << r.err;
}

TEST_F(ResumeRules, AManifestWhoseBatchIsNoWholeNumberIsNamed) {
  // Before: a string there escaped as the JSON library's exception.
  const std::string manifest = ck() + "/manifest.json";
  std::ifstream in(manifest);
  nlohmann::json m = nlohmann::json::parse(in);
  in.close();
  m["run"]["micro_batch"] = "two";
  std::ofstream(manifest) << m.dump(2);
  const auto r = resume("--ranks 1 --micro-batch 2");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("manifest.json: run.micro_batch is \"two\", expected a whole number"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("unexpected failure"), std::string::npos) << r.err;
}

TEST_F(ResumeRules, RanksThatCannotSplitTheGlobalBatchAreRefusedWithTheChoices) {
  const auto r = resume("--ranks 3 --micro-batch 2");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.err.find("zerodp: --ranks: the checkpoint") == 0) << r.err;
  EXPECT_NE(r.err.find("a global batch of 4 samples per step (2 ranks x micro-batch 2 x "
                       "grad-accum 1); 3 ranks cannot split it evenly; resume on 1, 2, 4 ranks"),
            std::string::npos)
      << r.err;
}

TEST_F(ResumeRules, TheSameRunResumesWithoutANote) {
  const auto r = resume("--ranks 2 --micro-batch 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(r.has("resume:")) << r.out;
}

TEST_F(ResumeRules, AnotherDataSeedIsRefusedForWhatItIs) {
  const auto r = resume("--ranks 2 --micro-batch 2 --data-seed 7");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.err.find("zerodp: --data-seed: the checkpoint") == 0) << r.err;
  EXPECT_NE(r.err.find("drew its samples with --data-seed 1234, this run asks 7"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("another model configuration"), std::string::npos) << r.err;
}

TEST_F(ResumeRules, OtherPrecisionIsRefused) {
  const auto r = resume("--ranks 2 --micro-batch 2 --precision fp16");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.err.find("zerodp: --precision: the checkpoint") == 0) << r.err;
  EXPECT_NE(r.err.find("trained in bf16, this run asks fp16"), std::string::npos) << r.err;
}

TEST_F(ResumeRules, OtherBytesAreRefusedTheSameBytesElsewhereAreSaid) {
  const std::string other = write(root_ + "/other", 'z');  // same size, other bytes
  const auto refused = resume("--ranks 2 --micro-batch 2 --data " + shell_word(other), false);
  EXPECT_EQ(refused.status, 2);
  EXPECT_TRUE(refused.err.find("zerodp: --data: the checkpoint") == 0) << refused.err;
  EXPECT_NE(refused.err.find("2100 bytes), this run reads " + other + " (fnv1a64"),
            std::string::npos)
      << refused.err;
  // No --data: the checkpoint's file, not the default corpus.
  const auto same = resume("--ranks 2 --micro-batch 2", false);
  ASSERT_EQ(same.status, 0) << same.err;
  EXPECT_TRUE(same.has("data: data file '" + text_ + "'")) << same.out;

  fs::copy_file(text_, root_ + "/moved");
  const auto moved =
      resume("--ranks 2 --micro-batch 2 --data " + shell_word(root_ + "/moved"), false);
  ASSERT_EQ(moved.status, 0) << moved.err;
  EXPECT_TRUE(moved.has("resume: --data " + root_ + "/moved (the checkpoint's run: " + text_ +
                        "): the same bytes at another path"))
      << moved.out;
}

TEST_F(ResumeRules, NoFlagButTheStepsContinuesTheRunAsTheCheckpointRecordsIt) {
  // From step 6 to 8 with every flag the run was started with, then with none but --steps: the
  // checkpoint's model, data, batch, schedule, stage and ranks, so the same bits.
  const auto told =
      testing::run_zerodp("train " + kRulesModel + "--data " + shell_word(text_) +
                          " --ranks 2 --micro-batch 2 --stage 3 --steps 8 --resume " +
                          shell_word(root_ + "/ck/step-00000006") + " --out '' --json");
  ASSERT_EQ(told.status, 0) << told.err;
  const auto r = testing::run_zerodp("train --steps 8 --resume " + shell_word(root_ + "/ck") +
                                     " --out '' --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json resumed = nlohmann::json::parse(r.out);
  EXPECT_EQ(resumed["weights_sha256"], nlohmann::json::parse(told.out)["weights_sha256"]);
  EXPECT_EQ(resumed["ranks"], 2);
  EXPECT_EQ(resumed["stage"], 3);
  // --resume named the save dir: the run saved its end there, as the run it continues did.
  EXPECT_EQ(checkpoint::Checkpoint::open(root_ + "/ck").state().step, 8);
}

TEST(ResumeRulesMlp, TheMlpResumesWithItsWidthAndDepthFromTheCheckpoint) {
  // 3M asked: width 512 and depth 11, 2,889,216 parameters; a resume with no model flag builds
  // that MLP (not the default 1M one) and continues it bit for bit.
  const std::string dir = ::testing::TempDir() + "/resume_rules_mlp";
  fs::remove_all(dir);
  const auto saved = testing::run_zerodp(
      "train --model mlp --params 3M --ranks 2 --stage 2 "
      "--steps 4 --save-dir " +
      shell_word(dir) + " --out '' --json");
  ASSERT_EQ(saved.status, 0) << saved.err;
  const auto told =
      testing::run_zerodp("train --model mlp --params 3M --ranks 2 --stage 2 --steps 6 --resume " +
                          shell_word(dir + "/step-00000004") + " --out '' --json");
  ASSERT_EQ(told.status, 0) << told.err;
  const auto r =
      testing::run_zerodp("train --steps 6 --resume " + shell_word(dir) + " --out '' --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json resumed = nlohmann::json::parse(r.out);
  EXPECT_EQ(resumed["params"], 2889216);
  EXPECT_EQ(resumed["weights_sha256"], nlohmann::json::parse(told.out)["weights_sha256"]);
  fs::remove_all(dir);
}

TEST_F(ResumeRules, EveryFlagGivenThatDiffersIsNamedInOneLine) {
  const auto r = testing::run_zerodp(
      "train --layers 2 --hidden 64 --data-seed 7 --steps 8 "
      "--resume " +
      shell_word(ck()) + " --out ''");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.err.find("zerodp: --layers: the checkpoint") == 0) << r.err;
  for (const char* part : {"n_layer 1, this run asks 2", "; and --hidden: the checkpoint",
                           "n_embd 32, this run asks 64", "; and --data-seed: the checkpoint"}) {
    EXPECT_NE(r.err.find(part), std::string::npos) << part << " in " << r.err;
  }
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

TEST_F(ResumeRules, ScheduleChangesAreAllowedAndSaid) {
  const auto r = resume("--ranks 2 --micro-batch 2 --lr 1e-3 --seed 5", true, 8);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(
      r.has("resume: --steps 8 (the checkpoint's run: 6): the cosine schedule now ends "
            "there"))
      << r.out;
  EXPECT_TRUE(r.has("resume: --lr 0.001 (the checkpoint's run: 0.002)")) << r.out;
  EXPECT_TRUE(r.has("resume: --seed 5 (the checkpoint's run: 1): no effect")) << r.out;
}

}  // namespace
}  // namespace zerodp
