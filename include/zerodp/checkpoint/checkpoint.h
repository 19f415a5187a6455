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
//  - A manifest edited by hand is input: a field out of its type or range, a model config the
//    shards' weights are not of, or shards' ranges that are not the ones their ranks own (the
//    partition's chunks, zerodp/common/partition.h: swapped ranges would load the weights
//    permuted with every checksum passing) throws UsageError, one line naming manifest.json and
//    the field.
//  - Once open() has returned, reading cannot fail on the manifest: only an I/O error on a
//    shard can throw.
//  - Reading streams: read() touches only the shard bytes of the range asked for.
//  - JSON crosses this interface as text: the model config and run record given to save(), and
//    the model config read back, are each the text of one JSON object.
//  - One run per save dir: a run claims its save dir (SaveDir::claim) before it trains, which
//    takes the folder's lock for as long as the claim lives and refuses a folder that holds
//    another run's checkpoints. Every manifest records the run's identity, a random 128-bit
//    id made when a fresh run starts and kept across resumes. save() writes only into a folder
//    this process has claimed, and pruning removes only that run's checkpoints, never the one
//    just written.
//  - Every manifest field is read into its type and range (a step is a whole number, a stage
//    0-3, a precision fp32, fp16 or bf16 ...) and an error names the field otherwise. The
//    model config's and run record's own fields are run/'s (zerodp/run/run_record.h).
//
// Layout: SAVE_DIR/step-00000100/ holds rank-00000-of-00004.bin ... and manifest.json. A shard
// is a 64-byte header ("ZERODPSH", version, rank, ranks, element count, the SHA-256 of the
// model config the weights are of) and then the fp32 master weights and each of the optimizer's
// slots (optim/rule.h: AdamW's m and v, Lion's m, SGD's momentum buffer, none for SGD) of the
// rank's owned ranges, each block packed in range order, little-endian. The 16-bit params are not
// stored: they are always the master rounded. The manifest holds the format version, the model
// config, the optimizer ("optimizer": its word; absent in manifests written before, which hold
// AdamW's slots), the stage and ranks that saved, the engine state, the run's hyper-parameters and,
// for every shard, its file, size, SHA-256 and ranges. The state is state.run_step (the steps run,
// fp16's skipped steps included: what names the step folder, and where a resume goes on in the
// schedule and the steps left), state.step (AdamW's t, the updates only: less than run_step after a
// skip), state.samples_done (the data position) and the loss scale with its good-step count. A
// manifest without run_step was written before it was recorded: its run_step is read as its step,
// which is exact for every run that skipped no step (bf16 always) and is where such a checkpoint
// always resumed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "zerodp/comm/communicator.h"
#include "zerodp/zero/engine.h"

namespace zerodp::checkpoint {

// The format version written in every shard header and manifest; open() reads only this one.
inline constexpr int kFormatVersion = 1;
// The data position a manifest may record, and a run may reach: far beyond any run, far enough
// below 2^63 that a resumed run adding its steps' samples never wraps, so that every manifest a
// run writes its own reader accepts.
inline constexpr std::uint64_t kMaxSamplesDone = std::uint64_t{1} << 62;

// Collective: writes this step's checkpoint of `engine` under save_dir and returns its folder.
// The process of rank 0 must hold a SaveDir claim of save_dir (ZERODP_CHECK otherwise): its run
// id goes into the manifest. `model_config` is the model's config and `run_record` the
// hyper-parameters to record, each the text of a JSON object (ZERODP_CHECK otherwise: the
// caller makes them). The run record is kept in manifest.json and read back as Manifest::run.
// Keeps the newest `keep` complete checkpoints of this run (>= 1), the one just written always
// among them; other runs' checkpoints are never removed. Throws Error naming the file on a
// failed write (disk full, permissions); the previous checkpoint then stays intact.
std::string save(const std::string& save_dir, zero::Engine& engine, comm::Communicator& comm,
                 const std::string& model_config, const std::string& run_record, int keep = 2);

// The newest complete checkpoint folder under save_dir, if any.
std::optional<std::string> latest(const std::string& save_dir);

// The checkpoint folder (SAVE_DIR/step-*, complete or not) that `path` is or lies inside, if
// any: where a command must not write its own files.
std::optional<std::string> checkpoint_containing(const std::string& path);

// What a checkpoint's manifest records and its readers use, checked by Checkpoint::open().
struct Manifest {
  std::string model;              // the model config given to save(): the text of a JSON object
  std::uint64_t params = 0;       // parameters of the flat layout, all held by the shards
  int stage = 0;                  // the ZeRO stage that saved (any stage can load it)
  int ranks = 0;                  // the ranks that saved: one shard each (any number can load it)
  DType precision = DType::bf16;  // the 16-bit params' type of the run that saved
  std::uint64_t bucket_bytes = 0;
  zero::EngineState state;  // run step, optimizer step, data position, loss scale
  // Whose slots the shards hold after the master (AdamW's m and v when the manifest predates
  // the field): a resume continues with the same optimizer.
  Optimizer optimizer = Optimizer::adam;
  std::string run_id;  // 32 hex digits; empty in a manifest written before run ids existed
  // The run record given to save(): the text of a JSON object ("{}" when the manifest has
  // none). Read back so that a resume can hold the run's settings to it.
  std::string run = "{}";
};

// A complete checkpoint, opened for reading: its manifest checked and its shards verified.
class Checkpoint {
 public:
  // `path` is a checkpoint folder or a save dir (then its newest complete checkpoint).
  // Throws Error naming manifest.json when there is none or it is unreadable or of another
  // version, or names shards that are missing, of the wrong size or checksum; UsageError
  // naming manifest.json and the field when a field is out of its type or range.
  static Checkpoint open(const std::string& path);
  ~Checkpoint();
  Checkpoint(Checkpoint&&) noexcept;
  Checkpoint& operator=(Checkpoint&&) noexcept;

  const std::string& folder() const;
  const Manifest& manifest() const;
  // Shorthands for manifest().params and manifest().state, what every loader needs.
  std::uint64_t params() const;
  zero::EngineState state() const;

  // Fills count values of the range from the shards into each non-null pointer: the master and
  // the optimizer's slots in its row's order (AdamW's m and v, Lion's m ...). Throws Error
  // naming the shard if it cannot be read, and the optimizer when a slot it has none of is
  // asked for.
  void read(zero::FlatRange range, float* master, float* slot0, float* slot1) const;
  // An Engine::RangeReader over this checkpoint, for Engine::import_state(reader(), state()).
  zero::Engine::RangeReader reader() const;

  // Throws Error naming the first field where `model_config` differs from the checkpoint's,
  // but for those the weights do not depend on. `model_config` is the text of a JSON object
  // (ZERODP_CHECK otherwise).
  void check_model(const std::string& model_config) const;

 private:
  struct Impl;
  explicit Checkpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A save dir claimed by one run of this process, from claim() until destroyed: the folder's
// lock (SAVE_DIR/.zerodp-lock, flock, with the holder's pid and host in it) is held all along,
// and save() into the folder writes this run's id.
class SaveDir {
 public:
  // Claims `save_dir` for a run before it trains; `resumed` is the checkpoint the run resumes,
  // or null for a fresh run. Creates the folder. Throws UsageError with one line naming the
  // folder, and what to do, when:
  //  - it is not a folder (a file is in the way) or cannot be created or written in;
  //  - another run holds its lock (the holder is named);
  //  - it holds complete checkpoints of another run: a fresh run accepts only a folder with no
  //    complete checkpoint; a resumed run only one whose checkpoints are all the resumed
  //    run's. A manifest without a run id counts as the resumed run's only when the resumed
  //    checkpoint has none either.
  // A resumed run takes the resumed run's id (a new one when it has none); a fresh run a new
  // random one. Claiming moves nothing: see set_aside_superseded().
  static SaveDir claim(const std::string& save_dir, const Checkpoint* resumed);
  ~SaveDir();
  SaveDir(SaveDir&&) noexcept;
  SaveDir& operator=(SaveDir&&) noexcept;

  const std::string& path() const;
  const std::string& run_id() const;
  // A resumed run that rewinds (its step is older than the newest checkpoint of the folder)
  // moves the later checkpoints into SAVE_DIR/superseded-<UTC time>/ and returns one line for
  // people saying so (empty when nothing moved). Called once the run is sure to start (every
  // check passed), so that a refused run leaves the folder as it found it; later calls do
  // nothing.
  std::string set_aside_superseded();

 private:
  struct Impl;
  explicit SaveDir(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace zerodp::checkpoint
