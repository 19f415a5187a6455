// Reading a checkpoint back: its manifest.json parsed and checked field by field and against
// its shards, before anything in it is trusted (include/zerodp/checkpoint/checkpoint.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoint/shard_file.h"
#include "zerodp/checkpoint/checkpoint.h"

namespace zerodp::checkpoint {

// Where a flat range of the model lies in the shards.
struct Placement {
  std::uint64_t offset, count;  // in the flat layout
  int shard;
  std::uint64_t local;  // element index in the shard's blocks
};

// A checkpoint whose manifest passed every check, with its shards open.
struct Contents {
  Manifest manifest;
  nlohmann::json model;           // manifest.model, parsed, to compare configs field by field
  std::vector<ShardFile> shards;  // in rank order
  std::vector<Placement> index;   // sorted by offset; covers [0, params) once
};

// Reads the checkpoint in `folder`. Throws Error naming its manifest.json and what is wrong:
// unreadable, not JSON, of another format or version, a field missing or out of range, or a
// shard missing, truncated, corrupted or not the one the manifest names.
Contents read_checkpoint(const std::string& folder);

// The run id in a complete checkpoint's manifest, read without checking the rest: empty when
// the manifest has none (written before run ids) or cannot be read, so that such a checkpoint
// counts as another run's.
std::string run_id_of(const std::string& folder);

// A run id as manifests hold it: 32 lowercase hex digits.
bool is_run_id(const std::string& text);

}  // namespace zerodp::checkpoint
