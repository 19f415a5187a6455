// A resume after fp16 skipped steps is the run without the stop, bit for bit. A skipped step
// (gradients overflowed at the loss scale) is a step of the run, which draws its samples and
// moves the learning-rate schedule, but not an update, which AdamW's t counts. A checkpoint
// that held AdamW's t alone, read back as the run's step, resumed k skips too early: k more
// steps, each at another point of the schedule and past the data the run would have drawn.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "testing/temp_dir.h"
#include "zerodp/checkpoint/checkpoint.h"
#include "zerodp/common/error.h"
#include "zerodp/run/checkpoint_model.h"
#include "zerodp/run/train_choice.h"
#include "zerodp/run/training.h"

namespace zerodp::run {
namespace {

constexpr int kSteps = 12;
// Three skips in a row (the first after one good step) and two alone: enough good steps
// between them that the scale grows back (growth_interval 2), so the loss scale and its
// good-step count a checkpoint holds differ from one stop to the next.
const std::vector<std::int64_t> kForced = {2, 3, 4, 7, 10};

// What rank 0 saw at each step.
class Steps final : public TrainObserver {
 public:
  void resumed(const checkpoint::Checkpoint&) override {}
  void stepped(std::int64_t step, const zero::StepResult& result, double, double) override {
    losses[step] = result.loss;
    scales[step] = result.loss_scale;
    if (result.skipped) skipped.push_back(step);
  }
  void validated(std::int64_t, float) override {}
  void saved(const std::string&) override {}
  void stepping_ended() override {}
  std::map<std::int64_t, float> losses, scales;
  std::vector<std::int64_t> skipped;
};

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
  s.options.loss_scale.growth_interval = 2;
  s.options.overflow_at_for_tests = kForced;
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

std::string step_folder(const std::string& dir, std::int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "/step-%08lld", static_cast<long long>(step));
  return dir + name;
}

std::int64_t skips_up_to(std::int64_t step) {
  return std::count_if(kForced.begin(), kForced.end(), [&](std::int64_t s) { return s <= step; });
}

TEST(Fp16SkipResume, AResumeAfterForcedSkipsIsTheRunWithoutTheStop) {
  for (int stage : {0, 3}) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    const Result straight = train(stage);
    // The forced skips, and no other: the stops below are where the test says they are.
    ASSERT_EQ(straight.steps.skipped, kForced);
    const std::string dir = zerodp::testing::fresh_folder("fp16_skips_" + std::to_string(stage));
    const Result saved = train(stage, dir);
    EXPECT_EQ(saved.weights, straight.weights);
    const std::uint64_t samples_per_step =
        checkpoint::Checkpoint::open(step_folder(dir, kSteps)).state().samples_done / kSteps;
    ASSERT_GT(samples_per_step, 0u);
    // At the end of three skips in a row, just after a skip alone, after the good step that
    // follows one, and between skips with the scale grown back.
    for (const std::int64_t stop : {4, 7, 8, 11}) {
      SCOPED_TRACE("stopped at " + std::to_string(stop));
      const std::string ck = step_folder(dir, stop);
      const zero::EngineState state = checkpoint::Checkpoint::open(ck).state();
      // The run's step and the data position count every step; AdamW's t the updates only;
      // the loss scale is the one the next step uses.
      EXPECT_EQ(state.run_step, stop);
      EXPECT_EQ(state.step, stop - skips_up_to(stop));
      EXPECT_EQ(state.samples_done, samples_per_step * std::uint64_t(stop));
      EXPECT_EQ(state.loss_scale, straight.steps.scales.at(stop + 1));

      const Result resumed = train(stage, "", ck);
      EXPECT_EQ(resumed.weights, straight.weights);
      EXPECT_EQ(resumed.steps.losses.size(), std::size_t(kSteps - stop));
      for (std::int64_t t = stop + 1; t <= kSteps; ++t) {
        ASSERT_TRUE(resumed.steps.losses.count(t)) << t;
        EXPECT_EQ(resumed.steps.losses.at(t), straight.steps.losses.at(t)) << t;
        EXPECT_EQ(resumed.steps.scales.at(t), straight.steps.scales.at(t)) << t;
      }
      std::vector<std::int64_t> skipped_after;
      std::copy_if(kForced.begin(), kForced.end(), std::back_inserter(skipped_after),
                   [&](std::int64_t s) { return s > stop; });
      EXPECT_EQ(resumed.steps.skipped, skipped_after);
    }
  }
}

// The message of the UsageError that opening `folder` throws, or what it threw instead.
std::string usage_error_opening(const std::string& folder) {
  try {
    checkpoint::Checkpoint::open(folder);
    return "(opened)";
  } catch (const UsageError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return "(not a UsageError) " + std::string(e.what());
  }
}

TEST(Fp16SkipResume, TheManifestRecordsTheRunStepAndReadsOneWithoutIt) {
  const std::string dir = zerodp::testing::fresh_folder("fp16_skips_manifest");
  train(0, dir);
  // Step 7: 4 of its steps skipped, so AdamW's t is 3.
  const std::string folder = dir + "/copy/step-00000007";
  std::filesystem::create_directories(folder);
  std::filesystem::copy(step_folder(dir, 7), folder);
  const std::string manifest = folder + "/manifest.json";
  const nlohmann::json good = nlohmann::json::parse(std::ifstream(manifest));
  EXPECT_EQ(good["state"]["run_step"], 7);
  EXPECT_EQ(good["state"]["step"], 3);
  const auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json edited = good;
    edit(edited);
    std::ofstream(manifest) << edited.dump();
  };

  // A manifest from before the run's step was recorded: its step stands for both.
  with([](nlohmann::json& m) { m["state"].erase("run_step"); });
  const zero::EngineState old = checkpoint::Checkpoint::open(folder).state();
  EXPECT_EQ(old.run_step, 3);
  EXPECT_EQ(old.step, 3);

  // Read as the other fields are: a whole number, never less than AdamW's t.
  with([](nlohmann::json& m) { m["state"]["run_step"] = 2.5; });
  EXPECT_NE(usage_error_opening(folder).find("state.run_step is 2.5, expected a whole number"),
            std::string::npos)
      << usage_error_opening(folder);
  with([](nlohmann::json& m) { m["state"]["run_step"] = -7; });
  EXPECT_NE(usage_error_opening(folder).find("state.run_step is -7"), std::string::npos)
      << usage_error_opening(folder);
  with([](nlohmann::json& m) { m["state"]["run_step"] = 2; });
  EXPECT_NE(
      usage_error_opening(folder).find("state.run_step is 2, expected at least state.step (3)"),
      std::string::npos)
      << usage_error_opening(folder);
  with([](nlohmann::json& m) { m["state"]["loss_scale"] = 0.0; });
  EXPECT_NE(usage_error_opening(folder).find("state.loss_scale is 0"), std::string::npos)
      << usage_error_opening(folder);
}

}  // namespace
}  // namespace zerodp::run
