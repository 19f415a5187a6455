// A save dir belongs to one run, as `zerodp train` and `export` are used: another run's folder
// is refused at start, two runs cannot write one folder, a rewind sets the later checkpoints
// aside, --save-dir alone saves at the end, and nothing a command writes lands in a checkpoint.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/cli_testing.h"
#include "testing/temp_dir.h"
#include "zerodp/checkpoint/checkpoint.h"

namespace zerodp {
namespace {
namespace fs = std::filesystem;

const std::string kTrain =
    "train --layers 1 --heads 2 --hidden 32 --seq-len 16 --micro-batch 2 --ranks 2 --out '' ";

using zerodp::testing::fresh_path;

using zerodp::testing::weights_of;

// The reproduction: a folder with another run's steps 22 and 23.
TEST(SaveDirCli, AnotherRunsFolderIsRefusedAtStart) {
  const std::string dir = fresh_path("foreign");
  ASSERT_EQ(testing::run_zerodp(kTrain + "--steps 2 --save-dir '" + dir + "'").status, 0);
  fs::rename(dir + "/step-00000002", dir + "/step-00000023");
  const auto r = testing::run_zerodp(kTrain + "--steps 5 --save-every 1 --save-dir '" + dir + "'");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "zerodp: --save-dir: '" + dir +
                       "' holds checkpoints of another run (step-00000023); --resume '" + dir +
                       "' to continue that run, or pick another folder\n");
  EXPECT_FALSE(r.has("step 1/"));  // refused before training
  EXPECT_EQ(checkpoint::latest(dir), dir + "/step-00000023");
}

TEST(SaveDirCli, AFolderBeingWrittenIsRefusedNamingTheHolder) {
  const std::string dir = fresh_path("locked");
  const auto held = checkpoint::SaveDir::claim(dir, nullptr);  // this process is the other run
  const auto r = testing::run_zerodp(kTrain + "--steps 2 --save-dir '" + dir + "'");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(testing::has(r.err, "--save-dir: '" + dir +
                                      "' is being written by another run (pid " +
                                      std::to_string(getpid()) + " on "))
      << r.err;
  EXPECT_FALSE(checkpoint::latest(dir));
}

// Two independent runs into one folder at once (as mpirun without --backend mpi starts them):
// whichever comes second is refused, by the lock or by the first one's checkpoints.
TEST(SaveDirCli, OfTwoRunsStartedTogetherOneIsRefused) {
  const std::string dir = fresh_path("two");
  const std::string one = "'" ZERODP_BIN "' " + kTrain + "--steps 3 --save-every 1 --save-dir '" +
                          dir + "' >/dev/null 2>&1";
  const auto r = testing::run_zerodp("--help >/dev/null; (" + one + "; echo $?) & (" + one +
                                     "; echo $?) & wait");
  EXPECT_TRUE(r.out == "0\n2\n" || r.out == "2\n0\n") << r.out;
  EXPECT_EQ(checkpoint::Checkpoint::open(dir).state().step, 3);
  if (std::system("command -v mpirun >/dev/null 2>&1") == 0) {
    const std::string mpi_dir = fresh_path("two_mpi");
    const auto m = testing::run_zerodp(
        "--help >/dev/null; mpirun -np 2 --oversubscribe --allow-run-as-root '" ZERODP_BIN "' " +
            kTrain + "--steps 2 --save-dir '" + mpi_dir + "' 2>&1 >/dev/null; echo $?",
        "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ");
    EXPECT_FALSE(m.out.ends_with("\n0\n") || m.out == "0\n")
        << "mpirun ran two trainings into one folder";
    // Refused for the right reason: by the lock, or by the first one's checkpoints.
    EXPECT_TRUE(testing::has(m.out, "is being written by another run") ||
                testing::has(m.out, "holds checkpoints of another run"))
        << m.out;
  }
}

TEST(SaveDirCli, SaveDirAloneSavesAtTheEnd) {
  const std::string dir = fresh_path("end");
  const auto r = testing::run_zerodp(kTrain + "--steps 3 --save-dir '" + dir + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.has("saved " + dir + "/step-00000003")) << r.out;
  EXPECT_EQ(checkpoint::Checkpoint::open(dir).state().step, 3);
  EXPECT_TRUE(testing::run_zerodp("train --help").has("saves at the end"));
}

TEST(SaveDirCli, ASaveDirThatIsAFileIsRefusedBeforeTraining) {
  const std::string file = fresh_path("file");
  std::ofstream(file) << "a file";
  const auto r = testing::run_zerodp(kTrain + "--steps 2 --save-every 1 --save-dir '" + file + "'");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(testing::has(r.err, "--save-dir: '" + file + "' is not a folder")) << r.err;
  EXPECT_FALSE(r.has("step 1/"));
}

TEST(SaveDirCli, ARewindSetsTheLaterCheckpointsAsideAndResumesRight) {
  const std::string dir = fresh_path("rewind");
  ASSERT_EQ(
      testing::run_zerodp(kTrain + "--steps 4 --save-every 1 --keep 4 --save-dir '" + dir + "'")
          .status,
      0);
  // A rewind that is refused (3 ranks cannot split the global batch of 4) moves nothing.
  std::string on_three = kTrain;
  on_three.replace(on_three.find("--ranks 2"), 9, "--ranks 3");
  const auto refused = testing::run_zerodp(on_three + "--steps 4 --resume '" + dir +
                                           "/step-00000002' --save-dir '" + dir + "'");
  ASSERT_EQ(refused.status, 2) << refused.err;
  EXPECT_TRUE(testing::has(refused.err, "cannot split it evenly")) << refused.err;
  EXPECT_EQ(checkpoint::Checkpoint::open(dir).state().step, 4);
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_NE(e.path().filename().string().rfind("superseded-", 0), 0u) << e.path();
  }
  const auto r = testing::run_zerodp(kTrain + "--steps 4 --resume '" + dir +
                                     "/step-00000002' --save-dir '" + dir + "' --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(testing::has(r.err,
                           "rewound to step 2: moved 2 later checkpoint(s) of this run "
                           "(step-00000003 to step-00000004) to '" +
                               dir + "/superseded-"))
      << r.err;
  // The superseded checkpoints are kept aside, whole; what --resume and eval now find is the
  // rewound run's step 4, bitwise the same as a run never interrupted.
  int aside = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("superseded-", 0) != 0) continue;
    EXPECT_EQ(checkpoint::Checkpoint::open(e.path() / "step-00000004").state().step, 4);
    ++aside;
  }
  EXPECT_EQ(aside, 1);
  EXPECT_EQ(checkpoint::Checkpoint::open(dir).state().step, 4);
  const auto straight = testing::run_zerodp(kTrain + "--steps 4 --json");
  EXPECT_EQ(weights_of(r), weights_of(straight));

  // Rewound to a shorter run: its last checkpoint, not the stale later one, is what is found.
  const auto shorter = testing::run_zerodp(kTrain + "--steps 3 --resume '" + dir +
                                           "/step-00000002' --save-dir '" + dir + "'");
  ASSERT_EQ(shorter.status, 0) << shorter.err;
  EXPECT_TRUE(
      shorter.has("rewound to step 2: moved 1 later checkpoint(s) of this run "
                  "(step-00000004)"))
      << shorter.out;
  EXPECT_EQ(checkpoint::Checkpoint::open(dir).state().step, 3);
}

TEST(SaveDirCli, ExportNeverWritesIntoACheckpoint) {
  const std::string dir = fresh_path("export");
  ASSERT_EQ(testing::run_zerodp(kTrain + "--steps 1 --save-dir '" + dir + "'").status, 0);
  const std::string folder = dir + "/step-00000001";
  const std::string manifest = testing::slurp(folder + "/manifest.json");
  for (const std::string& out : {folder + "/manifest.json", folder + "/model.safetensors"}) {
    const auto r = testing::run_zerodp("export --checkpoint '" + dir + "' --out '" + out + "'");
    EXPECT_EQ(r.status, 2) << out;
    EXPECT_TRUE(testing::has(r.err, "is inside the checkpoint")) << r.err;
  }
  EXPECT_EQ(testing::slurp(folder + "/manifest.json"), manifest);
  EXPECT_FALSE(fs::exists(folder + "/config.json"));
  EXPECT_EQ(checkpoint::Checkpoint::open(dir).state().step, 1);  // shards and manifest intact

  const std::string work = fresh_path("export_out");
  fs::create_directories(work + "/folder");
  const auto empty =
      testing::run_zerodp("export --checkpoint '" + dir + "' --out ''", "cd '" + work + "' && ");
  EXPECT_EQ(empty.status, 2);
  EXPECT_TRUE(testing::has(empty.err, "--out: expected a value, got an empty one")) << empty.err;
  // An empty folder takes the Hugging Face files, and nothing else is left behind.
  const auto folder_out =
      testing::run_zerodp("export --checkpoint '" + dir + "' --out '" + work + "/folder'");
  EXPECT_EQ(folder_out.status, 0) << folder_out.err;
  std::set<std::string> written;
  for (const auto& e : fs::recursive_directory_iterator(work)) {
    written.insert(fs::relative(e.path(), work).string());
  }
  EXPECT_EQ(written,
            (std::set<std::string>{"folder", "folder/model.safetensors", "folder/config.json",
                                   "folder/generation_config.json", "folder/tokenizer.json",
                                   "folder/tokenizer_config.json"}));
}

}  // namespace
}  // namespace zerodp
