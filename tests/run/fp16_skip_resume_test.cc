// A resume after fp16 skipped steps is the run without the stop, bit for bit. A skipped step
// (gradients overflowed at the loss scale) is a step of the run, which draws its samples and
// moves the learning-rate schedule, but not an update, which AdamW's t counts. Before, a
// checkpoint held AdamW's t alone and a resume took it for the run's step: after k skips it
// ran k steps more, each at another point of the schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "testing/temp_dir.h"
#include "zerodp/checkpoint/checkpoint.h"
#include "zerodp/run/checkpoint_model.h"
#include "zerodp/run/train_choice.h"
#include "zerodp/run/training.h"

namespace zerodp::run {
namespace {

constexpr int kSteps = 14;

// What rank 0 saw: each step's loss and whether it was skipped.
class Steps final : public TrainObserver {
 public:
  void resumed(const checkpoint::Checkpoint&) override {}
  void stepped(std::int64_t step, const zero::StepResult& result, double, double) override {
    losses[step] = result.loss;
    if (result.skipped) skipped.push_back(step);
  }
  void validated(std::int64_t, float) override {}
  void saved(const std::string&) override {}
  void stepping_ended() override {}
  std::map<std::int64_t, float> losses;
  std::vector<std::int64_t> skipped;
};

// fp16 with a loss scale far above what the gradients bear, grown back every 2 good steps:
// the first steps are skipped in a row, and later ones now and then.
TrainSettings settings(int stage, const std::string& save_dir, const std::string& resume) {
  TrainChoice c;
  c.model.params = "20K";
  c.model.model = "mlp";
  c.engine.stage = std::to_string(stage);
  c.engine.ranks = "2";
  c.engine.threads = "1";
  c.engine.precision = "fp16";
  c.steps = std::to_string(kSteps);
  c.eval_every = "0";
  c.out = "";
  c.save_dir = save_dir;
  c.save_every = save_dir.empty() ? "" : "1";
  c.keep = "100";
  c.resume = resume;
  TrainSettings s = train_settings(c);
  s.options.loss_scale.initial = 0x1p22f;
  s.options.loss_scale.growth_interval = 2;
  return s;
}

struct Result {
  std::string weights;
  Steps steps;
};

Result train(int stage, const std::string& save_dir = "", const std::string& resume = "") {
  const TrainSettings s = settings(stage, save_dir, resume);
  std::optional<checkpoint::Checkpoint> ck;
  if (!resume.empty()) ck.emplace(checkpoint::Checkpoint::open(resume));
  if (ck) check_resume(s, *ck);
  std::optional<checkpoint::SaveDir> claim = claim_save_dir(save_dir, false, ck ? &*ck : nullptr);
  Result r;
  std::mutex mu;
  run_ranks(s.launch, [&](comm::Communicator& comm) {
    const TrainSettings here = s.on_ranks(comm, ck ? &*ck : nullptr);
    Steps mine;
    Training run(here, comm, comm.rank() == 0 ? &mine : nullptr);
    if (ck) run.resume_from(*ck);
    run.train();
    const nlohmann::json summary = run.finish();
    if (comm.rank() != 0) return;
    std::lock_guard<std::mutex> lock(mu);
    r.weights = summary["weights_sha256"].get<std::string>();
    r.steps = mine;
  });
  return r;
}

std::string step_folder(const std::string& dir, int step) {
  char name[32];
  std::snprintf(name, sizeof name, "/step-%08d", step);
  return dir + name;
}

TEST(Fp16SkipResume, AResumeAfterSkippedStepsIsTheRunWithoutTheStop) {
  for (int stage : {0, 3}) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    const Result straight = train(stage);
    // Skips in a row at the start, and later ones: the case needs both.
    ASSERT_GE(straight.steps.skipped.size(), 4u);
    const std::string dir = zerodp::testing::fresh_folder("fp16_skips_" + std::to_string(stage));
    const Result saved = train(stage, dir);
    EXPECT_EQ(saved.weights, straight.weights);
    // Stops just after a late skip, inside the first run of skips, and after a good step.
    const auto& skipped = straight.steps.skipped;
    const auto is_skipped = [&](std::int64_t t) {
      return std::find(skipped.begin(), skipped.end(), t) != skipped.end();
    };
    std::int64_t late_skip = 0, good = 0;
    for (std::int64_t t = 3; t < kSteps; ++t) {
      if (is_skipped(t) && !is_skipped(t - 1) && good > 0) late_skip = t;
      if (!is_skipped(t) && good == 0) good = t;
    }
    ASSERT_GT(late_skip, 0) << ::testing::PrintToString(skipped);
    ASSERT_TRUE(is_skipped(1) && is_skipped(2));
    for (const std::int64_t stop : {late_skip, std::int64_t{2}, good}) {
      SCOPED_TRACE("stopped at " + std::to_string(stop));
      const std::string ck = step_folder(dir, static_cast<int>(stop));
      const checkpoint::Checkpoint opened = checkpoint::Checkpoint::open(ck);
      // The run's step and the data position count every step; AdamW's t the updates only.
      EXPECT_EQ(opened.state().run_step, stop);
      std::int64_t skipped_before = 0;
      for (const std::int64_t s : straight.steps.skipped) skipped_before += s <= stop;
      EXPECT_EQ(opened.state().step, stop - skipped_before);
      EXPECT_EQ(opened.state().samples_done * kSteps,
                checkpoint::Checkpoint::open(step_folder(dir, kSteps)).state().samples_done *
                    std::uint64_t(stop));
      const Result resumed = train(stage, "", ck);
      EXPECT_EQ(resumed.weights, straight.weights);
      for (std::int64_t t = stop + 1; t <= kSteps; ++t) {
        ASSERT_TRUE(resumed.steps.losses.count(t)) << t;
        EXPECT_EQ(resumed.steps.losses.at(t), straight.steps.losses.at(t)) << t;
      }
      EXPECT_EQ(resumed.steps.losses.size(), std::size_t(kSteps - stop));
    }
  }
}

}  // namespace
}  // namespace zerodp::run
