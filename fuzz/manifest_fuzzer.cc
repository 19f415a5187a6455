// Fuzz target: the checkpoint manifest reader (zerodp/checkpoint/checkpoint.h) and what `zerodp
// eval`, `sample` and `export` do with a checkpoint (zerodp/run/checkpoint_model.h), on any
// manifest.json.
//
// The fuzzer's input is the text of manifest.json, written beside two fixed shards (made once,
// at start-up, exactly as checkpoint::save() lays them out: shard s holds 142 elements whose
// master, m and v values are s * 10000 + block * 1000 + j). 284 elements are the parameters of
// the smallest GPT (1 layer, 1 head, width 1, context 1), so a manifest can get all the way
// through to a loaded model. The seeds in fuzz/corpus/manifest/ are valid manifests of these
// shards (with their SHA-256s), written by fuzz/make_manifest_seeds.py; fuzz/manifest.dict
// holds the format's keys.
//
// Properties, for every input:
//  - Checkpoint::open() returns or throws Error (unreadable, corrupt) or UsageError (a field
//    out of its type or range) whose message is one line; nothing else
//    escapes, nothing crashes, nothing is read outside the folder or past a file (ASan);
//  - open() accepts only fields of their real type and range: the step, sample count and
//    good-step count are whole numbers written as such, the stage 0-3, the precision fp32,
//    fp16 or bf16, the run id absent or 32 lowercase hex digits;
//  - once open() has accepted a manifest, nothing more can fail: params(), state() and
//    check_model() of its own model config return, and read() of the whole model returns for
//    every flat offset the value the manifest's ranges say is there, in all three blocks;
//  - load_gpt() returns or throws Error or UsageError, one line each; when it returns, its
//    model has exactly the checkpoint's parameter count and its weights are the masters read.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "zerodp/checkpoint/checkpoint.h"
#include "zerodp/common/error.h"
#include "zerodp/common/sha256.h"
#include "zerodp/run/checkpoint_model.h"

namespace {

namespace fs = std::filesystem;
using namespace zerodp;

constexpr int kShards = 2;
constexpr std::uint64_t kElements = 142;

std::string g_folder;  // the checkpoint folder: two shards and the fuzzed manifest.json
std::string g_data;    // a small corpus for load_gpt(), in place of the recorded one

float stored(int shard, int block, std::uint64_t j) {
  return static_cast<float>(shard * 10000 + block * 1000) + static_cast<float>(j);
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "manifest fuzzer: %s\n", what.c_str());
  std::abort();
}

void check_one_line(const std::exception& e, const char* where) {
  if (std::string_view(e.what()).find('\n') != std::string_view::npos)
    fail(std::string(where) + " threw a message of several lines: " + e.what());
}

void write_shards() {
  for (int s = 0; s < kShards; ++s) {
    unsigned char header[64] = {};
    std::memcpy(header, "ZERODPSH", 8);
    const std::uint32_t fields[3] = {1, static_cast<std::uint32_t>(s), kShards};
    std::memcpy(header + 8, fields, sizeof fields);
    std::memcpy(header + 24, &kElements, 8);
    std::vector<float> body;
    for (int block = 0; block < 3; ++block)
      for (std::uint64_t j = 0; j < kElements; ++j) body.push_back(stored(s, block, j));
    char name[64];
    std::snprintf(name, sizeof name, "/rank-%05d-of-%05d.bin", s, kShards);
    std::ofstream out(g_folder + name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(header), sizeof header);
    out.write(reinterpret_cast<const char*>(body.data()),
              static_cast<std::streamsize>(body.size() * sizeof(float)));
    if (!out) fail("cannot write the shards");
  }
}

// The masters, m and v of the whole model as the manifest's ranges place them.
std::vector<std::vector<float>> expected_blocks(const nlohmann::json& manifest,
                                                std::uint64_t params) {
  std::vector<std::vector<float>> blocks(3, std::vector<float>(params));
  const auto& shards = manifest.at("shards");
  for (std::size_t s = 0; s < shards.size(); ++s) {
    std::uint64_t local = 0;
    for (const auto& r : shards[s].at("ranges")) {
      const auto offset = r.at(0).get<std::uint64_t>(), count = r.at(1).get<std::uint64_t>();
      for (std::uint64_t k = 0; k < count; ++k, ++local)
        for (int b = 0; b < 3; ++b)
          blocks[b].at(offset + k) = stored(static_cast<int>(s), b, local);
    }
  }
  return blocks;
}

// The fields open() accepted are what they claim to be, in the text as in manifest().
void check_fields(const checkpoint::Checkpoint& ck, const nlohmann::json& manifest) {
  const auto& state = manifest.at("state");
  for (const char* key : {"step", "samples_done", "good_steps"})
    if (!state.at(key).is_number_unsigned())
      fail(std::string("open() accepted a state.") + key + " that is not a whole number");
  if (!manifest.at("stage").is_number_unsigned() || ck.manifest().stage > 3)
    fail("open() accepted a stage that is not 0-3");
  if (manifest.at("precision") != dtype_name(ck.manifest().precision))
    fail("open() accepted an unknown precision");
  const std::string& id = ck.manifest().run_id;
  if (manifest.contains("run_id") ? manifest.at("run_id") != id : !id.empty())
    fail("open() read another run id than the manifest's");
}

// `manifest` is the input, which open() has accepted, so it is JSON.
void check_accepted(const checkpoint::Checkpoint& ck, const nlohmann::json& manifest) {
  check_fields(ck, manifest);
  const std::uint64_t params = ck.params();
  if (params != kShards * kElements)
    fail("open() accepted a manifest that does not cover the shards");
  (void)ck.state();
  ck.check_model(ck.manifest().model);
  const auto expected = expected_blocks(manifest, params);
  std::vector<float> master(params), m(params), v(params);
  ck.read({0, params}, master.data(), m.data(), v.data());
  if (master != expected[0] || m != expected[1] || v != expected[2])
    fail("read() returned values the manifest's ranges do not place there");
  // A range in the middle, one block only.
  std::vector<float> middle(100);
  ck.read({91, 100}, nullptr, middle.data(), nullptr);
  if (!std::equal(middle.begin(), middle.end(), expected[1].begin() + 91))
    fail("read() of a middle range differs from the whole");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char tmpl[] = "/tmp/zerodp-fuzz-manifest-XXXXXX";
  if (!::mkdtemp(tmpl)) fail("cannot create a temporary folder");
  g_folder = tmpl;
  g_data = g_folder + "/corpus.txt";
  write_shards();
  std::ofstream(g_data) << std::string(4096, 'a') << "the quick brown fox\n";
  std::atexit([] {
    std::error_code ec;
    fs::remove_all(g_folder, ec);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  {
    std::ofstream out(g_folder + "/manifest.json", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    checkpoint::Checkpoint ck = checkpoint::Checkpoint::open(g_folder);
    try {
      check_accepted(ck, nlohmann::json::parse(data, data + size));
    } catch (const std::exception& e) {
      fail(std::string("an accepted manifest failed later: ") + e.what());
    }
  } catch (const Error& e) {  // unreadable or corrupt
    check_one_line(e, "Checkpoint::open()");
    return 0;
  } catch (const UsageError& e) {  // a field out of its type or range: input
    check_one_line(e, "Checkpoint::open()");
    return 0;
  } catch (const std::exception& e) {
    fail(std::string("Checkpoint::open() threw something other than Error or UsageError: ") +
         e.what());
  }

  try {
    run::LoadedModel loaded = run::load_gpt(g_folder, run::CheckpointData::corpus, g_data);
    if (loaded.spec.param_count() != loaded.checkpoint.params() ||
        loaded.params.size() != loaded.checkpoint.params())
      fail("load_gpt() returned weights of another size than its model");
    const auto expected =
        expected_blocks(nlohmann::json::parse(data, data + size), loaded.params.size());
    if (loaded.params != expected[0]) fail("load_gpt() returned other weights than the masters");
  } catch (const Error& e) {
    check_one_line(e, "load_gpt()");
  } catch (const UsageError& e) {
    check_one_line(e, "load_gpt()");
  } catch (const std::exception& e) {
    fail(std::string("load_gpt() threw something other than Error or UsageError: ") + e.what());
  }
  return 0;
}
