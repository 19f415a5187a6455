#include "checkpoint/manifest.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <utility>

#include "checkpoint/format.h"
#include "zerodp/sha256.h"
#include "zerodp/error.h"

namespace zerodp::checkpoint {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;

// Offsets and counts are checked against these bounds before any sum, so no sum wraps.
constexpr std::uint64_t kMaxElements = (std::uint64_t{1} << 60) / kShardBytesPerElement;
constexpr std::uint64_t kMaxFlat = std::uint64_t{1} << 62;

json parse_manifest_file(const std::string& manifest_path) {
  std::ifstream in(manifest_path);
  if (!in) throw Error("cannot read " + manifest_path);
  try {
    return json::parse(in);
  } catch (const std::exception& e) {
    throw Error(manifest_path + " is not valid JSON: " + e.what());
  }
}

// The checks below throw Error saying what is wrong, or json::exception for a field that is
// missing or of the wrong type; read_checkpoint() names the manifest in either case.

void check_format(const json& m) {
  if (!m.is_object() || m.at("format") != "zerodp-checkpoint")
    throw Error("not a zerodp checkpoint manifest");
  if (m.at("version") != kFormatVersion) {
    throw Error("format version " + m.at("version").dump() + ", this zerodp reads version " +
                std::to_string(kFormatVersion));
  }
  if (!m.at("model").is_object()) throw Error("\"model\" is not an object");
}

// Read and checked here, once, so that state() cannot fail later.
EngineState read_state(const json& state) {
  const auto step = state.at("step").get<std::int64_t>();
  const auto loss_scale = state.at("loss_scale").get<double>();
  const auto good_steps = state.at("good_steps").get<std::int64_t>();
  if (step < 0) throw Error("state.step is negative");
  if (!(loss_scale > 0) || !std::isfinite(static_cast<float>(loss_scale)))
    throw Error("state.loss_scale is not a positive finite fp32");
  if (good_steps < 0 || good_steps > std::numeric_limits<int>::max())
    throw Error("state.good_steps is out of range");
  return {step, state.at("samples_done").get<std::uint64_t>(), static_cast<float>(loss_scale),
          static_cast<int>(good_steps)};
}

const json& shard_list(const json& m) {
  const json& shards = m.at("shards");
  if (!shards.is_array() || shards.empty()) throw Error("\"shards\" is not a list of shards");
  if (m.at("ranks") != shards.size()) throw Error("\"ranks\" is not the number of shards");
  return shards;
}

// Shards live in the checkpoint's folder: a name is a plain file name, never a path.
std::string shard_path(const std::string& folder, const std::string& name) {
  const bool plain = !name.empty() && name != "." && name != ".." &&
                     name.find_first_not_of(
                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "0123456789._-") == std::string::npos;
  if (!plain) throw Error("shard file " + quote(name) + " is not a plain file name");
  return (fs::path(folder) / name).string();
}

std::string sha256_of_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path);
  Sha256 hash;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    hash.update(buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  return hash.hex();
}

// Shard `index` of `count` as its manifest entry describes it: present, of the size its
// elements make, matching its SHA-256, and with its own header. Opened for reading.
ShardFile open_shard(const json& entry, const std::string& folder, std::size_t index,
                     std::size_t count) {
  const std::string file = shard_path(folder, entry.at("file").get<std::string>());
  const auto bytes = entry.at("bytes").get<std::uint64_t>();
  const auto elements = entry.at("elements").get<std::uint64_t>();
  if (elements > kMaxElements) throw Error("shard " + file + ": too many elements");
  if (!fs::is_regular_file(file)) throw Error("shard " + file + " is missing");
  const std::uint64_t size = fs::file_size(file);
  if (size != bytes || bytes != kShardHeaderBytes + kShardBytesPerElement * elements) {
    throw Error("shard " + file + " is " + std::to_string(size) + " bytes, the manifest says " +
                std::to_string(bytes) + " (truncated or replaced)");
  }
  if (sha256_of_file(file) != entry.at("sha256").get<std::string>()) {
    throw Error("shard " + file + " does not match its SHA-256 in the manifest (corrupted)");
  }
  ShardFile shard(file, elements);
  check_shard_header(shard.fd(), file, index, count, elements);
  return shard;
}

// Places the ranges of shard `s` in the flat layout, in order in its blocks; they must fill
// it exactly. `covered` counts the elements placed by all shards so far.
void place_ranges(const json& ranges, const ShardFile& shard, int s, std::uint64_t& covered,
                  std::vector<Placement>& index) {
  std::uint64_t local = 0;
  for (const auto& r : ranges) {
    const auto offset = r.at(0).get<std::uint64_t>(), count = r.at(1).get<std::uint64_t>();
    if (count > shard.elements() - local || offset > kMaxFlat || count > kMaxFlat - offset ||
        covered > kMaxFlat - count)
      throw Error("shard " + shard.path() + ": a range beyond its elements or the model");
    index.push_back({offset, count, s, local});
    local += count;
    covered += count;
  }
  if (local != shard.elements())
    throw Error("shard " + shard.path() + ": its ranges do not add up to its size");
}

// The shards' ranges must tile the flat layout from 0, with no gap and no overlap, and hold
// the manifest's parameter count.
void check_coverage(std::vector<Placement>& index, std::uint64_t covered, const json& params) {
  std::sort(index.begin(), index.end(),
            [](const auto& a, const auto& b) { return a.offset < b.offset; });
  std::uint64_t next = 0;
  for (const auto& e : index) {
    if (e.offset != next)
      throw Error("the shards' ranges leave a gap or overlap at " + std::to_string(next));
    next += e.count;
  }
  if (covered != params.get<std::uint64_t>()) {
    throw Error("the shards hold " + std::to_string(covered) + " parameters, the manifest says " +
                params.dump());
  }
}

// Only for readers to report: any stage loads any checkpoint.
int read_stage(const json& stage) {
  if (!stage.is_number_integer() || stage.get<std::int64_t>() < 0 || stage.get<std::int64_t>() > 3)
    throw Error("\"stage\" is not a ZeRO stage from 0 to 3");
  return stage.get<int>();
}

Contents check_manifest(const json& m, const std::string& folder) {
  check_format(m);
  Contents c;
  c.manifest.state = read_state(m.at("state"));
  const json& shards = shard_list(m);
  std::uint64_t covered = 0;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    c.shards.push_back(open_shard(shards[s], folder, s, shards.size()));
    place_ranges(shards[s].at("ranges"), c.shards.back(), static_cast<int>(s), covered, c.index);
  }
  check_coverage(c.index, covered, m.at("params"));
  c.manifest.stage = read_stage(m.at("stage"));
  c.manifest.ranks = static_cast<int>(shards.size());
  c.manifest.params = covered;
  c.manifest.model = m.at("model").dump();
  c.model = m.at("model");
  // The run record, for a resume to compare the run's settings with; not checked here.
  if (m.contains("run")) {
    if (!m.at("run").is_object()) throw Error("\"run\" is not an object");
    c.manifest.run = m.at("run").dump();
  }
  return c;
}

}  // namespace

Contents read_checkpoint(const std::string& folder) {
  const std::string manifest_path = (fs::path(folder) / kManifestFile).string();
  const json m = parse_manifest_file(manifest_path);
  try {
    return check_manifest(m, folder);
  } catch (const Error& e) {
    throw Error(manifest_path + ": " + e.what());
  } catch (const std::exception& e) {
    throw Error(manifest_path + ": malformed (" + std::string(e.what()) + ")");
  }
}

}  // namespace zerodp::checkpoint
