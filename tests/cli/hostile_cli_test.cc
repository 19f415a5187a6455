// zerodp as a hostile user meets it: links planted where it writes, FIFOs and devices where it
// reads or writes, JSON nested 100,000 deep, numbers no reader can hold, control characters and
// megabytes in a config's strings. Each case failed before: a file written through a link, a
// hang, a crash, "unexpected failure", a wrapped number, a forged terminal line.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
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

void put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// One line, exit status 2, holding `part`.
void expect_refused(const testing::CliResult& r, const std::string& part) {
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
}

const std::string kTinyMlp = "train --model mlp --params 20K --ranks 1 --steps 2 --log-every 1";

TEST(HostileFiles, ALockFileThatIsALinkIsRefusedAndItsTargetUntouched) {
  const std::string dir = fresh_folder("lock_link");
  put(dir + "/victim", "precious\n");
  fs::create_directories(dir + "/ck");
  fs::create_symlink(dir + "/victim", dir + "/ck/.zerodp-lock");
  const auto r = run_zerodp(kTinyMlp + " --out '' --save-dir '" + dir + "/ck'");
  expect_refused(r, "--save-dir: cannot write in");
  EXPECT_EQ(slurp(dir + "/victim"), "precious\n");
}

TEST(HostileFiles, ALockFileThatIsAHardLinkIsRefusedAndItsTargetUntouched) {
  const std::string dir = fresh_folder("lock_hardlink");
  put(dir + "/victim", "precious\n");
  fs::create_directories(dir + "/ck");
  fs::create_hard_link(dir + "/victim", dir + "/ck/.zerodp-lock");
  const auto r = run_zerodp(kTinyMlp + " --out '' --save-dir '" + dir + "/ck'");
  expect_refused(r, "is not a lock file of zerodp's");
  EXPECT_EQ(slurp(dir + "/victim"), "precious\n");
}

TEST(HostileFiles, LinksPlantedAtTheOldTemporaryNamesAreNotWrittenThrough) {
  const std::string dir = fresh_folder("planted_tmp");
  put(dir + "/victim", "precious\n");
  fs::create_symlink(dir + "/victim", dir + "/fig.svg.tmp");
  const auto plot = run_zerodp("plot --params 1e9 --out '" + dir + "/fig.svg'");
  EXPECT_EQ(plot.status, 0) << plot.err;
  fs::create_directories(dir + "/out");
  fs::create_symlink(dir + "/victim", dir + "/out/loss.csv.tmp");
  fs::create_symlink(dir + "/victim", dir + "/out/loss.svg.tmp");
  const auto train = run_zerodp(kTinyMlp + " --out '" + dir + "/out'");
  EXPECT_EQ(train.status, 0) << train.err;
  EXPECT_EQ(slurp(dir + "/victim"), "precious\n");
  EXPECT_NE(slurp(dir + "/fig.svg").find("<svg"), std::string::npos);
}

TEST(HostileFiles, AnOutputThatIsAFifoOrADeviceIsRefusedAndLeftAsItIs) {
  const std::string dir = fresh_folder("special_out");
  ASSERT_EQ(::mkfifo((dir + "/fifo.svg").c_str(), 0644), 0);
  expect_refused(run_zerodp("plot --params 1e9 --out '" + dir + "/fifo.svg'"),
                 "--out: '" + dir + "/fifo.svg' is a FIFO (named pipe), not a file");
  EXPECT_TRUE(fs::is_fifo(dir + "/fifo.svg"));
  ASSERT_EQ(::mknod((dir + "/null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0)
      << "the tests run as root (make test installs as root)";
  expect_refused(run_zerodp("plot --params 1e9 --out '" + dir + "/null'"), "is a device");
  EXPECT_TRUE(fs::is_character_file(dir + "/null"));
  // The export: a device for the weights is refused before a checkpoint is even read.
  expect_refused(run_zerodp("export --checkpoint '" + dir + "' --out '" + dir + "/null'"),
                 "--out: '" + dir + "/null' is a device");
  EXPECT_TRUE(fs::is_character_file(dir + "/null"));
}

TEST(HostileFiles, ACurveThatCannotBeWrittenIsFoundBeforeTheFirstStep) {
  // Before: every step ran, then the run failed writing its curve.
  const std::string dir = fresh_folder("curve");
  fs::create_directories(dir + "/out");
  ASSERT_EQ(::mkfifo((dir + "/out/loss.svg").c_str(), 0644), 0);
  const auto r = run_zerodp(kTinyMlp + " --out '" + dir + "/out'");
  expect_refused(r, "--out: '" + dir + "/out/loss.svg' is a FIFO");
  EXPECT_FALSE(r.has("step 1/2")) << r.out;
  put(dir + "/file", "");
  expect_refused(run_zerodp(kTinyMlp + " --out '" + dir + "/file/sub'"),
                 "--out: cannot make the folder");
}

TEST(HostileFiles, SpecialFilesAsConfigsAreRefusedAtOnce) {
  const std::string dir = fresh_folder("special_in");
  expect_refused(run_zerodp("plan --model-config /dev/zero --gpus 8", "timeout 20 "),
                 "--model-config: cannot read '/dev/zero' (is a device, not a file");
  expect_refused(
      run_zerodp("plan --params 1e9 --gpus 8 --deepspeed-config /dev/urandom", "timeout 20 "),
      "--deepspeed-config: cannot read '/dev/urandom' (is a device");
  ASSERT_EQ(::mkfifo((dir + "/ds.json").c_str(), 0644), 0);
  // A FIFO with no writer: before, the read waited forever (here: until timeout's 124).
  expect_refused(run_zerodp("plan --params 1e9 --gpus 8 --deepspeed-config '" + dir + "/ds.json'",
                            "timeout 20 "),
                 "is a FIFO (named pipe), not a file");
  put(dir + "/big.json", std::string(17 << 20, ' '));
  expect_refused(run_zerodp("plan --model-config '" + dir + "/big.json' --gpus 8"),
                 "is larger than 16777216 bytes");
}

TEST(HostileJson, NestingAHundredThousandDeepIsOneLineNotACrash) {
  const std::string dir = fresh_folder("deep");
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  put(dir + "/ds.json", "{\"zero_optimization\": {\"stage\": " + deep + "}}");
  put(dir + "/config.json", "{\"model_type\": \"llama\", \"vocab_size\": " + deep + "}");
  expect_refused(run_zerodp("plan --params 1e9 --gpus 8 --deepspeed-config '" + dir + "/ds.json'"),
                 "nests more than 64 levels deep");
  expect_refused(run_zerodp("plan --model-config '" + dir + "/config.json' --gpus 8"),
                 "nests more than 64 levels deep");
}

TEST(HostileJson, ADeepManifestIsOneLineNamingIt) {
  const std::string dir = fresh_folder("deep_manifest");
  ASSERT_EQ(run_zerodp("train --layers 1 --hidden 32 --heads 2 --seq-len 16 --micro-batch 2 "
                       "--ranks 1 --steps 1 --out '' --save-dir '" +
                       dir + "/ck'")
                .status,
            0);
  std::string step;
  for (const auto& e : fs::directory_iterator(dir + "/ck")) {
    if (e.path().filename().string().rfind("step-", 0) == 0) step = e.path().string();
  }
  ASSERT_FALSE(step.empty());
  nlohmann::json m = nlohmann::json::parse(slurp(step + "/manifest.json"));
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  std::string text = m.dump();
  text.insert(text.size() - 1, ", \"extra\": " + deep);
  put(step + "/manifest.json", text);
  const auto r = run_zerodp("eval --checkpoint '" + step + "'");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("manifest.json: it nests more than 64 levels deep"), std::string::npos)
      << r.err;
  EXPECT_EQ(line_count(r.err), 1u) << r.err.substr(0, 300);
}

TEST(HostileNumbers, NumbersNoReaderHoldsAreRefusedNamingTheFileOrTheField) {
  const std::string dir = fresh_folder("numbers");
  put(dir + "/stage.json", "{\"zero_optimization\": {\"stage\": 1e400}}");
  expect_refused(
      run_zerodp("plan --params 1e9 --gpus 8 --deepspeed-config '" + dir + "/stage.json'"),
      "stage.json: not JSON");
  const std::string llama =
      "\"model_type\": \"llama\", \"hidden_size\": 4096, \"num_attention_heads\": 32, "
      "\"intermediate_size\": 11008";
  put(dir + "/vocab.json", "{" + llama + ", \"num_hidden_layers\": 32, \"vocab_size\": 1e400}");
  expect_refused(run_zerodp("plan --model-config '" + dir + "/vocab.json' --gpus 8"),
                 "vocab.json: not JSON");
  put(dir + "/layers.json", "{" + llama + ", \"num_hidden_layers\": 1e17, \"vocab_size\": 32000}");
  expect_refused(run_zerodp("plan --model-config '" + dir + "/layers.json' --gpus 8"),
                 "\"num_hidden_layers\" must be a whole number >= 1, got 1e+17");
  put(dir + "/layers2.json",
      "{" + llama + ", \"num_hidden_layers\": 100000000000000000, \"vocab_size\": 32000}");
  expect_refused(run_zerodp("plan --model-config '" + dir + "/layers2.json' --gpus 8"),
                 "\"num_hidden_layers\" must be at most 4294967296");
  put(dir + "/bucket.json",
      "{\"zero_optimization\": {\"stage\": 2, \"reduce_bucket_size\": 1.7e19}}");
  expect_refused(run_zerodp("plan --params 1e9 --gpus 8 --largest-layer 1e7 --deepspeed-config '" +
                            dir + "/bucket.json'"),
                 "\"zero_optimization.reduce_bucket_size\" must be at most 281474976710656");
}

TEST(HostileNumbers, AStageThatHoldsMoreThanDpSavesANegativeFraction) {
  // Before: pythia-70m's ZeRO-1 peak (a 1 GB reduce buffer) exceeded DP's, and the unsigned
  // difference wrapped: "564521263070.8 %", savings_vs_dp 9.2e9. (bf16: under fp16 DP's step
  // builds fp32 gradients, and ZeRO-1 saves.)
  const auto r =
      run_zerodp("plan --model pythia-70m --gpus 8 --activations 0B --precision bf16 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const auto& s : j["stages"]) {
    const double saved = s["savings_vs_dp"].get<double>();
    EXPECT_GE(saved, -1.0);
    EXPECT_LT(saved, 1.0);
  }
  EXPECT_LT(j["stages"][1]["savings_vs_dp"].get<double>(), 0.0);
  const auto table =
      run_zerodp("plan --model pythia-70m --gpus 8 --activations 0B --precision bf16");
  EXPECT_TRUE(table.has("-3.7 %")) << table.out;
}

TEST(HostileText, ControlCharactersAndMegabytesFromAConfigNeverReachTheTerminalRaw) {
  const std::string dir = fresh_folder("text");
  // An unknown key that would forge a line, and an optimizer type of a megabyte.
  put(dir + "/ds.json",
      "{\"zero_optimization\": {\"stage\": 1}, "
      "\"x\\u001b[2K\\rzerodp: error: forged\": 1, "
      "\"optimizer\": {\"type\": \"" +
          std::string(1 << 20, 'A') + "\"}}");
  const auto r = run_zerodp("plan --params 1e9 --gpus 8 --largest-layer 1e7 --deepspeed-config '" +
                            dir + "/ds.json'");
  EXPECT_EQ(r.status, 0) << r.err.substr(0, 300);
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err.substr(0, 300);
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err.substr(0, 300);
  EXPECT_EQ(line_count(r.err), 1u) << r.err.substr(0, 300);  // the one warning
  EXPECT_LT(r.err.size(), 400u);
  EXPECT_LT(r.out.size(), 20'000u);  // the summary names the type, cut short
  EXPECT_TRUE(r.has("(1048576 bytes)")) << r.out.substr(0, 2000);
  // A value of the wrong kind, a megabyte long, is shown cut in the error.
  put(dir + "/bad.json",
      "{\"zero_optimization\": {\"stage\": \"" + std::string(1 << 20, 'B') + "\"}}");
  const auto bad =
      run_zerodp("plan --params 1e9 --gpus 8 --deepspeed-config '" + dir + "/bad.json'");
  expect_refused(bad, "\"zero_optimization.stage\" must be 0, 1, 2 or 3, got");
  EXPECT_LT(bad.err.size(), 400u);
}

}  // namespace
TEST(HostileInput, AHundredKilobytesOfFlagsOrWordsGiveOneShortLine) {
  // An unknown flag of 100 kB, and 60,000 stray words: one line on stderr, the input cut, as
  // every value named in a message is (the line was as long as the input). (The shell that runs
  // the test takes one argument of at most 128 kB, the command line whole.)
  const std::string flag = "--" + std::string(100'000, 'a');
  std::string words;
  for (int i = 0; i < 60'000; ++i) words += " x";
  for (const std::string& args : {"plan --params 1e9 " + flag, "plan --params 1e9" + words}) {
    const auto r = zerodp::testing::zerodp(args);
    EXPECT_EQ(r.status, 2);
    EXPECT_LT(r.err.size(), 400u) << r.err.substr(0, 400);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err.substr(0, 400);
    EXPECT_NE(r.err.find("bytes)"), std::string::npos) << r.err.substr(0, 400);
  }
}

TEST(HostileInput, AnOutputThatCannotBeWrittenIsAFailedRunNotALostAnswer) {
  // /dev/full takes nothing: the plan (table or JSON) is not written, and the run says so in
  // one line with exit 1 (it exited 0 with the output lost).
  for (const std::string args : {"plan --params 1e9 --gpus 8 --json > /dev/full",
                                 "plan --params 1e9 --gpus 8 > /dev/full"}) {
    const auto r = zerodp::testing::zerodp(args);
    EXPECT_EQ(r.status, 1) << args;
    EXPECT_EQ(r.err.rfind("zerodp: error: cannot write the output: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_EQ(zerodp::testing::zerodp("plan --params 1e9 --gpus 8 --json > /dev/null").status, 0);
}

TEST(HostileInput, ADeepSpeedConfigOfThreeThousandUnknownKeysIsAShortWarning) {
  // 3,000 keys the reader does not know: the warning names the first 20 and counts the rest (it
  // was a 20 kB line), and the plan goes on.
  const std::string path = ::testing::TempDir() + "/zerodp_many_keys.json";
  {
    std::ofstream config(path);
    config << "{\"zero_optimization\": {\"stage\": 2}";
    for (int i = 0; i < 3000; ++i) config << ", \"unknown_key_" << i << "\": 1";
    config << "}";
  }
  const auto r = zerodp::testing::zerodp(
      "plan --model gpt2 --gpus 8 --gpu a100-80gb "
      "--deepspeed-config " +
      path);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_LT(r.err.size(), 1000u) << r.err.substr(0, 1000);
  EXPECT_NE(r.err.find(" and 2,980 more\n"), std::string::npos) << r.err;
  std::remove(path.c_str());
}

TEST(HostileInput, SampleShowsTheControlBytesOfItsPromptAndItsTextEscaped) {
  // A prompt with an escape sequence and a bell: printed as \x1b and \x07, so the prompt cannot
  // drive the terminal; nothing of the text printed is a control byte but lines and tabs.
  const std::string dir = fresh_folder("sample_escapes");
  ASSERT_EQ(run_zerodp("train --layers 1 --hidden 32 --heads 2 --seq-len 16 --micro-batch 2 "
                       "--ranks 1 --steps 1 --out '' --save-dir '" +
                       dir + "/ck'")
                .status,
            0);
  const auto r = run_zerodp("sample --checkpoint '" + dir +
                            "/ck' --length 64 --prompt \"$(printf 'a\\033[31mb\\007')\"");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("a\\x1b[31mb\\x07", 0), 0u) << r.out;
  for (const char c : r.out) {
    const auto byte = static_cast<unsigned char>(c);
    EXPECT_FALSE((byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7f) << int(byte);
  }
}

}  // namespace zerodp
