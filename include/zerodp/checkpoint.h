// Sharded checkpoints: every rank writes its own shard, rank 0 the manifest, and any number of
// ranks at any stage can read them back.
//
// Layout: SAVE_DIR/step-00000100/ holds rank-00000-of-00004.bin ... and manifest.json. A shard
// is a 64-byte header ("ZERODPSH", version, rank, ranks, element count) and then the fp32
// master weights, Adam m and Adam v of the rank's owned ranges, each block packed in range
// order, little-endian. The 16-bit params are not stored: they are always the master rounded.
// The manifest holds the format version, the model config, the stage and ranks that saved,
// the engine state (step, data position, loss scale), the run's hyper-parameters and, for
// every shard, its file, size, SHA-256 and ranges.
//
// Contract:
//  - Complete or absent: each shard is written to a temporary name, fsynced and renamed; the
//    manifest is written the same way only after every shard is in place, and the folder is
//    fsynced. A process killed at any moment leaves either a complete checkpoint or a folder
//    without a manifest, which readers ignore; older checkpoints are untouched (and only
//    removed, beyond `keep`, after the new one is complete).
//  - Nothing wrong is read silently: a missing, truncated or corrupted shard, a manifest from
//    another format version, or (on resume) another model configuration throws Error naming
//    the file and what is wrong. Shards are verified against their SHA-256 when first read.
//  - Reading streams: read() touches only the shard bytes of the range asked for.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "zerodp/comm.h"
#include "zerodp/engine.h"

namespace zerodp::io {

inline constexpr int kCheckpointVersion = 1;

// Collective: writes this step's checkpoint of `engine` under save_dir and returns its folder.
// `model` is the model's config, `run` the hyper-parameters to record (both JSON objects).
// Keeps the newest `keep` complete checkpoints (>= 1). Throws Error naming the file on a
// failed write (disk full, permissions); the previous checkpoint then stays intact.
std::string save_checkpoint(const std::string& save_dir, Engine& engine, comm::Communicator& comm,
                            const nlohmann::json& model, const nlohmann::json& run, int keep = 2);

// The newest complete checkpoint folder under save_dir, if any.
std::optional<std::string> latest_checkpoint(const std::string& save_dir);

class Checkpoint {
 public:
  // `path` is a checkpoint folder or a save dir (then its newest complete checkpoint).
  // Throws Error when there is none or the manifest is unreadable, of another version, or
  // names shards that are missing or of the wrong size.
  static Checkpoint open(const std::string& path);
  ~Checkpoint();
  Checkpoint(Checkpoint&&) noexcept;
  Checkpoint& operator=(Checkpoint&&) noexcept;

  const std::string& folder() const;
  const nlohmann::json& manifest() const;
  std::uint64_t params() const;
  EngineState state() const;

  // Fills count values of the range from the shards into each non-null pointer. Throws Error
  // naming the shard if it fails its checksum or cannot be read.
  void read(FlatRange range, float* master, float* m, float* v) const;
  // An Engine::RangeReader over this checkpoint.
  Engine::RangeReader reader() const;

  // Throws Error naming the first field where `model` differs from the checkpoint's config.
  void check_model(const nlohmann::json& model) const;

 private:
  struct Impl;
  explicit Checkpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace zerodp::io
