// A run sent SIGTERM (or SIGINT, or SIGPIPE when its reader goes) stops at a step boundary, saves,
// writes its loss curve, says where in one line and exits 143 (130); resumed with the same --steps
// it ends with the same bits as a run never stopped, and its loss.csv holds every step once. A
// second signal ends the run at once.
//
// No timing decides a result: the signal is sent once the run's own progress shows it
// training, and its stdout is a pipe of one page, so it cannot run more than a page of log
// lines (a few dozen steps of 400) ahead of what the test has read.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli/cli_testing.h"
#include "testing/temp_dir.h"

extern char** environ;

namespace zerodp {
namespace {
namespace fs = std::filesystem;

const std::string kStopRun =
    "train --layers 1 --heads 2 --hidden 32 --seq-len 16 --micro-batch 2 "
    "--ranks 2 --steps 400 --log-every 1";

using zerodp::testing::fresh_path;

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// zerodp running with its stdout (and stderr) on pipes of one page each.
class Child {
 public:
  explicit Child(const std::vector<std::string>& args) {
    EXPECT_EQ(pipe(out_), 0);
    EXPECT_EQ(pipe(err_), 0);
    fcntl(out_[0], F_SETPIPE_SZ, 4096);
    fcntl(err_[0], F_SETPIPE_SZ, 4096);
    std::vector<std::string> all = {ZERODP_BIN};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out_[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_[1], 2);
    posix_spawn_file_actions_addclose(&actions, out_[0]);
    posix_spawn_file_actions_addclose(&actions, err_[0]);
    // Signals handled as by default, whatever the test runner ignores (a background job's
    // SIGINT, say).
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
    EXPECT_EQ(posix_spawn(&pid_, ZERODP_BIN, &actions, &attr, argv.data(), environ), 0);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    close(out_[1]);
    close(err_[1]);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    close(out_[0]);
    close(err_[0]);
  }
  // Reads `fd` (stdout 1, stderr 2) until a line holds `what`; false at end of file.
  bool wait_for(int fd, const std::string& what) {
    std::string& text = fd == 1 ? out : err;
    std::size_t& line_start = fd == 1 ? out_line_ : err_line_;
    if ((fd == 1 ? out_[0] : err_[0]) < 0) return false;
    for (char c; read(fd == 1 ? out_[0] : err_[0], &c, 1) == 1;) {
      text += c;
      if (c != '\n') continue;
      const bool found = text.find(what, line_start) != std::string::npos;
      line_start = text.size();
      if (found) return true;
    }
    return false;
  }
  void signal(int sig) { kill(pid_, sig); }
  // The reader of its stdout goes away, as `| head -1` does once it has its line.
  void close_stdout() {
    close(out_[0]);
    out_[0] = -1;
  }
  // Reads both pipes to their end, then reaps the process.
  int finish() {
    wait_for(1, "\x01never\x01");
    wait_for(2, "\x01never\x01");
    int status = 0;
    waitpid(pid_, &status, 0);
    return status;
  }
  std::string out, err;

 private:
  int out_[2] = {-1, -1}, err_[2] = {-1, -1};
  std::size_t out_line_ = 0, err_line_ = 0;  // where the line being read starts
  pid_t pid_ = 0;
};

// The steps of a loss.csv, in order.
std::vector<long long> csv_steps(const std::string& path) {
  std::vector<long long> steps;
  std::istringstream in(testing::slurp(path));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) steps.push_back(std::stoll(line.substr(0, line.find(','))));
  return steps;
}

using zerodp::testing::weights_of;

// Starts the run, and sends `sig` once it has printed its first step.
std::unique_ptr<Child> stopped_run(const std::string& extra, int sig) {
  auto run = std::make_unique<Child>(words(kStopRun + " " + extra));
  EXPECT_TRUE(run->wait_for(1, "step 1/400")) << run->out;
  run->signal(sig);
  return run;
}

TEST(StopCli, SigtermSavesAndResumesToTheBitsOfARunNeverStopped) {
  const std::string dir = fresh_path("ck"), out = fresh_path("out"), straight = fresh_path("st");
  auto run = stopped_run("--save-dir " + dir + " --out " + out, SIGTERM);
  const int status = run->finish();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 143) << status << run->out << run->err;
  EXPECT_NE(run->err.find("zerodp: SIGTERM: stopping after this step"), std::string::npos);
  std::smatch m;
  const std::regex line("zerodp: stopped by SIGTERM after step ([0-9]+) of 400; checkpoint (" +
                        dir + "/step-0*([0-9]+)) \\(continue with --resume " + dir +
                        "\\); loss curve " + out + "/loss.csv, " + out + "/loss.svg\n");
  ASSERT_TRUE(std::regex_search(run->out, m, line)) << run->out;
  const long long stop = std::stoll(m[1]);
  EXPECT_EQ(std::stoll(m[3]), stop);
  EXPECT_TRUE(fs::exists(m[2].str() + "/manifest.json"));
  EXPECT_LT(stop, 400);
  std::vector<long long> expected(stop);
  for (long long s = 1; s <= stop; ++s) expected[s - 1] = s;
  EXPECT_EQ(csv_steps(out + "/loss.csv"), expected);
  EXPECT_TRUE(fs::exists(out + "/loss.svg"));

  // Resumed with the same --steps: the bits, and the loss history, of a run never stopped.
  const auto resumed = testing::run_zerodp(kStopRun + " --resume " + dir + " --save-dir " + dir +
                                           " --out " + out + " --json");
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  const auto never = testing::run_zerodp(kStopRun + " --out " + straight + " --json");
  ASSERT_EQ(never.status, 0) << never.err;
  EXPECT_EQ(weights_of(resumed), weights_of(never));
  expected.resize(400);
  for (long long s = 1; s <= 400; ++s) expected[s - 1] = s;
  EXPECT_EQ(csv_steps(out + "/loss.csv"), expected);
  EXPECT_EQ(testing::slurp(out + "/loss.csv"), testing::slurp(straight + "/loss.csv"));
}

// `train | head -1`: the reader takes its line and goes. The run stops as on SIGTERM, says so
// and where its checkpoint is on stderr (stdout has no reader), exits 141 as a shell reports
// SIGPIPE, and resumes to the bits of a run never stopped.
TEST(StopCli, AReaderThatGoesAwayStopsTheRunAsSigtermDoes) {
  const std::string dir = fresh_path("pipe"), out = fresh_path("pipeout"),
                    straight = fresh_path("ps");
  auto run = std::make_unique<Child>(words(kStopRun + " --save-dir " + dir + " --out " + out));
  ASSERT_TRUE(run->wait_for(1, "step 1/400")) << run->out;
  run->close_stdout();
  const int status = run->finish();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 141) << status << run->err;
  EXPECT_NE(run->err.find("zerodp: SIGPIPE: the reader of the output is gone; stopping after "
                          "this step"),
            std::string::npos)
      << run->err;
  std::smatch m;
  const std::regex line("zerodp: stopped by SIGPIPE after step ([0-9]+) of 400; checkpoint (" +
                        dir + "/step-0*([0-9]+)) \\(continue with --resume " + dir +
                        "\\); loss curve " + out + "/loss.csv, " + out + "/loss.svg\n");
  ASSERT_TRUE(std::regex_search(run->err, m, line)) << run->err;
  const long long stop = std::stoll(m[1]);
  EXPECT_EQ(std::stoll(m[3]), stop);
  EXPECT_LT(stop, 400);
  EXPECT_TRUE(fs::exists(m[2].str() + "/manifest.json"));
  EXPECT_EQ(csv_steps(out + "/loss.csv").size(), std::size_t(stop));

  const auto resumed = testing::run_zerodp(kStopRun + " --resume " + dir + " --save-dir " + dir +
                                           " --out " + out + " --json");
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  const auto never = testing::run_zerodp(kStopRun + " --out " + straight + " --json");
  ASSERT_EQ(never.status, 0) << never.err;
  EXPECT_EQ(weights_of(resumed), weights_of(never));
  EXPECT_EQ(testing::slurp(out + "/loss.csv"), testing::slurp(straight + "/loss.csv"));
}

TEST(StopCli, SigintWithoutSaveDirStillWritesTheCurveAndSaysSo) {
  const std::string out = fresh_path("int");
  auto run = stopped_run("--out " + out, SIGINT);
  const int status = run->finish();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130) << status << run->err;
  EXPECT_NE(run->err.find("zerodp: SIGINT: stopping after this step"), std::string::npos);
  std::smatch m;
  const std::regex line(
      "zerodp: stopped by SIGINT after step ([0-9]+) of 400; no checkpoint "
      "\\(no --save-dir\\); loss curve " +
      out + "/loss.csv, " + out + "/loss.svg\n");
  ASSERT_TRUE(std::regex_search(run->out, m, line)) << run->out;
  EXPECT_EQ(csv_steps(out + "/loss.csv").size(), std::stoull(m[1]));
}

TEST(StopCli, ASecondSignalEndsTheRunAtOnce) {
  const std::string dir = fresh_path("twice");
  auto run = stopped_run("--save-dir " + dir + " --out ''", SIGTERM);
  // The first signal is handled (it says so), and the run cannot end before the test reads
  // its stdout (a full pipe): the second one finds it still running.
  ASSERT_TRUE(run->wait_for(2, "stopping after this step")) << run->err;
  run->signal(SIGTERM);
  const int status = run->finish();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status << run->out;
}

TEST(StopCli, AResumedRunKeepsTheEarlierHistoryAndDropsWhatItSupersedes) {
  const std::string dir = fresh_path("hist"), out = fresh_path("histout");
  const std::string model = "train --layers 1 --heads 2 --hidden 32 --seq-len 16 --ranks 2 ";
  ASSERT_EQ(testing::run_zerodp(model + "--steps 6 --save-every 3 --keep 3 --save-dir " + dir +
                                " --out " + out)
                .status,
            0);
  // Rewound to step 3 with more steps: 4..6 of the earlier run are superseded, not kept twice.
  const auto resumed =
      testing::run_zerodp(model + "--steps 8 --resume " + dir + "/step-00000003 --out " + out);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_EQ(csv_steps(out + "/loss.csv"), (std::vector<long long>{1, 2, 3, 4, 5, 6, 7, 8}));
  // Not our file: refused, not replaced.
  { std::ofstream(out + "/loss.csv") << "epoch,accuracy\n1,0.5\n"; }
  const auto foreign =
      testing::run_zerodp(model + "--steps 9 --resume " + dir + "/step-00000003 --out " + out);
  EXPECT_EQ(foreign.status, 1);
  EXPECT_NE(foreign.err.find(out + "/loss.csv: line 1 is not 'step,train_loss,val_loss'"),
            std::string::npos)
      << foreign.err;
  EXPECT_EQ(testing::slurp(out + "/loss.csv"), "epoch,accuracy\n1,0.5\n");
}

}  // namespace
}  // namespace zerodp
