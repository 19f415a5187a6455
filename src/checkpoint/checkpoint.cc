// checkpoint::latest() and checkpoint::Checkpoint: finding a complete checkpoint and reading
// ranges of it. Its manifest is read and checked in manifest.cc, saving is in save.cc.
#include "zerodp/checkpoint/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>
#include <utility>

#include "checkpoint/format.h"
#include "checkpoint/manifest.h"
#include "zerodp/common/error.h"

namespace zerodp::checkpoint {
namespace fs = std::filesystem;
namespace {

// `path` itself when it is a checkpoint folder, else the newest complete checkpoint under it.
std::string checkpoint_folder(const std::string& path) {
  std::error_code ec;
  if (fs::exists(fs::path(path) / kManifestFile, ec)) return path;
  if (auto newest = latest(path)) return *newest;
  throw Error("no complete checkpoint in " + path +
              " (no manifest.json in it or in a step-* folder under it)");
}

// Copies elements [from, from + n) of the flat layout, all within placement `p`, out of each
// block of its shard into the non-null outputs (each at its own `at`).
void read_placement(const ShardFile& shard, const Placement& p, std::uint64_t from, std::uint64_t n,
                    float* const (&outs)[3]) {
  const std::uint64_t local = p.local + (from - p.offset);
  for (int block = 0; block < 3; ++block) {
    if (!outs[block]) continue;
    // The blocks follow the header one after the other: master, then the optimizer's slots.
    const std::uint64_t pos = kShardHeaderBytes + 4 * (block * shard.elements() + local);
    shard.read_at(outs[block], n * sizeof(float), pos);
  }
}

}  // namespace

std::optional<std::string> latest(const std::string& save_dir) {
  std::error_code ec;
  if (!fs::is_directory(save_dir, ec)) return std::nullopt;
  std::optional<std::string> best;
  for (const auto& entry : fs::directory_iterator(save_dir, ec)) {
    if (!is_complete(entry.path())) continue;
    // step-%08lld names: the newest sorts last.
    if (!best || entry.path().string() > *best) best = entry.path().string();
  }
  return best;
}

std::optional<std::string> checkpoint_containing(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec).lexically_normal();
  for (; !p.empty(); p = p.parent_path()) {
    const std::string name = p.filename().string();
    const bool step_name = name.size() > 5 && name.rfind("step-", 0) == 0 &&
                           name.find_first_not_of("0123456789", 5) == std::string::npos;
    if (step_name || fs::exists(p / kManifestFile, ec)) return p.string();
    if (p == p.root_path()) break;
  }
  return std::nullopt;
}

struct Checkpoint::Impl {
  std::string folder;
  Contents contents;
};

Checkpoint::Checkpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Checkpoint::~Checkpoint() = default;
Checkpoint::Checkpoint(Checkpoint&&) noexcept = default;
Checkpoint& Checkpoint::operator=(Checkpoint&&) noexcept = default;

Checkpoint Checkpoint::open(const std::string& path) {
  std::string folder = checkpoint_folder(path);
  Contents contents = read_checkpoint(folder);
  return Checkpoint(std::make_unique<Impl>(Impl{std::move(folder), std::move(contents)}));
}

const std::string& Checkpoint::folder() const {
  return impl_->folder;
}
const Manifest& Checkpoint::manifest() const {
  return impl_->contents.manifest;
}
std::uint64_t Checkpoint::params() const {
  return impl_->contents.manifest.params;
}
zero::EngineState Checkpoint::state() const {
  return impl_->contents.manifest.state;
}

void Checkpoint::read(zero::FlatRange range, float* master, float* slot0, float* slot1) const {
  const auto& index = impl_->contents.index;
  const OptimizerRow& row = optimizer_row(impl_->contents.manifest.optimizer);
  if ((slot0 && row.slots.size() < 1) || (slot1 && row.slots.size() < 2)) {
    throw Error("checkpoint " + impl_->folder + " holds the state of " +
                std::string(optim::engine_word(row)) + " (" + std::to_string(row.slots.size()) +
                " slots), not the slot asked for");
  }
  // The placement holding range.offset: the last one starting at or before it.
  auto it = std::upper_bound(index.begin(), index.end(), range.offset,
                             [](std::uint64_t off, const Placement& p) { return off < p.offset; });
  if (it != index.begin()) --it;
  std::uint64_t at = range.offset;
  const std::uint64_t end = range.offset + range.count;
  for (; at < end && it != index.end(); ++it) {
    if (it->offset + it->count <= at) continue;
    const std::uint64_t to = std::min(end, it->offset + it->count);
    const std::uint64_t skip = at - range.offset;
    float* const outs[3] = {master ? master + skip : nullptr, slot0 ? slot0 + skip : nullptr,
                            slot1 ? slot1 + skip : nullptr};
    read_placement(impl_->contents.shards[it->shard], *it, at, to - at, outs);
    at = to;
  }
  if (at != end) throw Error("checkpoint " + impl_->folder + " does not cover the range asked for");
}

zero::Engine::RangeReader Checkpoint::reader() const {
  return [this](zero::FlatRange r, float* master, float* slot0, float* slot1) {
    read(r, master, slot0, slot1);
  };
}

void Checkpoint::check_model(const std::string& model_config) const {
  const nlohmann::json model = nlohmann::json::parse(model_config, nullptr, false);
  ZERODP_CHECK_MSG(model.is_object(), "check_model: the model config is not a JSON object");
  const nlohmann::json& saved = impl_->contents.model;
  auto absent_or = [](const nlohmann::json& config, const std::string& key) {
    return config.contains(key) ? shown_json(config.at(key)) : std::string("absent");
  };
  // Every key of either side, the checkpoint's first: a key only one side has differs too.
  nlohmann::json keys = nlohmann::json::array();
  for (const auto& [key, value] : saved.items()) keys.push_back(key);
  for (const auto& [key, value] : model.items())
    if (!saved.contains(key)) keys.push_back(key);
  for (const auto& k : keys) {
    const std::string key = k.get<std::string>();
    // The weights' shape does not depend on these: how they were computed, and from where.
    if (key == "data" || key == "checkpoint_activations" || key == "compute") continue;
    if (!saved.contains(key) || !model.contains(key) || model.at(key) != saved.at(key)) {
      throw Error((fs::path(impl_->folder) / kManifestFile).string() +
                  ": a checkpoint of another model configuration: " + shown(key) + " is " +
                  absent_or(saved, key) + " there, " + absent_or(model, key) + " here");
    }
  }
}

}  // namespace zerodp::checkpoint
