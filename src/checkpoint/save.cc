// checkpoint::save(): every rank writes its shard, rank 0 the manifest once all shards are in
// place, then prunes the oldest checkpoints.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <vector>

#include "checkpoint/format.h"
#include "checkpoint/save_dir.h"
#include "zerodp/checkpoint/checkpoint.h"
#include "zerodp/common/error.h"
#include "zerodp/common/file.h"
#include "zerodp/common/json_utf8.h"
#include "zerodp/common/sha256.h"

namespace zerodp::checkpoint {
namespace fs = std::filesystem;
namespace {

// The text of a JSON object the caller made; anything else is a bug of the caller.
nlohmann::json parse_object(const std::string& text, const char* what) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  ZERODP_CHECK_MSG(j.is_object(), std::string(what) + " is not the text of a JSON object");
  return j;
}

// Runs `work` and returns the message of what it threw, empty when it did not: a rank that
// fails must still reach the collective that tells the others.
template <class Work>
std::string failure_of(Work&& work) {
  try {
    work();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

// The bytes of a failing rank's reason that reach the others: enough for a path and errno's
// words, short enough that every rank passes one fixed-size buffer (a collective's count must
// be the same on every rank).
constexpr std::size_t kReasonBytes = 480;

// Collective: throws Error on every rank when any rank's `failure` is set, the same line on
// each, "<what> failed on rank R: <R's message>" with R the lowest rank that failed: whichever
// rank's error is printed names the cause, wherever it happened. No rank goes on past a step
// that failed on another.
void throw_if_any_failed(comm::Communicator& comm, const std::string& failure,
                         const std::string& what) {
  std::vector<float> failed(std::size_t(comm.size()), 0.0f);
  failed[std::size_t(comm.rank())] = failure.empty() ? 0.0f : 1.0f;
  comm.all_reduce(failed.data(), failed.size(), DType::f32);
  int first = -1;
  for (std::size_t r = 0; r < failed.size() && first < 0; ++r) {
    if (failed[r] != 0.0f) first = int(r);
  }
  if (first < 0) return;
  // The reason travels as one byte per fp32 element, which a broadcast copies exactly.
  std::vector<float> reason(kReasonBytes, 0.0f);
  if (comm.rank() == first) {
    // cut_long adds its " ... (N bytes)" after the cut: room for it is left.
    const std::string cut = cut_long(failure, kReasonBytes - 32);
    for (std::size_t i = 0; i < cut.size() && i + 1 < kReasonBytes; ++i)
      reason[i] = float((unsigned char)cut[i]);
  }
  comm.broadcast(reason.data(), reason.size(), DType::f32, first);
  if (comm.size() == 1) throw Error(failure);
  std::string text;
  for (const float c : reason) {
    if (c == 0.0f) break;
    text.push_back(char((unsigned char)c));
  }
  throw Error(what + " failed on rank " + std::to_string(first) + ": " + text);
}

// Writes this rank's shard into `folder` (creating it) and returns its SHA-256.
std::string write_shard(const std::string& folder, zero::Engine& engine, int rank, int ranks,
                        std::uint64_t elements, const std::string& digest) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (!fs::is_directory(folder)) throw Error("cannot create " + folder + ": " + ec.message());
  unsigned char header[kShardHeaderBytes];
  encode_shard_header(header, rank, ranks, elements, digest);
  AtomicFile file((fs::path(folder) / shard_name(rank, ranks)).string());
  Sha256 hash;
  auto write = [&](const void* data, std::size_t bytes) {
    file.write(data, bytes);
    hash.update(data, bytes);
  };
  write(header, kShardHeaderBytes);
  // Chunk by chunk: the master block straight from the engine's buffers, then each slot's
  // through a small staging buffer (8-bit slots are written dequantized). A save holds no copy
  // of the state (a rank under --rank-memory has no room for one).
  const std::vector<zero::Engine::OwnedChunk> chunks = engine.owned_chunks();
  const std::size_t slots = engine.options().rule().row->slots.size();
  std::uint64_t written = 0;
  for (const zero::Engine::OwnedChunk& chunk : chunks) {
    write(chunk.master.data(), chunk.master.size_bytes());
    written += chunk.master.size();
  }
  std::vector<float> staging(std::size_t{1} << 14);
  for (std::size_t k = 0; k < slots; ++k) {
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      const std::size_t n = chunks[c].master.size();
      for (std::size_t from = 0; from < n; from += staging.size()) {
        const std::size_t len = std::min(staging.size(), n - from);
        engine.read_slot(c, k, from, {staging.data(), len});
        write(staging.data(), len * sizeof(float));
      }
      written += n;
    }
  }
  ZERODP_CHECK(written == (1 + slots) * elements);
  file.commit();
  return hash.hex();
}

// A shard as rank 0 learns it from its rank, in fixed-size words so that one all_gather
// carries them all (every rank owns the same number of ranges, some maybe empty): the element
// count, the SHA-256 in four words, then (offset, count) of each owned range.
constexpr std::size_t kShaAt = 1, kRangesAt = 5;

std::vector<std::uint64_t> shard_words(std::uint64_t elements, const std::string& sha,
                                       const std::vector<zero::FlatRange>& ranges) {
  std::vector<std::uint64_t> words(kRangesAt + 2 * ranges.size());
  words[0] = elements;
  for (int i = 0; i < 4; ++i) words[kShaAt + i] = std::stoull(sha.substr(16 * i, 16), nullptr, 16);
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    words[kRangesAt + 2 * i] = ranges[i].offset;
    words[kRangesAt + 2 * i + 1] = ranges[i].count;
  }
  return words;
}

// Collective: every rank's shard_words(), rank after rank.
std::vector<std::uint64_t> gather_shard_words(comm::Communicator& comm,
                                              const std::vector<std::uint64_t>& words) {
  std::vector<std::uint64_t> all(words.size() * comm.size());
  // Moved as bf16 elements, four to a word: the collectives take no 64-bit type.
  comm.all_gather(words.data(), all.data(), words.size() * 4 * comm.size(), DType::bf16);
  return all;
}

// The manifest's entry of shard `rank` from its words; adds its elements to `params`.
nlohmann::json shard_entry(const std::uint64_t* w, std::size_t range_count, int rank, int ranks,
                           std::size_t slots, std::uint64_t& params) {
  char hex[65];
  std::snprintf(hex, sizeof hex, "%016llx%016llx%016llx%016llx", (unsigned long long)w[kShaAt],
                (unsigned long long)w[kShaAt + 1], (unsigned long long)w[kShaAt + 2],
                (unsigned long long)w[kShaAt + 3]);
  nlohmann::json ranges = nlohmann::json::array();
  for (std::size_t i = 0; i < range_count; ++i) {
    const std::uint64_t offset = w[kRangesAt + 2 * i], count = w[kRangesAt + 2 * i + 1];
    if (count > 0) ranges.push_back({offset, count});
    params += count;
  }
  return {{"file", shard_name(rank, ranks)},
          {"bytes", kShardHeaderBytes + shard_bytes_per_element(slots) * w[0]},
          {"elements", w[0]},
          {"sha256", hex},
          {"ranges", ranges}};
}

nlohmann::json manifest_json(const zero::Engine& engine, const zero::EngineState& state, int ranks,
                             const std::string& run_id, nlohmann::json model, nlohmann::json run,
                             const std::vector<std::uint64_t>& all_words, std::size_t range_count) {
  const std::size_t per_rank = all_words.size() / ranks;
  nlohmann::json shards = nlohmann::json::array();
  std::uint64_t params = 0;
  const zero::EngineOptions& o = engine.options();
  const optim::Rule& rule = o.rule();
  for (int r = 0; r < ranks; ++r) {
    shards.push_back(shard_entry(all_words.data() + r * per_rank, range_count, r, ranks,
                                 rule.row->slots.size(), params));
  }
  return {{"format", "zerodp-checkpoint"},
          {"version", kFormatVersion},
          {"run_id", run_id},
          {"model", std::move(model)},
          {"params", params},
          {"stage", stage_number(o.stage)},
          {"ranks", ranks},
          {"precision", std::string(dtype_name(o.precision))},
          {"optimizer", std::string(optim::engine_word(*rule.row))},
          {"bucket_bytes", o.bucket_bytes},
          {"state",
           {{"step", state.step},
            {"samples_done", state.samples_done},
            {"loss_scale", state.loss_scale},
            {"good_steps", state.good_steps},
            {"run_step", state.run_step}}},
          {"run", std::move(run)},
          {"shards", std::move(shards)}};
}

// The manifest goes in last and is made durable with its folder: from then on the checkpoint
// exists.
void write_manifest(const std::string& save_dir, const std::string& folder,
                    const nlohmann::json& manifest) {
  AtomicFile file((fs::path(folder) / kManifestFile).string());
  const std::string text = utf8_dump(manifest, 2) + "\n";
  file.write(text.data(), text.size());
  file.commit();
  fsync_dir(folder);
  fsync_dir(save_dir);
}

// Removes all but the newest `keep` complete checkpoints of this run, `written` (the one just
// completed) always kept; other runs' checkpoints are not this run's to remove.
void prune(const std::string& save_dir, const fs::path& written, const Ownership& owner, int keep) {
  std::vector<fs::path> older;
  for (const Saved& s : complete_checkpoints(save_dir)) {
    if (owner.owns(s.run_id) && s.folder.filename() != written.filename())
      older.push_back(s.folder);
  }
  const std::size_t others = static_cast<std::size_t>(keep - 1);
  for (std::size_t i = 0; i + others < older.size(); ++i) {
    std::error_code ec;
    fs::remove(older[i] / kManifestFile, ec);  // first: a half-removed folder is ignored
    // Only what a save writes: its shards and their temporary files. Anything else someone
    // put there (another run's folder, a file) keeps the folder, and is left as it is.
    std::vector<fs::path> ours;
    for (const auto& entry : fs::directory_iterator(older[i], ec)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_regular_file(ec) && !entry.is_symlink(ec) && name.rfind("rank-", 0) == 0) {
        ours.push_back(entry.path());
      }
    }
    for (const fs::path& f : ours) fs::remove(f, ec);
    fs::remove(older[i], ec);  // fails, harmlessly, when the folder holds anything else
  }
}

// Fault injection for tests: dies by SIGKILL with every shard written and no manifest yet,
// the worst moment for a save to be interrupted, when ZERODP_INJECT_KILL_BEFORE_MANIFEST is
// this step.
void die_here_if_asked(std::int64_t step) {
  if (const char* at = std::getenv("ZERODP_INJECT_KILL_BEFORE_MANIFEST")) {
    if (std::strtoll(at, nullptr, 10) == step) ::raise(SIGKILL);
  }
}

}  // namespace

std::string save(const std::string& save_dir, zero::Engine& engine, comm::Communicator& comm,
                 const std::string& model_config, const std::string& run_record, int keep) {
  ZERODP_CHECK(keep >= 1);
  nlohmann::json model = parse_object(model_config, "the model config");
  nlohmann::json run = parse_object(run_record, "the run record");
  const int rank = comm.rank(), ranks = comm.size();
  // The run writing the manifest holds the folder; the other ranks' processes need not.
  const Ownership owner = rank == 0 ? claimed(save_dir) : Ownership{};
  const zero::EngineState state = engine.state();
  const std::string folder = step_folder(save_dir, state.run_step);
  const std::vector<zero::FlatRange> ranges = engine.owned_ranges();
  std::uint64_t elements = 0;
  for (const zero::FlatRange& r : ranges) elements += r.count;

  const std::string digest = model_digest(model);
  std::string sha;
  const std::string failure =
      failure_of([&] { sha = write_shard(folder, engine, rank, ranks, elements, digest); });
  throw_if_any_failed(comm, failure, "checkpoint " + folder);

  const std::vector<std::uint64_t> all_words =
      gather_shard_words(comm, shard_words(elements, sha, ranges));
  die_here_if_asked(state.run_step);

  std::string manifest_failure;
  if (rank == 0) {
    manifest_failure = failure_of([&] {
      write_manifest(save_dir, folder,
                     manifest_json(engine, state, ranks, owner.run_id, std::move(model),
                                   std::move(run), all_words, ranges.size()));
      prune(save_dir, folder, owner, keep);
    });
  }
  throw_if_any_failed(comm, manifest_failure, "checkpoint " + folder);
  return folder;
}

}  // namespace zerodp::checkpoint
