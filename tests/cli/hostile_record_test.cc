// A run's record as a hostile user meets it: a checkpoint's manifest edited by hand (strings
// for numbers and flags, a precision that is not the weights', counts out of range, a path of
// 100 kB, two shards' ranges swapped), a ZeRO++ setting given without its part, and a resume
// that must continue its own curve. Each case failed before: an "unexpected failure", a string
// read as a number, a bf16 checkpoint trained on in fp16, a checkpoint value reported as a flag
// the user typed, weights loaded permuted with every checksum passing, a 100 kB error line, a
// flag silently ignored, another run's curve overwritten.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_testing.h"

namespace zerodp {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::line_count;
using testing::run_zerodp;
using testing::slurp;
using zerodp::testing::fresh_folder;

const std::string kGpt = "train --layers 1 --heads 2 --hidden 16 --seq-len 8 --ranks 2 ";

// A save dir holding one checkpoint of a 2-rank GPT run of 2 steps, and its manifest's path.
struct Saved {
  std::string dir, manifest;
  nlohmann::json good;
};

Saved saved_run(const std::string& name, const std::string& extra = "") {
  Saved s;
  s.dir = fresh_folder(name);
  const CliResult r =
      run_zerodp(kGpt + "--steps 2 --out '' --json --save-dir '" + s.dir + "/ck' " + extra);
  EXPECT_EQ(r.status, 0) << r.err;
  s.manifest = s.dir + "/ck/step-00000002/manifest.json";
  s.good = nlohmann::json::parse(slurp(s.manifest));
  return s;
}

// Rewrites the manifest with one edit of the good one.
void edit(const Saved& s, const std::function<void(nlohmann::json&)>& change) {
  nlohmann::json m = s.good;
  change(m);
  std::ofstream(s.manifest) << m.dump(1);
}

// `zerodp ARGS` refused with status 2 and one line that names the manifest and `field`.
void expect_record_refusal(const Saved& s, const std::string& args, const std::string& field) {
  const CliResult r = run_zerodp(args);
  EXPECT_EQ(r.status, 2) << args << ": " << r.err;
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(s.manifest + ": " + field), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("unexpected failure"), std::string::npos) << r.err;
  // Not reported as if a flag had been typed.
  EXPECT_EQ(r.err.find("zerodp: --"), std::string::npos) << r.err;
  EXPECT_LT(r.err.size(), 600u) << r.err;
}

TEST(HostileRecord, EveryFieldOutOfItsTypeOrRangeIsOneLineNamingTheManifestAndTheField) {
  const Saved s = saved_run("fields");
  const std::string resume = "train --resume '" + s.dir + "/ck' --steps 3 --out '' --json";
  const struct {
    const char* pointer;
    nlohmann::json value;
    const char* field;
  } cases[] = {
      {"/model/checkpoint_activations", "yes", "model.checkpoint_activations"},
      {"/run/ranks_per_host", "2", "run.ranks_per_host"},
      {"/run/steps", "9", "run.steps"},
      {"/run/ranks_per_host", std::int64_t{1} << 31, "run.ranks_per_host"},
      {"/run/ranks_per_host", -1, "run.ranks_per_host"},
      {"/run/threads", 0, "run.threads"},
      {"/run/threads", 257, "run.threads"},
      {"/run/lr", -1e-3, "run.lr"},
      {"/run/lr", 1e300, "run.lr"},  // beyond fp32
      {"/run/clip", "1", "run.clip"},
      {"/run/grad_accum", 0, "run.grad_accum"},
      {"/run/qwz_block", 0, "run.qwz_block"},
      {"/run/zeropp", "qwz,fast", "run.zeropp"},
      {"/run/eval_batches", 2.5, "run.eval_batches"},
      {"/run/out", 7, "run.out"},
      {"/model/compute", "fp64", "model.compute"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.pointer);
    edit(s, [&](nlohmann::json& m) { m[nlohmann::json::json_pointer(c.pointer)] = c.value; });
    expect_record_refusal(s, resume, c.field);
  }
  // The fields the weights depend on are in the shards' digest of the config: an edit of one
  // is refused as a config changed after the save, by the same kind of line.
  for (const char* key : {"n_head", "n_layer", "data_seed"}) {
    SCOPED_TRACE(key);
    edit(s, [&](nlohmann::json& m) { m["model"][key] = "2"; });
    expect_record_refusal(s, resume, "shard ");
  }
  // eval, sample and export read the same schema.
  edit(s, [](nlohmann::json& m) { m["model"]["checkpoint_activations"] = "yes"; });
  expect_record_refusal(s, "eval --checkpoint '" + s.dir + "/ck'", "model.checkpoint_activations");
}

TEST(HostileRecord, APrecisionThatIsNotTheWeightsIsRefusedNotTrainedIn) {
  const Saved s = saved_run("precision");  // bf16
  edit(s, [](nlohmann::json& m) { m["run"]["precision"] = "fp16"; });
  const CliResult r = run_zerodp("train --resume '" + s.dir + "/ck' --steps 3 --out '' --json");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("run.precision is \"fp16\", but the checkpoint's \"precision\" is bf16"),
            std::string::npos)
      << r.err;
  // Untouched, the resume trains on in bf16.
  edit(s, [](nlohmann::json&) {});
  const CliResult ok = run_zerodp("train --resume '" + s.dir + "/ck' --steps 3 --out '' --json");
  ASSERT_EQ(ok.status, 0) << ok.err;
}

TEST(HostileRecord, ARecordWithoutPrecisionIsHeldToTheManifestsAndNotSaidUncompared) {
  const Saved s = saved_run("no_precision");                        // bf16
  edit(s, [](nlohmann::json& m) { m["run"].erase("precision"); });  // a record of an older run
  const std::string resume = "train --resume '" + s.dir + "/ck' --steps 3 --out '' ";
  const CliResult fp16 = run_zerodp(resume + "--precision fp16");
  EXPECT_EQ(fp16.status, 2) << fp16.err;
  EXPECT_NE(fp16.err.find("trained in bf16, this run asks fp16"), std::string::npos) << fp16.err;
  const CliResult ok = run_zerodp(resume);
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ((ok.out + ok.err).find("precision; not compared"), std::string::npos)
      << ok.out << ok.err;
}

TEST(HostileRecord, AHundredKilobytePathComesBackAsAShortLine) {
  const Saved s = saved_run("long_path");
  edit(s, [](nlohmann::json& m) { m["run"]["data"] = std::string(100'000, 'd'); });
  expect_record_refusal(s, "train --resume '" + s.dir + "/ck' --steps 3 --out ''", "run.data");
  // A path a record may hold (4,000 bytes) that is not readable here: also one short line.
  edit(s, [](nlohmann::json& m) {
    std::string path = "/nowhere/";  // appended in steps: GCC 12 warns falsely on "..." + string
    path.append(4000, 'd');
    m["run"]["data"] = path;
  });
  const CliResult r = run_zerodp("train --resume '" + s.dir + "/ck' --steps 3 --out ''");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(line_count(r.err), 1u);
  EXPECT_LT(r.err.size(), 600u) << r.err;
}

TEST(HostileRecord, TwoShardsWithTheirRangesSwappedAreRefused) {
  const Saved s = saved_run("swapped");
  const CliResult before = run_zerodp("eval --checkpoint '" + s.dir + "/ck' --json");
  ASSERT_EQ(before.status, 0) << before.err;
  edit(s, [](nlohmann::json& m) { std::swap(m["shards"][0]["ranges"], m["shards"][1]["ranges"]); });
  for (const std::string& args : {"eval --checkpoint '" + s.dir + "/ck' --json",
                                  "train --resume '" + s.dir + "/ck' --steps 3 --out ''"}) {
    const CliResult r = run_zerodp(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find(s.manifest + ": shards[1].ranges"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("loss"), std::string::npos) << r.out;
  }
  // A range moved inside its own shard (the chunk of another bucket) is refused as well.
  edit(s, [](nlohmann::json& m) {
    std::swap(m["shards"][0]["ranges"][0], m["shards"][0]["ranges"][1]);
  });
  EXPECT_EQ(run_zerodp("eval --checkpoint '" + s.dir + "/ck'").status, 2);
}

TEST(HostileRecord, AQuantizationBlockWithoutQuantizationIsRefused) {
  for (const std::string zeropp : {"", "--zeropp none ", "--zeropp hpz "}) {
    testing::expect_refused(kGpt + zeropp + "--qwz-block 64 --steps 1 --out ''",
                            "--qwz-block: it sets ZeRO++'s int8 blocks; give --zeropp qwz or "
                            "qgz too");
  }
  const CliResult qgz = run_zerodp(kGpt + "--zeropp qgz --qwz-block 64 --steps 1 --out '' --json");
  EXPECT_EQ(qgz.status, 0) << qgz.err;
  testing::expect_refused("measure --model mlp --params 20K --qwz-block 64", "--qwz-block");
}

TEST(HostileRecord, AResumeContinuesItsOwnCurveNotTheDefaultFolder) {
  const std::string dir = fresh_folder("curve");
  const std::string cwd = dir + "/elsewhere";
  fs::create_directories(cwd);
  const CliResult first = run_zerodp(kGpt + "--steps 2 --eval-every 1 --json --save-dir '" + dir +
                                     "/ck' --out '" + dir + "/mine'");
  ASSERT_EQ(first.status, 0) << first.err;
  // Another run's curve in the default folder of the resume's working directory.
  fs::create_directories(cwd + "/out");
  std::ofstream(cwd + "/out/loss.csv") << "step,train_loss,val_loss\n1,9,9\n";
  const CliResult resumed =
      run_zerodp("train --resume '" + dir + "/ck' --steps 4 --json", "cd '" + cwd + "' && ");
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_EQ(slurp(cwd + "/out/loss.csv"), "step,train_loss,val_loss\n1,9,9\n");
  EXPECT_FALSE(fs::exists(cwd + "/out/loss.svg"));
  const std::string curve = slurp(dir + "/mine/loss.csv");
  // Steps 1 to 4 in the run's own curve: the first run's two and the resume's two.
  for (const char* row : {"\n1,", "\n2,", "\n3,", "\n4,"}) {
    EXPECT_NE(curve.find(row), std::string::npos) << row << " in " << curve;
  }
  // --out given on resume still wins.
  const CliResult moved =
      run_zerodp("train --resume '" + dir + "/ck' --steps 5 --json --out '" + dir + "/moved'");
  ASSERT_EQ(moved.status, 0) << moved.err;
  EXPECT_TRUE(fs::exists(dir + "/moved/loss.csv"));
}

}  // namespace
}  // namespace zerodp
