// Sharded checkpoints: every rank writes its own shard, rank 0 the manifest, and any number of
// ranks at any stage can read them back.
//
// Contract:
//  - Complete or absent: each shard is written to a temporary name, fsynced and renamed; the
//    manifest is written the same way only after every shard is in place, and the folder is
//    fsynced. A process killed at any moment leaves either a complete checkpoint or a folder
//    without a manifest, which readers ignore; older checkpoints are untouched (and only
//    removed, beyond `keep`, after the new one is complete).
//  - Nothing wrong is read silently: a missing, truncated or corrupted shard, a manifest from
//    another format version, or (on resume) another model configuration throws Error naming
//    the file and what is wrong. Shards are verified against their SHA-256 when opened.
//  - Once open() has returned, reading cannot fail on the manifest: only an I/O error on a
//    shard can throw.
//  - Reading streams: read() touches only the shard bytes of the range asked for.
//  - JSON crosses this interface as text: the model config and run record given to save(), and
//    the model config read back, are each the text of one JSON object.
//
// Layout: SAVE_DIR/step-00000100/ holds rank-00000-of-00004.bin ... and manifest.json. A shard
// is a 64-byte header ("ZERODPSH", version, rank, ranks, element count) and then the fp32
// master weights, Adam m and Adam v of the rank's owned ranges, each block packed in range
// order, little-endian. The 16-bit params are not stored: they are always the master rounded.
// The manifest holds the format version, the model config, the stage and ranks that saved,
// the engine state (step, data position, loss scale), the run's hyper-parameters and, for
// every shard, its file, size, SHA-256 and ranges.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "zerodp/comm.h"
#include "zerodp/engine.h"

namespace zerodp::checkpoint {

// The format version written in every shard header and manifest; open() reads only this one.
inline constexpr int kFormatVersion = 1;

// Collective: writes this step's checkpoint of `engine` under save_dir and returns its folder.
// `model_config` is the model's config and `run_record` the hyper-parameters to record, each
// the text of a JSON object (ZERODP_CHECK otherwise: the caller makes them). The run record is
// kept in manifest.json and read back as Manifest::run. Keeps the newest `keep` complete
// checkpoints (>= 1). Throws Error naming the file on a failed write (disk full,
// permissions); the previous checkpoint then stays intact.
std::string save(const std::string& save_dir, Engine& engine, comm::Communicator& comm,
                 const std::string& model_config, const std::string& run_record, int keep = 2);

// The newest complete checkpoint folder under save_dir, if any.
std::optional<std::string> latest(const std::string& save_dir);

// What a checkpoint's manifest records and its readers use, checked by Checkpoint::open().
struct Manifest {
  std::string model;         // the model config given to save(): the text of a JSON object
  std::uint64_t params = 0;  // parameters of the flat layout, all held by the shards
  int stage = 0;             // the ZeRO stage that saved (any stage can load it)
  int ranks = 0;             // the ranks that saved: one shard each (any number can load it)
  EngineState state;         // step, data position, loss scale
  // The run record given to save(): the text of a JSON object ("{}" when the manifest has
  // none). Read back so that a resume can hold the run's settings to it.
  std::string run = "{}";
};

// A complete checkpoint, opened for reading: its manifest checked and its shards verified.
class Checkpoint {
 public:
  // `path` is a checkpoint folder or a save dir (then its newest complete checkpoint).
  // Throws Error naming manifest.json when there is none or it is unreadable, of another
  // version, malformed, or names shards that are missing, of the wrong size or checksum.
  static Checkpoint open(const std::string& path);
  ~Checkpoint();
  Checkpoint(Checkpoint&&) noexcept;
  Checkpoint& operator=(Checkpoint&&) noexcept;

  const std::string& folder() const;
  const Manifest& manifest() const;
  // Shorthands for manifest().params and manifest().state, what every loader needs.
  std::uint64_t params() const;
  EngineState state() const;

  // Fills count values of the range from the shards into each non-null pointer. Throws Error
  // naming the shard if it cannot be read.
  void read(FlatRange range, float* master, float* m, float* v) const;
  // An Engine::RangeReader over this checkpoint, for Engine::import_state(reader(), state()).
  Engine::RangeReader reader() const;

  // Throws Error naming the first field where `model_config` differs from the checkpoint's,
  // but for those the weights do not depend on. `model_config` is the text of a JSON object
  // (ZERODP_CHECK otherwise).
  void check_model(const std::string& model_config) const;

 private:
  struct Impl;
  explicit Checkpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace zerodp::checkpoint
