// One run per save dir: the claim's lock, refusing another run's checkpoints, setting aside
// what a rewind supersedes, pruning only this run's; and manifest fields read into their real
// type and range, each named when it is not.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>

#include "testing/temp_dir.h"
#include "zerodp/checkpoint/checkpoint.h"
#include "zerodp/comm/communicator.h"
#include "zerodp/common/error.h"
#include "zerodp/model/mlp.h"
#include "zerodp/zero/engine.h"

namespace zerodp {
namespace {
namespace fs = std::filesystem;
using checkpoint::Checkpoint;
using checkpoint::SaveDir;

const std::string kMlpModel = R"({"type": "mlp", "width": 8, "depth": 2})";

using zerodp::testing::fresh_path;

// Trains to each of `saves` in turn under `claim`, saving at each, starting from `resumed`.
void run_saving(const SaveDir& claim, const Checkpoint* resumed, std::vector<int> saves,
                int keep = 2) {
  comm::run_thread_ranks(2, {}, [&](comm::Communicator& comm) {
    model::MlpConfig c;
    c.width = 8;
    c.depth = 2;
    model::Mlp mlp(c);
    const data::SyntheticRegression samples(c.width, 7);
    zero::EngineOptions o;
    o.micro_batch = 2;
    zero::Engine engine(mlp, comm, samples, o);
    if (resumed) engine.import_state(resumed->reader(), resumed->state());
    for (int step : saves) {
      while (engine.steps_done() < step) engine.step(1e-2f);
      checkpoint::save(claim.path(), engine, comm, kMlpModel, "{}", keep);
    }
  });
}

// A whole fresh run: claims `dir`, saves at `saves`, lets the folder go.
void fresh_run(const std::string& dir, std::vector<int> saves, int keep = 2) {
  const SaveDir claim = SaveDir::claim(dir, nullptr);
  run_saving(claim, nullptr, std::move(saves), keep);
}

std::string usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(SaveDir, AFreshRunRefusesAnotherRunsCheckpoints) {
  const std::string dir = fresh_path("foreign");
  fresh_run(dir, {2, 3});
  const std::string e = usage_error([&] { SaveDir::claim(dir, nullptr); });
  EXPECT_TRUE(has(e, "save_dir: '" + dir + "' holds checkpoints of another run (step-00000003)"))
      << e;
  EXPECT_TRUE(has(e, "resume '" + dir + "'")) << e;
  // Nothing was touched.
  EXPECT_TRUE(fs::exists(dir + "/step-00000002/manifest.json"));
  EXPECT_TRUE(fs::exists(dir + "/step-00000003/manifest.json"));
}

TEST(SaveDir, EmptyOrIncompleteLeftoversAreFine) {
  const std::string dir = fresh_path("leftovers");
  fs::create_directories(dir + "/step-00000009");
  std::ofstream(dir + "/step-00000009/rank-00000-of-00002.bin") << "partial";
  fresh_run(dir, {1});
  EXPECT_EQ(checkpoint::latest(dir), dir + "/step-00000001");
}

TEST(SaveDir, OneRunAtATimeAndTheHolderIsNamed) {
  const std::string dir = fresh_path("lock");
  {
    const SaveDir first = SaveDir::claim(dir, nullptr);
    EXPECT_EQ(first.run_id().size(), 32u);
    const std::string e = usage_error([&] { SaveDir::claim(dir + "/.", nullptr); });
    EXPECT_TRUE(has(e, "is being written by another run (pid " + std::to_string(getpid()) + " on "))
        << e;
  }
  // Released with its claim.
  const SaveDir again = SaveDir::claim(dir, nullptr);
}

TEST(SaveDir, AFileOrAnUnusableFolderIsRefused) {
  const std::string dir = fresh_path("file");
  std::ofstream(dir) << "not a folder";
  EXPECT_TRUE(has(usage_error([&] { SaveDir::claim(dir, nullptr); }), "is not a folder")) << dir;
  EXPECT_TRUE(has(usage_error([&] { SaveDir::claim(dir + "/sub", nullptr); }),
                  "save_dir: cannot create the folder"));
}

TEST(SaveDir, AResumeKeepsTheRunIdAndRefusesAnotherRunsFolder) {
  const std::string a = fresh_path("run_a"), b = fresh_path("run_b");
  fresh_run(a, {2});
  fresh_run(b, {2});
  const Checkpoint ck = Checkpoint::open(a);
  SaveDir resumed = SaveDir::claim(a, &ck);
  EXPECT_EQ(resumed.run_id(), ck.manifest().run_id);
  EXPECT_TRUE(resumed.set_aside_superseded().empty());
  const std::string e = usage_error([&] { SaveDir::claim(b, &ck); });
  EXPECT_TRUE(has(e, "holds checkpoints of another run (step-00000002) than the one resume")) << e;
}

TEST(SaveDir, ARewindSetsTheLaterCheckpointsAside) {
  const std::string dir = fresh_path("rewind");
  fresh_run(dir, {1, 2, 3, 4}, /*keep=*/4);
  const Checkpoint ck = Checkpoint::open(dir + "/step-00000002");
  {
    SaveDir claim = SaveDir::claim(dir, &ck);
    EXPECT_EQ(checkpoint::latest(dir), dir + "/step-00000004");  // claiming moves nothing
    const std::string note = claim.set_aside_superseded();
    EXPECT_TRUE(has(note,
                    "rewound to step 2: moved 2 later checkpoint(s) of this run "
                    "(step-00000003 to step-00000004) to '" +
                        dir + "/superseded-"))
        << note;
    EXPECT_TRUE(claim.set_aside_superseded().empty());  // once
    EXPECT_EQ(checkpoint::latest(dir), dir + "/step-00000002");
    run_saving(claim, &ck, {3}, 4);
  }
  EXPECT_EQ(checkpoint::latest(dir), dir + "/step-00000003");
  int aside = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("superseded-", 0) != 0) continue;
    EXPECT_TRUE(fs::exists(e.path() / "step-00000004/manifest.json"));
    ++aside;
  }
  EXPECT_EQ(aside, 1);
}

TEST(SaveDir, PruningKeepsTheNewCheckpointAndOnlyRemovesThisRunsOwn) {
  const std::string dir = fresh_path("prune"), other = fresh_path("prune_other");
  fresh_run(other, {5});
  const SaveDir claim = SaveDir::claim(dir, nullptr);
  run_saving(claim, nullptr, {1});
  // Checkpoints that sort after the new ones: another run's, and one of this run's own.
  fs::copy(other + "/step-00000005", dir + "/step-00000005", fs::copy_options::recursive);
  fs::copy(dir + "/step-00000001", dir + "/step-00000009", fs::copy_options::recursive);
  run_saving(claim, nullptr, {2, 3}, /*keep=*/1);
  EXPECT_TRUE(fs::exists(dir + "/step-00000003/manifest.json"));  // just written
  EXPECT_TRUE(fs::exists(dir + "/step-00000005/manifest.json"));  // another run's
  EXPECT_FALSE(fs::exists(dir + "/step-00000001"));
  EXPECT_FALSE(fs::exists(dir + "/step-00000002"));
  EXPECT_FALSE(fs::exists(dir + "/step-00000009"));
}

TEST(SaveDir, ARunWithoutAnIdIsAnotherRunUnlessResumed) {
  const std::string dir = fresh_path("legacy");
  fresh_run(dir, {2});
  const std::string manifest = dir + "/step-00000002/manifest.json";
  nlohmann::json j = nlohmann::json::parse(std::ifstream(manifest));
  j.erase("run_id");  // as written before run ids
  std::ofstream(manifest) << j.dump();
  EXPECT_TRUE(has(usage_error([&] { SaveDir::claim(dir, nullptr); }), "another run"));
  const Checkpoint ck = Checkpoint::open(dir);
  EXPECT_EQ(ck.manifest().run_id, "");
  const SaveDir claim = SaveDir::claim(dir, &ck);
  EXPECT_EQ(claim.run_id().size(), 32u);
  run_saving(claim, &ck, {3, 4}, /*keep=*/2);  // the old one is this run's to prune
  EXPECT_FALSE(fs::exists(dir + "/step-00000002"));
}

TEST(SaveDir, CheckpointContainingFindsTheFolder) {
  const std::string dir = fresh_path("containing");
  fresh_run(dir, {1});
  const std::string folder = fs::weakly_canonical(dir + "/step-00000001").string();
  EXPECT_EQ(checkpoint::checkpoint_containing(dir + "/step-00000001/manifest.json"), folder);
  EXPECT_EQ(checkpoint::checkpoint_containing(dir + "/step-00000001/new/x.bin"), folder);
  EXPECT_EQ(checkpoint::checkpoint_containing(dir + "/step-00000007/x"),
            fs::weakly_canonical(dir).string() + "/step-00000007");
  EXPECT_EQ(checkpoint::checkpoint_containing(dir + "/model.safetensors"), std::nullopt);
}

// Each field edited alone in a good manifest: refused, and named.
TEST(SaveDir, ManifestFieldsAreReadIntoTheirTypeAndRange) {
  const std::string dir = fresh_path("fields");
  fresh_run(dir, {2});
  const std::string manifest = dir + "/step-00000002/manifest.json";
  const nlohmann::json good = nlohmann::json::parse(std::ifstream(manifest));
  EXPECT_EQ(Checkpoint::open(dir).manifest().precision, DType::bf16);
  auto error_with = [&](const char* ptr, nlohmann::json value) {
    nlohmann::json edited = good;
    edited[nlohmann::json::json_pointer(ptr)] = std::move(value);
    std::ofstream(manifest) << edited.dump();
    try {
      Checkpoint::open(dir);
    } catch (const UsageError& e) {  // a field edited by hand is input: status 2
      return std::string(e.what());
    } catch (const Error& e) {
      return "(Error, not UsageError) " + std::string(e.what());
    }
    return std::string("(opened)");
  };
  EXPECT_TRUE(has(error_with("/state/step", 2.5), "state.step is 2.5, expected a whole number"));
  EXPECT_TRUE(has(error_with("/state/samples_done", -8), "state.samples_done is -8"));
  EXPECT_TRUE(has(error_with("/state/good_steps", "3"), "state.good_steps is \"3\""));
  EXPECT_TRUE(has(error_with("/stage", 4), "\"stage\" (a ZeRO stage) is 4"));
  EXPECT_TRUE(has(error_with("/stage", 1.0), "\"stage\" (a ZeRO stage) is 1.0"));
  EXPECT_TRUE(has(error_with("/precision", "fp8"), "\"precision\" is 'fp8', expected fp32"));
  EXPECT_TRUE(has(error_with("/bucket_bytes", 0), "\"bucket_bytes\" is 0"));
  EXPECT_TRUE(has(error_with("/run_id", "x"), "\"run_id\" is \"x\", expected 32 lowercase hex"));
  EXPECT_TRUE(has(error_with("/params", -1), "\"params\" is -1"));
  EXPECT_TRUE(has(error_with("/version", 1.0), "format version 1.0"));
  EXPECT_TRUE(has(error_with("/shards/0/elements", 1.5), "shards[0].elements is 1.5"));
  EXPECT_TRUE(has(error_with("/shards/1/ranges/0/0", -3), "shards[1].ranges offset is -3"));
  EXPECT_TRUE(has(error_with("/shards/0/sha256", 7), "shards[0].sha256 is 7, expected a string"));
  // The shards know their model: another config with the same parameter count is refused.
  EXPECT_TRUE(has(error_with("/model/width", 9), "holds the weights of another model config"));
  EXPECT_TRUE(has(error_with("/model/data", "moved.txt"), "(opened)"));  // weights do not depend
  EXPECT_TRUE(has(error_with("/state/good_steps", 3), "(opened)"));
}

TEST(SaveDir, CheckModelNamesAKeyOnlyOneSideHas) {
  const std::string dir = fresh_path("check_model");
  fresh_run(dir, {1});
  const Checkpoint ck = Checkpoint::open(dir);
  nlohmann::json more = nlohmann::json::parse(kMlpModel);
  more["heads"] = 2;
  try {
    ck.check_model(more.dump());
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "'heads' is absent there, 2 here")) << e.what();
  }
}

// The fuzzer's seed manifests (fuzz/corpus/manifest/, made by fuzz/make_manifest_seeds.py) still
// load: those with a run id and the one written before run ids. Their two shards are laid out
// as the script and the fuzzer write them.
TEST(SaveDir, TheFuzzSeedManifestsStillLoad) {
  const std::string dir = fresh_path("seeds");
  fs::create_directories(dir);
  constexpr std::uint64_t kElements = 142;
  for (std::uint32_t s = 0; s < 2; ++s) {
    unsigned char header[64] = {};
    std::memcpy(header, "ZERODPSH", 8);
    const std::uint32_t fields[3] = {1, s, 2};
    std::memcpy(header + 8, fields, sizeof fields);
    std::memcpy(header + 24, &kElements, 8);
    std::vector<float> body;
    for (int block = 0; block < 3; ++block)
      for (std::uint64_t j = 0; j < kElements; ++j)
        body.push_back(float(s * 10000 + block * 1000 + j));
    std::ofstream out(dir + "/rank-0000" + std::to_string(s) + "-of-00002.bin", std::ios::binary);
    out.write(reinterpret_cast<const char*>(header), sizeof header);
    out.write(reinterpret_cast<const char*>(body.data()), std::streamsize(body.size() * 4));
  }
  int loaded = 0;
  for (const auto& seed : fs::directory_iterator(ZERODP_SOURCE_DIR "/fuzz/corpus/manifest")) {
    if (seed.path().filename() == "seed_bad_sha") continue;  // a corrupted shard, on purpose
    fs::copy_file(seed.path(), dir + "/manifest.json", fs::copy_options::overwrite_existing);
    const Checkpoint ck = Checkpoint::open(dir);
    EXPECT_EQ(ck.params(), 284u) << seed.path();
    ++loaded;
  }
  EXPECT_EQ(loaded, 5);
}

}  // namespace
}  // namespace zerodp
