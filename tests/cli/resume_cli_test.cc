// A run killed with SIGKILL at any moment, even in the middle of a save, resumes from its last
// complete checkpoint — on the same or another number of ranks.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/cli_testing.h"
#include "testing/temp_dir.h"
#include "zerodp/checkpoint/checkpoint.h"

extern char** environ;

namespace zerodp {
namespace {
namespace fs = std::filesystem;

const std::string kResumeModel = "--layers 1 --heads 2 --hidden 32 --seq-len 16 --micro-batch 2 ";

using zerodp::testing::fresh_path;

TEST(ResumeCli, KilledBeforeItsManifestTheSaveIsIgnoredAndTheRunResumes) {
  const std::string dir = fresh_path("inject");
  // Dies by SIGKILL at the save of step 6, with both shards written and no manifest.
  const auto killed = testing::run_zerodp("train " + kResumeModel +
                                              "--ranks 2 --steps 10 --save-every 3 --save-dir '" +
                                              dir + "' --out '' --json 2>/dev/null; exit $?",
                                          "ZERODP_INJECT_KILL_BEFORE_MANIFEST=6 ");
  EXPECT_NE(killed.status, 0);
  EXPECT_TRUE(fs::exists(dir + "/step-00000006/rank-00000-of-00002.bin"));
  EXPECT_FALSE(fs::exists(dir + "/step-00000006/manifest.json"));
  EXPECT_EQ(checkpoint::Checkpoint::open(dir).state().step, 3);

  // Resume with no flag but the steps (the checkpoint's own), and compare with a run that was
  // never interrupted; then on 4 ranks at stage 1 from the same step.
  const auto resumed =
      testing::run_zerodp("train --steps 10 --resume '" + dir + "/step-00000003' --out '' --json");
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  const auto straight =
      testing::run_zerodp("train " + kResumeModel + "--ranks 2 --steps 10 --out '' --json");
  EXPECT_EQ(nlohmann::json::parse(resumed.out)["weights_sha256"],
            nlohmann::json::parse(straight.out)["weights_sha256"]);
  const auto resharded =
      testing::run_zerodp("train " + kResumeModel + "--ranks 4 --stage 1 --steps 10 --resume '" +
                          dir + "/step-00000003' --out '' --json");
  ASSERT_EQ(resharded.status, 0) << resharded.err;
  // Another N (4 x micro-batch 1: the global batch of 4 kept) and stage: other rounding, the
  // same data stream and batch, so the same curve closely.
  EXPECT_NEAR(nlohmann::json::parse(resharded.out)["final_loss"].get<double>(),
              nlohmann::json::parse(resumed.out)["final_loss"].get<double>(), 0.05);
}

TEST(ResumeCli, KillNineAtRandomMomentsNeverLosesTheRun) {
  const std::string dir = fresh_path("kill9");
  std::int64_t last_step = 0;
  for (int delay_ms : {500, 900, 1300}) {
    std::vector<std::string> args = {
        ZERODP_BIN,     "train", "--layers",      "1", "--heads",    "2", "--hidden", "32",
        "--seq-len",    "16",    "--micro-batch", "2", "--ranks",    "2", "--steps",  "100000",
        "--save-every", "1",     "--keep",        "2", "--save-dir", dir, "--out",    ""};
    if (last_step > 0) args.insert(args.end(), {"--resume", dir});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // zerodp itself is the child (no shell between), so SIGKILL reaches it.
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, ZERODP_BIN, &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    if (!checkpoint::latest(dir)) continue;  // killed before its first save completed
    const std::int64_t step = checkpoint::Checkpoint::open(dir).state().step;  // opens and verifies
    EXPECT_GE(step, last_step);
    last_step = step;
  }
  ASSERT_GT(last_step, 0) << "no save completed: the machine is too slow for these delays";
  const auto resumed = testing::run_zerodp("train " + kResumeModel + "--ranks 2 --steps " +
                                           std::to_string(last_step + 3) + " --resume '" + dir +
                                           "' --out '' --json");
  EXPECT_EQ(resumed.status, 0) << resumed.err;
}

}  // namespace
}  // namespace zerodp
