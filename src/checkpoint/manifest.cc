#include "checkpoint/manifest.h"

#include <unistd.h>

#include <cerrno>
#include <optional>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <utility>

#include "checkpoint/format.h"
#include "zerodp/common/error.h"
#include "zerodp/common/file.h"
#include "zerodp/common/json_text.h"
#include "zerodp/common/optimizers.h"
#include "zerodp/common/sha256.h"
#include "zerodp/common/shard.h"
#include "zerodp/optim/rule.h"

namespace zerodp::checkpoint {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;

// Offsets and counts are checked against these bounds before any sum, so no sum wraps.
constexpr std::uint64_t kMaxElements = (std::uint64_t{1} << 60) / kMaxShardBytesPerElement;
constexpr std::uint64_t kMaxFlat = std::uint64_t{1} << 62;

// A manifest lists a rank's shards and the run's record: kilobytes, megabytes for thousands of
// ranks. A larger file is not a manifest (nor is /dev/zero).
constexpr std::uint64_t kMaxManifestBytes = 64 << 20;

// The manifest's JSON, or nullopt with the reason: not a regular file, too large, too deep,
// not JSON.
std::optional<json> read_manifest_json(const std::string& manifest_path, std::string& why) {
  const std::optional<std::string> text = read_bounded(manifest_path, kMaxManifestBytes, why);
  if (!text) return std::nullopt;
  why = json_depth_refusal(*text);
  if (!why.empty()) return std::nullopt;
  try {
    return json::parse(*text);
  } catch (const json::exception& e) {
    why = "is not valid JSON: " + escape_controls(std::string(e.what()).substr(0, 200));
    return std::nullopt;
  }
}

json parse_manifest_file(const std::string& manifest_path) {
  std::string why;
  std::optional<json> j = read_manifest_json(manifest_path, why);
  if (!j) throw Error("cannot read " + manifest_path + ": it " + why);
  return std::move(*j);
}

// The checks below throw UsageError naming the field and what it must be (a manifest edited by
// hand is input, refused with status 2), Error for what is corrupt or cannot be read;
// read_checkpoint() names the manifest. A field of the wrong JSON type is named too, never read as
// another type: 2.5 steps or -1 samples are refused, not rounded or wrapped.

const json& field(const json& parent, const char* key, const std::string& name) {
  if (!parent.is_object() || !parent.contains(key)) throw UsageError(name + " is missing");
  return parent.at(key);
}

// A whole number from 0 to max, written as one (no fraction, no sign, no quotes).
std::uint64_t whole_value(const json& v, const std::string& name, std::uint64_t max) {
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > max) {
    throw UsageError(name + " is " + shown_json(v) + ", expected a whole number from 0 to " +
                     std::to_string(max));
  }
  return v.get<std::uint64_t>();
}

std::uint64_t whole(const json& parent, const char* key, const std::string& name,
                    std::uint64_t max) {
  return whole_value(field(parent, key, name), name, max);
}

const std::string& text(const json& parent, const char* key, const std::string& name) {
  const json& v = field(parent, key, name);
  if (!v.is_string()) throw UsageError(name + " is " + shown_json(v) + ", expected a string");
  return v.get_ref<const std::string&>();
}

void check_format(const json& m) {
  if (!m.is_object() || !m.contains("format") || m.at("format") != "zerodp-checkpoint")
    throw Error("not a zerodp checkpoint manifest");
  const json& version = field(m, "version", "\"version\"");
  if (!version.is_number_unsigned() || version.get<std::uint64_t>() != kFormatVersion) {
    throw Error("format version " + shown_json(version) + ", this zerodp reads version " +
                std::to_string(kFormatVersion));
  }
  if (!field(m, "model", "\"model\"").is_object()) throw UsageError("\"model\" is not an object");
  if (m.contains("run") && !m.at("run").is_object()) throw UsageError("\"run\" is not an object");
}

// Read and checked here, once, so that state() cannot fail later.
zero::EngineState read_state(const json& m) {
  const json& state = field(m, "state", "\"state\"");
  const auto step = whole(state, "step", "state.step", std::numeric_limits<std::int64_t>::max());
  const auto samples = whole(state, "samples_done", "state.samples_done", kMaxSamplesDone);
  const auto good_steps = whole(state, "good_steps", "state.good_steps",
                                static_cast<std::uint64_t>(std::numeric_limits<int>::max()));
  const json& scale = field(state, "loss_scale", "state.loss_scale");
  if (!scale.is_number() || !(scale.get<double>() > 0) ||
      !std::isfinite(static_cast<float>(scale.get<double>())))
    throw UsageError("state.loss_scale is " + shown_json(scale) +
                     ", expected a positive finite fp32");
  // The run's step, skipped steps included; a manifest from before it was recorded was saved by
  // a run whose steps all counted as optimizer steps as far as a resume could tell: its step.
  const std::uint64_t run_step =
      state.contains("run_step")
          ? whole(state, "run_step", "state.run_step", std::numeric_limits<std::int64_t>::max())
          : step;
  if (run_step < step) {
    throw UsageError("state.run_step is " + std::to_string(run_step) +
                     ", expected at least state.step (" + std::to_string(step) + ")");
  }
  return {static_cast<std::int64_t>(step), samples, static_cast<float>(scale.get<double>()),
          static_cast<int>(good_steps), static_cast<std::int64_t>(run_step)};
}

DType read_precision(const json& m) {
  const std::string& name = text(m, "precision", "\"precision\"");
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    if (name == dtype_name(t)) return t;
  throw UsageError("\"precision\" is " + quote(name) + ", expected fp32, fp16 or bf16");
}

// Absent in manifests written before run ids: then empty, and the checkpoint is another run's
// unless it is the one resumed.
std::string read_run_id(const json& m) {
  if (!m.contains("run_id")) return {};
  const json& id = m.at("run_id");
  if (!id.is_string() || !is_run_id(id.get<std::string>()))
    throw UsageError("\"run_id\" is " + shown_json(id) + ", expected 32 lowercase hex digits");
  return id.get<std::string>();
}

const json& shard_list(const json& m) {
  const json& shards = field(m, "shards", "\"shards\"");
  if (!shards.is_array() || shards.empty()) throw UsageError("\"shards\" is not a list of shards");
  if (whole(m, "ranks", "\"ranks\"", 1 << 20) != shards.size())
    throw UsageError("\"ranks\" is not the number of shards");
  return shards;
}

// Shards live in the checkpoint's folder: a name is a plain file name, never a path.
std::string shard_path(const std::string& folder, const std::string& name) {
  const bool plain = !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
                     name.find_first_not_of(
                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "0123456789._-") == std::string::npos;
  if (!plain) throw UsageError("shard file " + shown(name) + " is not a plain file name");
  return (fs::path(folder) / name).string();
}

std::string sha256_of_file(const std::string& path) {
  std::string why;
  const int fd = open_regular(path, why);
  if (fd < 0) throw Error("cannot read " + path + ": it " + why);
  Sha256 hash;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = errno_text();
      ::close(fd);
      throw Error("cannot read " + path + ": " + why);
    }
    if (n == 0) break;
    hash.update(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  return hash.hex();
}

// Shard `index` of `count` as its manifest entry describes it: present, of the size its
// elements make, matching its SHA-256, and with its own header. Opened for reading.
ShardFile open_shard(const json& entry, const std::string& folder, std::size_t index,
                     std::size_t count, const std::string& digest, std::size_t slots) {
  const std::string at = "shards[" + std::to_string(index) + "].";
  const std::string file = shard_path(folder, text(entry, "file", at + "file"));
  const auto bytes = whole(entry, "bytes", at + "bytes", kMaxFlat);
  const auto elements = whole(entry, "elements", at + "elements", kMaxElements);
  const std::string& sha = text(entry, "sha256", at + "sha256");
  if (!fs::is_regular_file(file)) throw Error("shard " + file + " is missing");
  const std::uint64_t size = fs::file_size(file);
  if (size != bytes || bytes != kShardHeaderBytes + shard_bytes_per_element(slots) * elements) {
    throw Error("shard " + file + " is " + std::to_string(size) + " bytes, the manifest says " +
                std::to_string(bytes) + " (truncated or replaced)");
  }
  if (sha256_of_file(file) != sha) {
    throw Error("shard " + file + " does not match its SHA-256 in the manifest (corrupted)");
  }
  ShardFile shard(file, elements);
  check_shard_header(shard.fd(), file, index, count, elements, digest);
  return shard;
}

// Places the ranges of shard `s` in the flat layout, in order in its blocks; they must fill
// it exactly. `covered` counts the elements placed by all shards so far.
void place_ranges(const json& entry, const ShardFile& shard, int s, std::uint64_t& covered,
                  std::vector<Placement>& index) {
  const std::string name = "shards[" + std::to_string(s) + "].ranges";
  const json& ranges = field(entry, "ranges", name);
  if (!ranges.is_array()) throw UsageError(name + " is not a list of [offset, count]");
  std::uint64_t local = 0;
  for (const auto& r : ranges) {
    if (!r.is_array() || r.size() != 2)
      throw UsageError(name + " holds " + shown_json(r) + ", not [offset, count]");
    const auto offset = whole_value(r[0], name + " offset", kMaxFlat);
    const auto count = whole_value(r[1], name + " count", kMaxFlat);
    if (count > shard.elements() - local || offset > kMaxFlat || count > kMaxFlat - offset ||
        covered > kMaxFlat - count)
      throw UsageError("shard " + shard.path() + ": a range beyond its elements or the model");
    // A shard holds its chunks in bucket order, which is the layout's: ranges out of order
    // would read each block into another's place.
    if (local > 0 && offset < index.back().offset + index.back().count)
      throw UsageError(name + " lists " + std::to_string(offset) + " after " +
                       std::to_string(index.back().offset) + ", out of the layout's order");
    index.push_back({offset, count, s, local});
    local += count;
    covered += count;
  }
  if (local != shard.elements())
    throw UsageError("shard " + shard.path() + ": its ranges do not add up to its size");
}

// The shards' ranges must tile the flat layout from 0, with no gap and no overlap, and hold
// the manifest's parameter count.
void check_coverage(std::vector<Placement>& index, std::uint64_t covered, std::uint64_t params) {
  std::sort(index.begin(), index.end(),
            [](const auto& a, const auto& b) { return a.offset < b.offset; });
  std::uint64_t next = 0;
  for (const auto& e : index) {
    if (e.offset != next)
      throw UsageError("the shards' ranges leave a gap or overlap at " + std::to_string(next));
    next += e.count;
  }
  if (covered != params) {
    throw UsageError("the shards hold " + std::to_string(covered) +
                     " parameters, the manifest says " + std::to_string(params));
  }
}

// Each shard's ranges must be the ones its rank owns, or a manifest whose shards' ranges were
// swapped would load the weights permuted with every checksum passing. The partition
// (zerodp/common/partition.h) cuts each bucket into the ranks' chunks with shard_of(), in rank
// order, and a shard lists its non-empty chunks only: so walking the layout in order, every
// bucket is a run of shards 0, 1, ..., k-1, whose counts are shard_of(bucket, ranks, r).
// Needs the index sorted and tiling the layout (check_coverage()).
void check_placement(const std::vector<Placement>& index, int ranks) {
  auto refuse = [](const Placement& p, const std::string& why) {
    return UsageError("shards[" + std::to_string(p.shard) + "].ranges: its range at " +
                      std::to_string(p.offset) + " " + why +
                      " (the ranges were edited or swapped between shards)");
  };
  for (std::size_t first = 0; first < index.size();) {
    if (index[first].shard != 0)
      throw refuse(index[first], "opens a bucket, which rank 0's chunk does");
    std::size_t end = first + 1;
    while (end < index.size() && index[end].shard == index[end - 1].shard + 1) ++end;
    std::uint64_t bucket = 0;
    for (std::size_t i = first; i < end; ++i) bucket += index[i].count;
    for (std::size_t i = first; i < end; ++i) {
      const Shard chunk = shard_of(bucket, ranks, index[i].shard);
      if (chunk.size != index[i].count || chunk.offset != index[i].offset - index[first].offset)
        throw refuse(index[i],
                     "is not rank " + std::to_string(index[i].shard) + "'s chunk of its bucket");
    }
    // A rank whose chunk is non-empty, past the last one listed, would be missing.
    if (end - first < static_cast<std::size_t>(ranks) &&
        shard_of(bucket, ranks, static_cast<int>(end - first)).size != 0)
      throw refuse(index[first], "begins a bucket whose chunk of rank " +
                                     std::to_string(end - first) + " is missing");
    first = end;
  }
}

// The optimizer whose slots the shards hold after the master: a word the engine runs (a
// manifest written before optimizers were recorded holds AdamW's m and v).
Optimizer read_optimizer(const json& m) {
  if (!m.contains("optimizer")) return Optimizer::adam;
  const json& v = m.at("optimizer");
  const auto name = v.is_string() ? optimizer_from_name(v.get_ref<const std::string&>())
                                  : std::optional<OptimizerName>();
  if (!name || !optim::engine_rule(name->id))
    throw UsageError("\"optimizer\" is " + shown_json(v) + ", expected one of " +
                     optim::engine_optimizer_words());
  return name->id;
}

Contents check_manifest(const json& m, const std::string& folder) {
  check_format(m);
  Contents c;
  c.manifest.state = read_state(m);
  c.manifest.stage = static_cast<int>(whole(m, "stage", "\"stage\" (a ZeRO stage)", 3));
  c.manifest.precision = read_precision(m);
  c.manifest.bucket_bytes = whole(m, "bucket_bytes", "\"bucket_bytes\"", kMaxFlat);
  if (c.manifest.bucket_bytes == 0) throw UsageError("\"bucket_bytes\" is 0, expected at least 1");
  c.manifest.run_id = read_run_id(m);
  c.manifest.optimizer = read_optimizer(m);
  const std::size_t slots = optimizer_row(c.manifest.optimizer).slots.size();
  const std::uint64_t params = whole(m, "params", "\"params\"", kMaxFlat);
  const json& shards = shard_list(m);
  const std::string digest = model_digest(m.at("model"));
  std::uint64_t covered = 0;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    c.shards.push_back(open_shard(shards[s], folder, s, shards.size(), digest, slots));
    place_ranges(shards[s], c.shards.back(), static_cast<int>(s), covered, c.index);
  }
  check_coverage(c.index, covered, params);
  check_placement(c.index, static_cast<int>(shards.size()));
  c.manifest.ranks = static_cast<int>(shards.size());
  c.manifest.params = covered;
  c.manifest.model = m.at("model").dump(-1, ' ', false, json::error_handler_t::replace);
  c.model = m.at("model");
  // The run record, for a resume to compare the run's settings with; not checked here.
  if (m.contains("run")) {
    if (!m.at("run").is_object()) throw UsageError("\"run\" is not an object");
    c.manifest.run = m.at("run").dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return c;
}

}  // namespace

Contents read_checkpoint(const std::string& folder) {
  const std::string manifest_path = (fs::path(folder) / kManifestFile).string();
  const json m = parse_manifest_file(manifest_path);
  try {
    return check_manifest(m, folder);
  } catch (const UsageError& e) {
    throw UsageError(manifest_path + ": " + e.text());
  } catch (const Error& e) {
    throw Error(manifest_path + ": " + e.what());
  } catch (const std::exception& e) {
    throw Error(manifest_path + ": malformed (" + std::string(e.what()) + ")");
  }
}

bool is_run_id(const std::string& text) {
  return text.size() == 32 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string run_id_of(const std::string& folder) {
  std::string why;
  const json m =
      read_manifest_json((fs::path(folder) / kManifestFile).string(), why).value_or(json());
  if (!m.is_object() || !m.contains("run_id") || !m.at("run_id").is_string()) return {};
  const std::string id = m.at("run_id").get<std::string>();
  return is_run_id(id) ? id : std::string();
}

}  // namespace zerodp::checkpoint
