// A run as a hostile environment starts it: with its standard streams closed, with its corpus moved
// away or replaced by a pseudo-file, with an --out whose folders do not exist yet. Each case failed
// before: progress written into the checkpoint folder's lock file, a checkpoint that could no
// longer be exported, a /sys file refused as "changed after the run began", an export refused for a
// folder save_pretrained makes, and a message naming --seq-len to eval, which has no such flag.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::line_count;
using testing::run_program;
using testing::run_zerodp;
using testing::slurp;
using zerodp::testing::fresh_folder;

const std::string kTiny =
    "train --layers 1 --heads 1 --hidden 8 --seq-len 8 --steps 2 --ranks 1 --log-every 1 ";

bool holds(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A corpus of its own for a test: 4 kB of text.
std::string corpus_in(const std::string& dir) {
  const std::string path = dir + "/corpus.txt";
  std::ofstream out(path);
  for (int i = 0; i < 200; ++i) out << "line " << i << " of the corpus\n";
  return path;
}

TEST(HostileStreams, AClosedStdoutIsAFailedWriteAndNeverAFileTheRunOpened) {
  const std::string dir = fresh_folder("closed_out");
  // Descriptor 1 closed: the save folder's lock would be opened as 1, and the progress written
  // into it.
  const CliResult r = run_zerodp(kTiny + "--out '' --save-dir '" + dir + "/ck' 1>&-");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(holds(r.err, "zerodp: error: cannot write the output: Bad file descriptor")) << r.err;
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
  ASSERT_TRUE(fs::exists(dir + "/ck/.zerodp-lock"));
  const std::string lock = slurp(dir + "/ck/.zerodp-lock");
  EXPECT_FALSE(holds(lock, "step") || holds(lock, "zerodp train")) << lock;
  // The run itself was whole: its checkpoint is there and reads back.
  EXPECT_TRUE(fs::exists(dir + "/ck/step-00000002/manifest.json"));
  EXPECT_EQ(run_zerodp("eval --checkpoint '" + dir + "/ck'").status, 0);

  // A full disk under the JSON of eval and train: one line, exit 1 (they exited 0, the answer
  // lost); the run's checkpoint is whole all the same.
  for (const std::string& args : {"eval --checkpoint '" + dir + "/ck' --json",
                                  kTiny + "--out '' --json --save-dir '" + dir + "/full'"}) {
    const CliResult full = run_zerodp(args + " > /dev/full");
    EXPECT_EQ(full.status, 1) << args << ": " << full.err;
    EXPECT_EQ(full.err.rfind("zerodp: error: cannot write the output: ", 0), 0u) << full.err;
    EXPECT_EQ(line_count(full.err), 1u) << full.err;
  }
  EXPECT_TRUE(fs::exists(dir + "/full/step-00000002/manifest.json"));

  // The planner, stdin and stdout closed: one line, exit 1; stderr closed: exit 1, silently.
  const CliResult plan = run_zerodp("plan --params 7.5B --gpus 64 --gpu-memory 80GB 0<&- 1>&-");
  EXPECT_EQ(plan.status, 1) << plan.err;
  EXPECT_TRUE(holds(plan.err, "cannot write the output")) << plan.err;
  EXPECT_EQ(run_zerodp("plan --params 7.5B --gpus 64 --gpu-memory 80GB 1>&- 2>&-").status, 1);
  EXPECT_EQ(run_zerodp("plan --params 7.5B --gpus 64 --gpu-memory 80GB 2>&-").status, 0);
}

TEST(HostileStreams, ExportAndSampleNeedOnlyTheCheckpoint) {
  const std::string dir = fresh_folder("moved_corpus");
  const std::string corpus = corpus_in(dir);
  ASSERT_EQ(
      run_zerodp(kTiny + "--out '' --data '" + corpus + "' --save-dir '" + dir + "/ck'").status, 0);
  fs::remove(corpus);  // the corpus moved on, as corpora do
  const CliResult exported =
      run_zerodp("export --checkpoint '" + dir + "/ck' --out '" + dir + "/model'");
  EXPECT_EQ(exported.status, 0) << exported.err;
  EXPECT_TRUE(fs::exists(dir + "/model/model.safetensors"));
  const CliResult file =
      run_zerodp("export --checkpoint '" + dir + "/ck' --out '" + dir + "/w.safetensors'");
  EXPECT_EQ(file.status, 0) << file.err;
  const CliResult sampled =
      run_zerodp("sample --checkpoint '" + dir + "/ck' --length 5 --temperature 0");
  EXPECT_EQ(sampled.status, 0) << sampled.err;
  EXPECT_EQ(sampled.out.size(), std::string("The ").size() + 5 + 1) << sampled.out;
  // eval reads a corpus: it says which, and the flag it has to give another.
  const CliResult eval = run_zerodp("eval --checkpoint '" + dir + "/ck'");
  EXPECT_EQ(eval.status, 2) << eval.err;
  EXPECT_TRUE(holds(eval.err, "give it with --data FILE")) << eval.err;
  const CliResult help = run_zerodp("eval --help");
  EXPECT_TRUE(holds(help.out, "--data")) << help.out;
}

TEST(HostileStreams, EvalOfAFileSmallerThanAWindowNamesTheCheckpointsWindow) {
  const std::string dir = fresh_folder("one_byte");
  ASSERT_EQ(run_zerodp(kTiny + "--out '' --save-dir '" + dir + "/ck'").status, 0);
  std::ofstream(dir + "/one") << "x";
  const CliResult r = run_zerodp("eval --checkpoint '" + dir + "/ck' --data '" + dir + "/one'");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(holds(r.err, "has 1 byte; the checkpoint's n_positions 8")) << r.err;
  EXPECT_TRUE(holds(r.err, "at least 9")) << r.err;
  EXPECT_FALSE(holds(r.err, "--seq-len")) << r.err;
}

TEST(HostileStreams, APseudoFileIsRefusedAsOneBeforeTheRun) {
  for (const std::string path : {"/sys/devices/system/cpu/online", "/proc/self/status"}) {
    const CliResult r = run_zerodp(kTiny + "--out '' --data " + path);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_TRUE(holds(r.err, "--data: ") && holds(r.err, "is a pseudo-file of /")) << r.err;
    EXPECT_FALSE(holds(r.err, "changed after the run began")) << r.err;
    EXPECT_EQ(line_count(r.err), 1u) << r.err;
  }
}

TEST(HostileStreams, ExportMakesTheFoldersOfOutButNeverThroughALink) {
  const std::string dir = fresh_folder("out_folders");
  ASSERT_EQ(run_zerodp(kTiny + "--out '' --save-dir '" + dir + "/ck'").status, 0);
  const std::string ck = " --checkpoint '" + dir + "/ck'";
  // Folders that do not exist yet are made, for a folder export and a weights file alike.
  CliResult r = run_zerodp("export" + ck + " --out '" + dir + "/a/b/model'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(dir + "/a/b/model/config.json"));
  r = run_zerodp("export" + ck + " --out '" + dir + "/c/d/w.safetensors'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(dir + "/c/d/config.json"));

  // A link where a folder is to be made in: refused before anything is read or made.
  fs::create_directory(dir + "/elsewhere");
  fs::create_directory_symlink(dir + "/elsewhere", dir + "/link");
  r = run_zerodp("export" + ck + " --out '" + dir + "/link/new/model'");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(holds(r.err, "--out: ") && holds(r.err, "is a symbolic link")) << r.err;
  EXPECT_TRUE(fs::is_empty(dir + "/elsewhere"));
  // A bad checkpoint makes no folder.
  r = run_zerodp("export --checkpoint '" + dir + "/none' --out '" + dir + "/e/f/model'");
  EXPECT_NE(r.status, 0);
  EXPECT_FALSE(fs::exists(dir + "/e"));
}

}  // namespace
}  // namespace zerodp
