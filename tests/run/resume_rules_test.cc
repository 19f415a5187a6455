// What a resume may change (docs/checkpoints.md), called on the run part directly: the global
// batch is kept on another number of ranks or refused with the rank counts that can split it;
// the model's shape, the data's bytes, the data seed and the precision are refused, each
// naming its flag; the other recorded settings are allowed and said, one line each.
#include "zerodp/run/resume_rules.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "zerodp/common/error.h"

namespace zerodp::run {
namespace {

using nlohmann::json;

const std::string kFolder = "ck/step-00000004";

// A run record as train writes one into a manifest and reads it back (a whole number read from
// text is unsigned): 2 ranks x micro-batch 2 x grad-accum 1 saved it.
json record(std::uint64_t micro_batch = 2, int grad_accum = 1) {
  const json written = {{"lr", 0.002},
                        {"warmup", 0},
                        {"steps", 6},
                        {"seed", 1},
                        {"clip", 1.0},
                        {"grad_accum", grad_accum},
                        {"micro_batch", micro_batch},
                        {"precision", "bf16"},
                        {"data", "text"},
                        {"data_fingerprint", "fnv1a64 0123456789abcdef, 2100 bytes"},
                        {"data_seed", 1234},
                        {"eval_every", 1},
                        {"eval_batches", 4}};
  return json::parse(written.dump());
}

json model() {
  return {{"type", "gpt"},     {"n_layer", 1},      {"n_head", 2},       {"n_embd", 32},
          {"n_positions", 16}, {"vocab_size", 256}, {"data_seed", 1234}, {"params", 34816}};
}

// A note as a reader sees it, its inputs named as the command line names them.
std::string words(const std::string& note) {
  return name_fields(note, [](std::string_view field) {
    std::string flag = "--";
    for (const char c : field) flag += c == '_' ? '-' : c;
    return flag;
  });
}

// The message of the exception E that fn throws; fails the test when it throws none.
template <typename E, typename Fn>
std::string message_of(Fn fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception";
  return {};
}

TEST(ResumePlan, TheSameRunOnTheSameRanksKeepsItsBatchWithoutANote) {
  const ResumePlan plan = plan_resume(kFolder, record(), 2, record(), 2);
  EXPECT_EQ(plan.micro_batch, 2u);
  EXPECT_EQ(plan.grad_accum, 1);
  EXPECT_TRUE(plan.notes.empty()) << plan.notes.front();
}

TEST(ResumePlan, OneRankAccumulatesWhatTwoRanksComputedAndSaysSo) {
  const ResumePlan plan = plan_resume(kFolder, record(), 2, record(), 1);
  EXPECT_EQ(plan.micro_batch, 2u);
  EXPECT_EQ(plan.grad_accum, 2);  // 1 x 2 x 2 = 2 x 2 x 1: the global batch of 4
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_EQ(words(plan.notes[0]),
            "resume: global batch of 4 samples per step kept on 1 rank: micro-batch 2 x "
            "grad-accum 2 (the checkpoint ran 2 ranks x micro-batch 2 x grad-accum 1; this run "
            "asked 2 x 1)");
}

TEST(ResumePlan, AMicroBatchThatDoesNotDivideTheShareFallsToTheLargestThatDoes) {
  // 2 ranks x 6 x 1 = 12 samples; on 1 rank the share is 12 and 5 does not divide it: 4 x 3.
  const ResumePlan plan = plan_resume(kFolder, record(6, 1), 2, record(5, 1), 1);
  EXPECT_EQ(plan.micro_batch, 4u);
  EXPECT_EQ(plan.grad_accum, 3);
}

TEST(ResumePlan, RanksThatCannotSplitTheGlobalBatchAreRefusedWithTheChoices) {
  const std::string line =
      message_of<UsageError>([] { plan_resume(kFolder, record(), 2, record(), 3); });
  EXPECT_EQ(line,
            "ranks: the checkpoint ck/step-00000004 trained with a global batch of 4 samples "
            "per step (2 ranks x micro-batch 2 x grad-accum 1); 3 ranks cannot split it "
            "evenly; resume on 1, 2, 4 ranks");
}

TEST(ResumePlan, ABatchWrittenAsTextIsAnErrorNamingTheField) {
  json saved = record();
  saved["micro_batch"] = "2";
  const std::string line = message_of<Error>([&] { plan_resume(kFolder, saved, 2, record(), 2); });
  EXPECT_EQ(line,
            "ck/step-00000004/manifest.json: run.micro_batch is '\"2\"', expected a whole "
            "number");
}

TEST(ResumePlan, ABatchThatCannotBeTrueIsAnError) {
  // 2 x 2^62 x 4 overflows 64 bits.
  const std::string line = message_of<Error>(
      [] { plan_resume(kFolder, record(std::uint64_t{1} << 62, 4), 2, record(), 2); });
  EXPECT_NE(line.find("run.micro_batch and run.grad_accum are not a batch that can be true"),
            std::string::npos)
      << line;
}

TEST(ResumePlan, ScheduleChangesAreAllowedAndEachSaidOnce) {
  json run = record();
  run["lr"] = 0.001;
  run["steps"] = 10;
  run["seed"] = 7;
  const ResumePlan plan = plan_resume(kFolder, record(), 2, run, 2);
  ASSERT_EQ(plan.notes.size(), 3u);
  EXPECT_EQ(words(plan.notes[0]),
            "resume: --steps 10 (the checkpoint's run: 6): the cosine schedule "
            "now ends there");
  EXPECT_EQ(words(plan.notes[1]),
            "resume: --lr 0.001 (the checkpoint's run: 0.002): the "
            "learning-rate schedule changes from the next step");
  EXPECT_EQ(words(plan.notes[2]),
            "resume: --seed 7 (the checkpoint's run: 1): no effect: the weights "
            "come from the checkpoint");
}

TEST(ResumePlan, AnOlderRecordIsComparedAsFarAsItGoesAndSaysWhatItLacks) {
  json saved = record();
  for (const char* field : {"micro_batch", "grad_accum", "clip", "precision"}) saved.erase(field);
  const ResumePlan plan = plan_resume(kFolder, saved, 2, record(), 3);  // 3 ranks: no batch rule
  EXPECT_EQ(plan.micro_batch, 2u);
  ASSERT_EQ(plan.notes.size(), 2u);
  EXPECT_EQ(words(plan.notes[0]), "resume: the checkpoint does not record its batch; not compared");
  EXPECT_EQ(words(plan.notes[1]),
            "resume: the checkpoint does not record --clip, --precision; not compared");
}

TEST(ResumeRefusals, AnotherModelShapeNamesTheFlagAndBothValues) {
  json asked = model();
  asked["n_layer"] = 3;
  const std::string line = message_of<UsageError>(
      [&] { refuse_resume_changes(kFolder, record(), model(), asked, record()); });
  EXPECT_EQ(line,
            "layers: the checkpoint ck/step-00000004 holds a model with n_layer 1, this "
            "run asks 3; the weights have that shape (resume with the checkpoint's "
            "layers)");
}

TEST(ResumeRefusals, OtherBytesOtherSeedAndOtherPrecisionAreRefusedEachForItsReason) {
  json other_bytes = record();
  other_bytes["data_fingerprint"] = "fnv1a64 fedcba9876543210, 2100 bytes";
  EXPECT_EQ(message_of<UsageError>(
                [&] { refuse_resume_changes(kFolder, record(), model(), model(), other_bytes); })
                .rfind("data: the checkpoint ck/step-00000004 was trained on text (fnv1a64 "
                       "0123456789abcdef, 2100 bytes), this run reads text (fnv1a64 "
                       "fedcba9876543210, 2100 bytes)",
                       0),
            0u);
  json other_seed = record();
  other_seed["data_seed"] = 99;
  EXPECT_EQ(message_of<UsageError>(
                [&] { refuse_resume_changes(kFolder, record(), model(), model(), other_seed); })
                .rfind("data_seed: the checkpoint ck/step-00000004 drew its samples with "
                       "data_seed 1234, this run asks 99",
                       0),
            0u);
  json fp16 = record();
  fp16["precision"] = "fp16";
  EXPECT_EQ(message_of<UsageError>(
                [&] { refuse_resume_changes(kFolder, record(), model(), model(), fp16); }),
            "precision: the checkpoint ck/step-00000004 trained in bf16, this run asks fp16; "
            "the loss-scale state and the 16-bit rounding belong to its precision (resume with "
            "precision bf16)");
  // Another optimizer's slots (8-bit codes are not fp32 moments), or none recorded: AdamW's.
  json eight_bit = record(), fp32 = record();
  eight_bit["optimizer"] = "adamw-8bit";
  fp32["optimizer"] = "adamw";
  EXPECT_EQ(message_of<UsageError>(
                [&] { refuse_resume_changes(kFolder, eight_bit, model(), model(), fp32); }),
            "optimizer: the checkpoint ck/step-00000004 was trained with adamw-8bit, this run "
            "asks adamw; its state slots are adamw-8bit's (resume with optimizer adamw-8bit, or "
            "start a new run)");
  EXPECT_NO_THROW(refuse_resume_changes(kFolder, eight_bit, model(), model(), eight_bit));
}

TEST(ResumeRefusals, EveryDifferenceIsNamedInOneMessage) {
  json asked = model();
  asked["n_layer"] = 3;
  asked["n_embd"] = 64;
  json run = record();
  run["data_seed"] = 99;
  run["precision"] = "fp16";
  const std::string line = message_of<UsageError>(
      [&] { refuse_resume_changes(kFolder, record(), model(), asked, run); });
  EXPECT_EQ(line,
            "layers: the checkpoint ck/step-00000004 holds a model with n_layer 1, this run asks "
            "3; the weights have that shape (resume with the checkpoint's layers); "
            "and hidden: the checkpoint ck/step-00000004 holds a model with n_embd 32, this run "
            "asks 64; the weights have that shape (resume with the checkpoint's hidden); "
            "and data_seed: the checkpoint ck/step-00000004 drew its samples with data_seed "
            "1234, this run asks 99; another order of windows mid-run would repeat some and skip "
            "others (resume with data_seed 1234, or start a new run); "
            "and precision: the checkpoint ck/step-00000004 trained in bf16, this run asks fp16; "
            "the loss-scale state and the 16-bit rounding belong to its precision (resume with "
            "precision bf16)");
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(ResumeRefusals, TheSameBytesAtAnotherPathAreNotRefused) {
  json moved = record();
  moved["data"] = "elsewhere/text";
  EXPECT_NO_THROW(refuse_resume_changes(kFolder, record(), model(), model(), moved));
  const ResumePlan plan = plan_resume(kFolder, record(), 2, moved, 2);
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_EQ(words(plan.notes[0]),
            "resume: --data elsewhere/text (the checkpoint's run: text): the same "
            "bytes at another path");
}

}  // namespace
}  // namespace zerodp::run
