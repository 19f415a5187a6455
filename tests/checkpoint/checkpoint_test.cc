// Checkpoints never lose a run: bitwise resume on every stage, resharding to another N and
// stage, and clear errors for every way a checkpoint can be broken.
#include "zerodp/checkpoint/checkpoint.h"

#include <gtest/gtest.h>
#include <algorithm>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "testing/temp_dir.h"
#include "zerodp/comm/communicator.h"
#include "zerodp/common/error.h"
#include "zerodp/model/mlp.h"
#include "zerodp/zero/engine.h"

namespace zerodp {
namespace {
namespace fs = std::filesystem;

model::MlpConfig mlp_config(int width = 12) {
  model::MlpConfig c;
  c.width = width;
  c.depth = 3;
  return c;
}

std::string model_json(int width) {
  return R"({"type": "mlp", "width": )" + std::to_string(width) + R"(, "depth": 3})";
}

using zerodp::testing::fresh_path;

struct Run {
  int ranks = 2;
  int stage = 0;
  int steps = 10;
  std::string save_dir;  // save at the end when set
  std::string resume;    // load before training when set
  Optimizer optimizer = Optimizer::adam;
  int width = 12;  // the MLP's
};

// Trains and returns the consolidated master weights. Claims the save dir as zerodp train does.
std::vector<float> train(const Run& run) {
  std::optional<checkpoint::Checkpoint> resumed;
  if (!run.resume.empty()) resumed.emplace(checkpoint::Checkpoint::open(run.resume));
  std::optional<checkpoint::SaveDir> claim;
  if (!run.save_dir.empty())
    claim.emplace(checkpoint::SaveDir::claim(run.save_dir, resumed ? &*resumed : nullptr));
  std::vector<float> result;
  std::mutex mu;
  comm::run_thread_ranks(run.ranks, {}, [&](comm::Communicator& comm) {
    model::Mlp mlp(mlp_config(run.width));
    const data::SyntheticRegression samples(run.width, 1234);
    zero::EngineOptions o;
    o.stage = stage_from_number(run.stage);
    o.micro_batch = 2;
    o.bucket_bytes = 100;  // several buckets per unit
    o.optimizer = run.optimizer;
    zero::Engine engine(mlp, comm, samples, o);
    if (resumed) engine.import_state(resumed->reader(), resumed->state());
    while (engine.steps_done() < run.steps) engine.step(1e-2f);
    if (!run.save_dir.empty())
      checkpoint::save(run.save_dir, engine, comm, model_json(run.width), "{}", 2);
    std::vector<float> master = engine.gather_master();
    std::lock_guard<std::mutex> lock(mu);
    if (comm.rank() == 0) result = std::move(master);
  });
  return result;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

TEST(Checkpoint, ResumeIsBitwiseOnEveryStage) {
  for (int stage = 0; stage <= 3; ++stage) {
    const std::string dir = fresh_path("resume" + std::to_string(stage));
    const auto straight = train({2, stage, 20, "", ""});
    train({2, stage, 10, dir, ""});
    const auto resumed = train({2, stage, 20, "", dir});
    EXPECT_TRUE(same_bits(straight, resumed)) << "stage " << stage;
  }
}

TEST(Checkpoint, ReshardsToAnyRanksAndStage) {
  const std::string dir = fresh_path("reshard");
  const auto saved = train({3, 3, 5, dir, ""});
  for (auto [ranks, stage] : {std::pair{1, 0}, {2, 1}, {4, 2}, {5, 3}}) {
    // Zero further steps: the loaded weights are exactly the saved ones.
    EXPECT_TRUE(same_bits(train({ranks, stage, 5, "", dir}), saved)) << ranks << " " << stage;
  }
  // And training goes on from there.
  const auto more = train({4, 1, 8, "", dir});
  EXPECT_FALSE(same_bits(more, saved));
}

// Each slot of the whole layout as the checkpoint holds it (k = 0, 1).
std::vector<float> slot_of(const std::string& dir, int k) {
  const auto ck = checkpoint::Checkpoint::open(dir);
  std::vector<float> values(ck.params());
  ck.read({0, ck.params()}, nullptr, k == 0 ? values.data() : nullptr,
          k == 1 ? values.data() : nullptr);
  return values;
}

TEST(Checkpoint, EveryOptimizersSlotsResumeBitwiseAndReshard) {
  for (Optimizer id : {Optimizer::lion, Optimizer::sgd_momentum, Optimizer::sgd}) {
    const std::string word(optimizer_row(id).word);
    for (int stage : {0, 2}) {
      const std::string dir = fresh_path("resume-" + word + std::to_string(stage));
      const auto straight = train({2, stage, 12, "", "", id});
      train({2, stage, 6, dir, "", id});
      EXPECT_TRUE(same_bits(train({2, stage, 12, "", dir, id}), straight))
          << word << " stage " << stage;
    }
    // Saved by 3 ranks at stage 3, loaded by 1 at stage 0 and saved again: every slot's values
    // are where they were, element for element.
    const std::string from = fresh_path("reshard-" + word), to = fresh_path("reshard1-" + word);
    const auto saved = train({3, 3, 5, from, "", id});
    EXPECT_TRUE(same_bits(train({1, 0, 5, to, from, id}), saved)) << word;
    const std::size_t slots = optimizer_row(id).slots.size();
    for (int k = 0; k < int(slots); ++k) {
      const auto before = slot_of(from, k);
      EXPECT_TRUE(same_bits(slot_of(to, k), before)) << word << " slot " << k;
      // A slot that moved: the state is really kept, not zeros both times.
      EXPECT_TRUE(std::any_of(before.begin(), before.end(), [](float x) { return x != 0.0f; }));
    }
    // A slot the optimizer does not have is refused by name, and so is another optimizer's
    // engine reading this state.
    if (slots < 2) {
      EXPECT_THROW(slot_of(from, int(slots)), Error) << word;
      EXPECT_THROW(train({2, 1, 6, "", from, Optimizer::adam}), Error) << word;
    }
  }
}

// 8-bit states are saved dequantized (fp32, element by element) and quantized back on load to
// the codes and absmax that give the same values: the next steps are the same bits, at any N
// and stage, with blocks cut between ranks (buckets of 50 elements) and whole.
TEST(Checkpoint, EightBitStatesResumeBitwiseAndReshard) {
  const int width = 64;  // 4096-element weights: 8-bit states; the biases keep fp32 ones
  for (Optimizer id : {Optimizer::adam_8bit, Optimizer::lion_8bit}) {
    const std::string word(optimizer_row(id).word);
    for (int stage : {0, 2, 3}) {
      const std::string dir = fresh_path("resume-" + word + std::to_string(stage));
      const auto straight = train({2, stage, 12, "", "", id, width});
      train({2, stage, 6, dir, "", id, width});
      EXPECT_TRUE(same_bits(train({2, stage, 12, "", dir, id, width}), straight))
          << word << " stage " << stage;
    }
    const std::string from = fresh_path("reshard-" + word), to = fresh_path("reshard1-" + word);
    const auto saved = train({3, 3, 5, from, "", id, width});
    EXPECT_TRUE(same_bits(train({1, 0, 5, to, from, id, width}), saved)) << word;
    for (int k = 0; k < int(optimizer_row(id).slots.size()); ++k) {
      const auto before = slot_of(from, k);
      EXPECT_TRUE(same_bits(slot_of(to, k), before)) << word << " slot " << k;
      EXPECT_GT(std::count_if(before.begin(), before.end(), [](float x) { return x != 0.0f; }),
                std::ptrdiff_t(before.size() / 2))
          << word;
    }
    // Trained on from either checkpoint, the one 3 ranks wrote and the one 1 rank wrote again.
    EXPECT_TRUE(
        same_bits(train({4, 1, 9, "", from, id, width}), train({4, 3, 9, "", to, id, width})))
        << word;
  }
}

// Adafactor's slot holds a matrix's row and column states at its first R + C elements and a
// vector's v element by element: saved from 3 ranks whose buckets cut the matrices, it resumes
// bitwise, and loaded on 1 rank at stage 0 the slot is the same values.
TEST(Checkpoint, AdafactorStatesResumeBitwiseAndReshard) {
  const Optimizer id = Optimizer::adafactor;
  for (int stage : {0, 2, 3}) {
    const std::string dir = fresh_path("resume-adafactor" + std::to_string(stage));
    const auto straight = train({2, stage, 12, "", "", id, 24});
    train({2, stage, 6, dir, "", id, 24});
    EXPECT_TRUE(same_bits(train({2, stage, 12, "", dir, id, 24}), straight)) << "stage " << stage;
  }
  const std::string from = fresh_path("reshard-adafactor"), to = fresh_path("reshard1-adafactor");
  const auto saved = train({3, 3, 5, from, "", id, 24});
  EXPECT_TRUE(same_bits(train({1, 0, 5, to, from, id, 24}), saved));
  const auto before = slot_of(from, 0);
  EXPECT_TRUE(same_bits(slot_of(to, 0), before));
  // A 24 x 24 weight's 48 states, and a bias's 24, per layer: most of the slot is zeros.
  const auto held = std::count_if(before.begin(), before.end(), [](float x) { return x != 0.0f; });
  EXPECT_GT(held, std::ptrdiff_t(before.size() / 10));
  EXPECT_LT(held, std::ptrdiff_t(before.size() / 4));
  EXPECT_TRUE(same_bits(train({4, 1, 9, "", from, id, 24}), train({4, 3, 9, "", to, id, 24})));
}

TEST(Checkpoint, LatestIgnoresAnIncompleteCheckpoint) {
  const std::string dir = fresh_path("incomplete");
  train({2, 2, 4, dir, ""});
  // A save killed before its manifest: shards but no manifest.
  fs::create_directories(dir + "/step-00000009");
  std::ofstream(dir + "/step-00000009/rank-00000-of-00002.bin") << "partial";
  EXPECT_EQ(checkpoint::latest(dir), dir + "/step-00000004");
  EXPECT_EQ(checkpoint::Checkpoint::open(dir).state().step, 4);
}

TEST(Checkpoint, KeepsOnlyTheNewest) {
  const std::string dir = fresh_path("keep");
  for (int steps : {1, 2, 3}) train({2, 1, steps, dir, steps == 1 ? "" : dir});
  EXPECT_FALSE(fs::exists(dir + "/step-00000001"));
  EXPECT_TRUE(fs::exists(dir + "/step-00000002/manifest.json"));
  EXPECT_TRUE(fs::exists(dir + "/step-00000003/manifest.json"));
}

std::string open_error(const std::string& path) {
  try {
    checkpoint::Checkpoint::open(path);
  } catch (const Failure& e) {  // UsageError for a field edited, Error for a shard broken
    return e.what();
  }
  return "(opened)";
}

TEST(Checkpoint, BrokenShardsAreNamed) {
  const std::string dir = fresh_path("broken");
  train({2, 1, 3, dir, ""});
  const std::string folder = dir + "/step-00000003";
  const std::string shard = folder + "/rank-00001-of-00002.bin";
  const auto original = fs::file_size(shard);

  {  // One flipped byte: the checksum catches it.
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  std::string e = open_error(folder);
  EXPECT_NE(e.find(shard), std::string::npos) << e;
  EXPECT_NE(e.find("SHA-256"), std::string::npos) << e;

  fs::resize_file(shard, original - 8);  // truncated
  e = open_error(folder);
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;

  fs::remove(shard);  // missing
  e = open_error(folder);
  EXPECT_NE(e.find(shard + " is missing"), std::string::npos) << e;
}

TEST(Checkpoint, BrokenManifestsAreNamed) {
  const std::string dir = fresh_path("manifest");
  train({2, 0, 2, dir, ""});
  const std::string manifest = dir + "/step-00000002/manifest.json";
  std::ifstream in(manifest);
  nlohmann::json j = nlohmann::json::parse(in);
  in.close();

  const checkpoint::Checkpoint ck = checkpoint::Checkpoint::open(dir);
  EXPECT_EQ(nlohmann::json::parse(ck.manifest().model), nlohmann::json::parse(model_json(12)));
  EXPECT_EQ(ck.manifest().stage, 0);
  EXPECT_EQ(ck.manifest().ranks, 2);
  EXPECT_EQ(ck.manifest().state.step, 2);
  EXPECT_EQ(ck.manifest().params, ck.params());
  ck.check_model(model_json(12));
  nlohmann::json other = nlohmann::json::parse(model_json(12));
  other["width"] = 16;
  try {
    ck.check_model(other.dump());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'width' is 12 there, 16 here"), std::string::npos)
        << e.what();
  }

  // Each edit alone, on a copy of the good manifest.
  auto error_with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json edited = j;
    edit(edited);
    std::ofstream(manifest) << edited.dump();
    return open_error(dir);
  };
  EXPECT_NE(error_with([](auto& m) {
              m["shards"][1]["file"] = "../step-00000002/x.bin";
            }).find("shard file '../step-00000002/x.bin' is not a plain file name"),
            std::string::npos);
  EXPECT_NE(error_with([](auto& m) {
              // A shard that is whole but another rank's: its header tells.
              for (const char* key : {"file", "sha256", "bytes", "elements"})
                std::swap(m["shards"][0][key], m["shards"][1][key]);
            }).find("rank-00001-of-00002.bin: its header is not that of shard 0 of 2"),
            std::string::npos);
  EXPECT_NE(error_with([](auto& m) { m["state"]["loss_scale"] = -1.0; }).find("state.loss_scale"),
            std::string::npos);
  EXPECT_NE(error_with([](auto& m) {
              m["shards"][0]["ranges"][0][1] = ~0ull;
            }).find("shards[0].ranges count is 18446744073709551615"),
            std::string::npos);
  EXPECT_NE(error_with([](auto& m) { m["state"].erase("step"); }).find("state.step is missing"),
            std::string::npos);

  j["version"] = 99;
  std::ofstream(manifest) << j.dump();
  EXPECT_NE(open_error(dir).find("format version 99"), std::string::npos);
  std::ofstream(manifest) << "{ not json";
  EXPECT_NE(open_error(dir).find("not valid JSON"), std::string::npos);
  EXPECT_NE(open_error(fresh_path("empty")).find("no complete checkpoint"), std::string::npos);
}

TEST(Checkpoint, AFailedSaveLeavesThePreviousOneIntact) {
  const std::string dir = fresh_path("readonly");
  train({2, 2, 2, dir, ""});
  // The next save cannot create its folder: a file stands where the folder would go.
  std::ofstream(dir + "/step-00000003") << "in the way";
  try {
    train({2, 2, 3, dir, dir});
    FAIL() << "the save should have failed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("step-00000003"), std::string::npos) << e.what();
  }
  EXPECT_EQ(checkpoint::Checkpoint::open(dir).state().step, 2);
}

}  // namespace
}  // namespace zerodp
