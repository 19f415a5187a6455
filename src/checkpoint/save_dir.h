// What a save dir's claim (SaveDir, include/zerodp/checkpoint/checkpoint.h) tells save(): whose
// checkpoints the folder holds and which of them this run may prune.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace zerodp::checkpoint {

// The run that claimed a save dir in this process.
struct Ownership {
  std::string run_id;
  // The run resumed a checkpoint written before run ids: the folder's checkpoints without an
  // id are its own too.
  bool adopts_unnamed = false;
  bool owns(const std::string& checkpoint_run_id) const {
    return checkpoint_run_id == run_id || (adopts_unnamed && checkpoint_run_id.empty());
  }
};

// The claim this process holds on save_dir. ZERODP_CHECK when there is none: writing a folder
// without its lock is a bug of the caller.
Ownership claimed(const std::string& save_dir);

// A complete checkpoint of a save dir and the run it belongs to (empty: no run id).
struct Saved {
  std::filesystem::path folder;
  std::string run_id;
};
// The complete checkpoints under save_dir, oldest first.
std::vector<Saved> complete_checkpoints(const std::string& save_dir);

}  // namespace zerodp::checkpoint
