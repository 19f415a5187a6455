// What zerodp says, as a user reads it: in a log off a terminal, about odd paths, unknown
// commands and flags that do not apply.
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

using testing::run_zerodp;

// The output of `zerodp args` written to a pseudo-terminal, as mpirun hands one to its ranks.
std::string run_on_pty(const std::string& args, const std::string& env) {
  const std::string command = env + " '" + ZERODP_BIN + "' " + args + " 2>&1";
  int fd = -1;
  const pid_t pid = forkpty(&fd, nullptr, nullptr, nullptr);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) out.append(buffer, std::size_t(n));
  close(fd);
  int status = 0;
  waitpid(pid, &status, 0);
  return out;
}

using zerodp::testing::expect_refused;

TEST(MessagesCli, UnderMpirunTheLogIsPlainLinesEveryLogEvery) {
  // Before: the bar with \r and escape codes on every step, one endless line in the log.
  std::string out = run_on_pty("train --model mlp --params 20K --ranks 1 --steps 25 --log-every 10",
                               "OMPI_COMM_WORLD_SIZE=1");
  ASSERT_NE(out.find("step 25/25"), std::string::npos) << out;
  // The terminal turns each \n into \r\n; any other \r or escape is the bar.
  for (std::size_t at; (at = out.find("\r\n")) != std::string::npos;) out.erase(at, 1);
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  EXPECT_EQ(out.find('\033'), std::string::npos) << out;
  for (const char* line : {"step 1/25  loss", "step 10/25  loss", "step 20/25  loss"}) {
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
  }
  EXPECT_EQ(out.find("step 5/25  loss"), std::string::npos) << out;
}

TEST(MessagesCli, UnknownCommandIsNamedAndTheCommandsListed) {
  // Before: "A subcommand is required".
  expect_refused("foo", "unknown command 'foo'; the commands are plan, plot, measure, train");
}

TEST(MessagesCli, AMistypedCommandOrFlagGetsTheNearestOneAndTheCommandsOwnHelp) {
  // Before: "The following arguments were not expected: 1e9 --parms (see 'zerodp --help')".
  const std::pair<const char*, const char*> cases[] = {
      {"plna --params 1e9",
       "zerodp: unknown command 'plna'; did you mean 'plan'? the commands are plan, plot, "
       "measure, train, eval, sample, export (see 'zerodp --help')\n"},
      {"plan --parms 1e9 --gpus 8",
       "zerodp: unknown flag '--parms' for plan; did you mean --params? (see 'zerodp plan "
       "--help')\n"},
      {"plan --params 1e9 --gpu-memroy=80GB",
       "zerodp: unknown flag '--gpu-memroy' for plan; did you mean --gpu-memory? (see 'zerodp "
       "plan --help')\n"},
      {"train --stpes 10",
       "zerodp: unknown flag '--stpes' for train; did you mean --steps? (see 'zerodp train "
       "--help')\n"},
      {"train --checkpoint-act",  // an abbreviation
       "zerodp: unknown flag '--checkpoint-act' for train; did you mean "
       "--checkpoint-activations? (see 'zerodp train --help')\n"},
      {"plan --params 1e9 --zzzzzz 3",
       "zerodp: unknown flag '--zzzzzz' for plan (see 'zerodp plan --help')\n"},
      // What the parser refuses names the command's help too.
      {"plan --params 1e9 --gpus", "(see 'zerodp plan --help')\n"},
  };
  for (const auto& [args, line] : cases) {
    const auto r = run_zerodp(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_NE(r.err.find(line), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << args << ": " << r.err;
  }
}

TEST(MessagesCli, AllStagesAndStageExcludeEachOther) {
  // Before: --stage was ignored.
  expect_refused("measure --all-stages --stage 2 --params 4224 --steps 1 --ranks 1",
                 "--stage and --all-stages exclude each other");
}

TEST(MessagesCli, EmptyPathsAreRefused) {
  // Before: the default corpus, and no resume, without a word.
  expect_refused("train --data ''", "--data: expected a value, got an empty one");
  expect_refused("train --model mlp --resume ''", "--resume: expected a value, got an empty one");
}

TEST(MessagesCli, DataThatIsNotAFileSaysWhatItIs) {
  const std::string dir = ::testing::TempDir() + "/messages_cli_dir";
  mkdir(dir.c_str(), 0755);
  expect_refused("train --data '" + dir + "'", "(is a directory)");
  const std::string fifo = ::testing::TempDir() + "/messages_cli_fifo";
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  expect_refused("train --data '" + fifo + "'", "(is a FIFO (named pipe), not a file)");
  unlink(fifo.c_str());
}

TEST(MessagesCli, PathsWithControlCharactersAreQuoted) {
  // Before: the newline and the escape code went out raw: two lines, a recoloured terminal.
  const auto r = run_zerodp("train --data \"$(printf '/nonexistent/a\\nb\\033[31m')\"");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("'/nonexistent/a\\nb\\x1b[31m'"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.find('\033'), std::string::npos) << r.err;
}

TEST(MessagesCli, MlpRefusesTheGptsFlagsAndCountsSamples) {
  // Before: ignored silently.
  for (const char* flag : {"--layers 2", "--hidden 64", "--heads 2", "--seq-len 32",
                           "--data /etc/hostname", "--checkpoint-activations"}) {
    const std::string name = std::string(flag).substr(0, std::string(flag).find(' '));
    expect_refused(std::string("train --model mlp ") + flag,
                   name + " applies to --model gpt; this run trains --model mlp");
  }
  expect_refused("train --params 1M", "--params applies to --model mlp");
  // Before: "tokens/s" for an MLP that has no tokens.
  const auto r = run_zerodp("train --model mlp --params 20K --ranks 1 --steps 2 --out ''");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find(" samples/s over "), std::string::npos) << r.out;
}

TEST(MessagesCli, EvalTakesAFileOfExactlyOneWindow) {
  // Before: "... with a 10 % validation split needs at least ..." for a split eval never uses.
  const std::string dir = ::testing::TempDir() + "/messages_cli_eval";
  std::filesystem::remove_all(dir);
  const auto train = run_zerodp(
      "train --layers 1 --hidden 32 --heads 2 --seq-len 16 --micro-batch 2 --ranks 1 --steps 1 "
      "--out '' --save-dir '" +
      dir + "' --save-every 1");
  ASSERT_EQ(train.status, 0) << train.err;
  const std::string file = dir + "/one_window.txt";
  std::ofstream(file) << "seventeen bytes!!";  // seq-len 16 + 1
  const auto r = run_zerodp("eval --checkpoint '" + dir + "' --data '" + file + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("over 16 tokens (1 windows of 16)"), std::string::npos) << r.out;
}

TEST(MessagesCli, EveryErrorIsOneLineWhateverItsSourceQuotes) {
  // The checkpoint reader names the path it could not open as it is; main() still prints one
  // line with the control characters escaped, so no message of any part can break the log.
  const auto r = run_zerodp("eval --checkpoint \"$(printf '/nonexistent/c\\nd\\033[31m')\"");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.find('\033'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("c\\nd\\x1b[31m"), std::string::npos) << r.err;
}

TEST(MessagesCli, AResumeWithNoStepsLeftSaysHowManyAreDone) {
  // Before: "--steps: 3 steps are done already", the asked count given as the done one.
  const std::string dir = ::testing::TempDir() + "/messages_resume_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  const std::string tiny = "train --model mlp --params 20K --ranks 1 --out '' --save-dir '" + dir;
  ASSERT_EQ(run_zerodp(tiny + "' --steps 4").status, 0);
  const auto r = run_zerodp(tiny + "' --steps 3 --resume '" + dir + "'");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("has done 4 steps already and --steps 3 asks for no more; give --steps "
                       "above 4 to continue"),
            std::string::npos)
      << r.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace zerodp
