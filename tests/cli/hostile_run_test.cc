// Training as a hostile user meets it: a run saving inside another run's folder, a manifest
// whose data position is near 2^63, a learning rate that makes the run diverge, a rank whose
// shard cannot be written, a thousand ranks on two cores. Each case failed before: another
// run's checkpoint deleted, a checkpoint its own reader refuses, a diverged run saved and
// ended as a success, a failure reported without its cause, minutes of spinning.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

namespace fs = std::filesystem;
using testing::line_count;
using testing::run_zerodp;
using testing::slurp;

using zerodp::testing::fresh_folder;

bool holds(const testing::CliResult& r, const std::string& part) {
  return r.err.find(part) != std::string::npos;
}

const std::string kBare = "train --model mlp --params 20K --log-every 1 ";
const std::string kRun = kBare + "--out '' ";
const std::string kMlp = kRun + "--steps 2 ";

TEST(HostileRuns, ASaveFolderInsideAnotherRunsFolderIsRefused) {
  const std::string dir = fresh_folder("nested");
  ASSERT_EQ(run_zerodp(kMlp + "--ranks 2 --save-dir '" + dir + "/a'").status, 0);
  ASSERT_TRUE(fs::exists(dir + "/a/step-00000002/manifest.json"));
  // Inside a checkpoint: run A's --keep would remove the folder, and run B's with it.
  auto r = run_zerodp(kMlp + "--ranks 2 --save-dir '" + dir + "/a/step-00000002/b'");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(holds(r, "--save-dir: ") && holds(r, "is inside the checkpoint")) << r.err;
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
  // Inside the save folder of another run, below it.
  r = run_zerodp(kMlp + "--ranks 2 --save-dir '" + dir + "/a/sub/b'");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(holds(r, "is inside the save folder")) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/a/sub"));
}

TEST(HostileRuns, PruningRemovesOnlyWhatASaveWrote) {
  const std::string dir = fresh_folder("prune");
  const std::string ck = dir + "/ck";
  ASSERT_EQ(run_zerodp(kMlp + "--ranks 2 --save-dir '" + ck + "'").status, 0);
  // Someone else's file in the old checkpoint: the run that prunes it must leave it.
  std::ofstream(ck + "/step-00000002/notes.txt") << "mine\n";
  const auto r = run_zerodp(
      "train --model mlp --params 20K --steps 4 --log-every 1 --out '' "
      "--ranks 2 --keep 1 --resume '" +
      ck + "' --save-dir '" + ck + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(ck + "/step-00000004/manifest.json"));
  EXPECT_FALSE(fs::exists(ck + "/step-00000002/manifest.json"));
  EXPECT_FALSE(fs::exists(ck + "/step-00000002/rank-00000-of-00002.bin"));
  EXPECT_EQ(slurp(ck + "/step-00000002/notes.txt"), "mine\n");
}

// The manifest of a tiny run, with its data position replaced by `samples_done`.
std::string checkpoint_with_samples_done(const std::string& dir, std::uint64_t samples_done) {
  const std::string ck = dir + "/ck";
  EXPECT_EQ(run_zerodp(kMlp + "--ranks 1 --save-dir '" + ck + "'").status, 0);
  const std::string step = ck + "/step-00000002";
  nlohmann::json m = nlohmann::json::parse(slurp(step + "/manifest.json"));
  m["state"]["samples_done"] = samples_done;
  std::ofstream(step + "/manifest.json", std::ios::trunc) << m.dump();
  return step;
}

TEST(HostileRuns, ADataPositionBeyondWhatAManifestRecordsIsRefused) {
  const std::string dir = fresh_folder("samples");
  const std::string step = checkpoint_with_samples_done(dir, (std::uint64_t{1} << 63) - 8);
  const auto r = run_zerodp(kRun + "--ranks 1 --steps 4 --resume '" + step + "'");
  EXPECT_EQ(r.status, 2) << r.err;  // a manifest edited by hand is input
  EXPECT_TRUE(holds(r, "state.samples_done")) << r.err;
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
}

TEST(HostileRuns, AResumeThatWouldPassTheLargestDataPositionIsRefusedBeforeItsFirstStep) {
  const std::string dir = fresh_folder("samples_end");
  // 2^62 - 8 is accepted; two more steps of 8 samples each would pass 2^62.
  const std::string step = checkpoint_with_samples_done(dir, (std::uint64_t{1} << 62) - 8);
  const auto r = run_zerodp(kRun + "--ranks 1 --steps 4 --resume '" + step + "' --save-dir '" +
                            dir + "/next'");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(holds(r, "--steps: ") && holds(r, "(2^62)")) << r.err;
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/next/step-00000004"));
}

TEST(HostileRuns, ADivergedRunStopsNamingTheStepAndSavesNothingOfIt) {
  int refused_evals = 0;
  for (const std::string precision : {"bf16", "fp16"}) {
    const std::string dir = fresh_folder("diverged_" + precision);
    const auto r = run_zerodp(
        "train --layers 1 --hidden 32 --heads 2 --seq-len 16 --micro-batch 2 --ranks 2 --steps 30 "
        "--lr 1e30 --log-every 1 --out '' "
        "--precision " +
        precision + " --save-dir '" + dir + "/ck' --save-every 1");
    EXPECT_EQ(r.status, 1) << precision << ": " << r.err;
    EXPECT_TRUE(holds(r, "training diverged at step ") || holds(r, "training diverged by step "))
        << r.err;
    EXPECT_EQ(line_count(r.err), 1u) << r.err;
    // Every checkpoint kept is one of a step before the one named. The update of the last
    // finite step may already have made weights whose loss is not finite: eval refuses those,
    // in one line, rather than printing a loss of NaN as a result.
    const std::size_t at = r.err.find("step ") + 5;
    const long stopped = std::stol(r.err.substr(at));
    for (const auto& e : fs::directory_iterator(dir + "/ck")) {
      const std::string name = e.path().filename().string();
      if (name.rfind("step-", 0) != 0) continue;
      EXPECT_LT(std::stol(name.substr(5)), stopped) << name;
      const auto eval = run_zerodp("eval --checkpoint '" + e.path().string() + "'");
      if (eval.status == 0) continue;
      refused_evals += 1;
      EXPECT_EQ(eval.status, 1) << eval.err;
      EXPECT_TRUE(eval.err.find("they are not a trained model") != std::string::npos) << eval.err;
      EXPECT_EQ(line_count(eval.err), 1u) << eval.err;
    }
  }
  // With a learning rate of 1e30 the first update leaves weights near 1e29, whose forward
  // overflows fp32: the refusal above is met, not only allowed.
  EXPECT_GT(refused_evals, 0);
}

TEST(HostileRuns, ASaveThatFailsOnOneRankIsReportedWithThatRanksReason) {
  const std::string dir = fresh_folder("rank_fails");
  // Rank 3's shard name is taken by a folder: only rank 3's write fails.
  fs::create_directories(dir + "/ck/step-00000002/rank-00003-of-00004.bin");
  const auto r = run_zerodp(kMlp + "--ranks 4 --save-dir '" + dir + "/ck'");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(holds(r, "step-00000002 failed on rank 3: ")) << r.err;
  EXPECT_TRUE(holds(r, "it is a directory")) << r.err;
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/ck/step-00000002/manifest.json"));
}

TEST(HostileRuns, ALossCurveThatIsNotOneIsRefusedWithItsNameEscaped) {
  const std::string dir = fresh_folder("curve");
  ASSERT_EQ(run_zerodp(kMlp + "--ranks 1 --save-dir '" + dir + "/ck'").status, 0);
  // A folder whose name clears the screen, holding a loss.csv that is not a curve.
  const std::string out = dir + "/\x1b[2Jout";
  fs::create_directories(out);
  std::ofstream(out + "/loss.csv") << "\x1b]0;owned\x07not a curve\n";
  const auto r =
      run_zerodp(kBare + "--ranks 1 --steps 4 --resume '" + dir + "/ck' --out '" + out + "'");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(holds(r, "\\x1b[2Jout/loss.csv") && holds(r, "is not a zerodp loss curve")) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
}

// A folder on a tmpfs of `kib` KiB, unmounted when the test ends; empty when this machine
// does not let the test mount one (not root, no CAP_SYS_ADMIN).
class SmallDisk {
 public:
  SmallDisk(const std::string& dir, int kib) : dir_(dir) {
    const std::string options = "size=" + std::to_string(kib) + "k";
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, options.c_str()) == 0) mounted_ = true;
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }

 private:
  std::string dir_;
  bool mounted_ = false;
};

TEST(HostileRuns, ASaveOnAFullDiskFailsWithTheCauseAndLeavesNoHalfCheckpoint) {
  const std::string dir = fresh_folder("full_disk");
  fs::create_directories(dir + "/disk");
  const SmallDisk disk(dir + "/disk", 64);  // a shard of this model alone is 120 KiB
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  const auto r = run_zerodp(kMlp + "--ranks 2 --save-dir '" + dir + "/disk/ck'");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(holds(r, "failed on rank ") && holds(r, "No space left on device")) << r.err;
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
  // Nothing a reader could take for a checkpoint, and no temporary file left to fill the disk.
  for (const auto& e : fs::recursive_directory_iterator(dir + "/disk/ck")) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".tmp"), std::string::npos) << e.path();
    EXPECT_NE(name, "manifest.json") << e.path();
  }
}

TEST(HostileRuns, AFileSizeLimitTakesTheFullDiskPathAndLeavesNoTemporaryFile) {
  // ulimit -f (sh's 512-byte blocks: 20 KiB, less than a shard): a save, then an export, each
  // fails as on a full disk, one line naming the file and EFBIG's words, exit 1, nothing of it
  // left behind. SIGXFSZ ended the process mid-save before, leaving rank-*.bin.tmp-* files.
  const std::string dir = fresh_folder("file_size_limit");
  const auto r = run_zerodp(kMlp + "--ranks 2 --save-dir '" + dir + "/ck'", "ulimit -f 40; ");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(holds(r, "File too large")) << r.err;
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
  for (const auto& e : fs::recursive_directory_iterator(dir + "/ck")) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".tmp"), std::string::npos) << e.path();
    EXPECT_NE(name, "manifest.json") << e.path();
  }
  ASSERT_EQ(run_zerodp("train --layers 1 --hidden 32 --heads 2 --seq-len 16 --micro-batch 2 "
                       "--ranks 1 --steps 1 --out '' --save-dir '" +
                       dir + "/whole'")
                .status,
            0);
  const auto e = run_zerodp("export --checkpoint '" + dir + "/whole' --out '" + dir + "/hf'",
                            "ulimit -f 40; ");
  EXPECT_EQ(e.status, 1) << e.err;
  EXPECT_TRUE(holds(e, "File too large")) << e.err;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name == "ck" || name == "whole") << entry.path();
  }
}

// A thousand thread ranks on two cores train and agree. (How long it takes is a benchmark's
// question, bench/bench_many_ranks.cc: a check over every rank's buffers that each rank made
// over every pair took minutes here.) One validation batch, not four: each is a forward pass
// gathering every unit across the thousand ranks, and the three more took a fifth of this
// test's time under ASan.
TEST(HostileRuns, AThousandThreadRanksTrainAStep) {
  const auto r = run_zerodp(
      "train --model mlp --params 100K --ranks 1024 --steps 1 --eval-batches 1 --out '' --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ranks"], 1024);
  EXPECT_EQ(j["steps"], 1);
  EXPECT_TRUE(std::isfinite(j["final_loss"].get<double>()));
}

}  // namespace
}  // namespace zerodp
