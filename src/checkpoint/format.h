// The on-disk layout of a checkpoint, shared by save.cc (which writes it) and manifest.cc
// (which reads it back): folder and file names, and the shard header. See
// include/zerodp/checkpoint/checkpoint.h for the whole layout.
#pragma once

#include "zerodp/common/error.h"
#include "zerodp/common/file.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace zerodp::checkpoint {

// A JSON value of a manifest as a message shows it: its JSON text (escaped by JSON), cut when long
// (common/error.h's cut_long()), invalid UTF-8 replaced rather than thrown on.
inline std::string shown_json(const nlohmann::json& v) {
  return cut_long(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

inline constexpr char kShardMagic[8] = {'Z', 'E', 'R', 'O', 'D', 'P', 'S', 'H'};
inline constexpr std::size_t kShardHeaderBytes = 64;
// Each element of a shard holds fp32 values: the master and each of the optimizer's slots
// (AdamW: m and v, 12 bytes; Lion and SGD with momentum: 8; SGD: 4).
inline constexpr std::uint64_t shard_bytes_per_element(std::size_t slots) {
  return 4 * (1 + std::uint64_t(slots));
}
inline constexpr std::uint64_t kMaxShardBytesPerElement = shard_bytes_per_element(2);
inline constexpr const char* kManifestFile = "manifest.json";

// "rank-00001-of-00004.bin"
std::string shard_name(int rank, int ranks);
// SAVE_DIR/step-00000100
std::string step_folder(const std::string& save_dir, std::int64_t step);
// A step-* folder with a manifest: the manifest is written last, so only a complete save has
// one, and pruning removes it first.
bool is_complete(const std::filesystem::path& folder);

// The SHA-256 (hex) of a model config without the keys the weights do not depend on ("data",
// "checkpoint_activations", "compute"). Each shard's header holds it, so that a manifest whose
// model was changed afterwards is refused: another head count has the same parameter count, and
// would otherwise be read silently as another model.
std::string model_digest(const nlohmann::json& model);

// The header save() writes at the start of the shard of `rank` of `ranks`, with the
// model_digest() of the model it holds.
void encode_shard_header(unsigned char (&header)[kShardHeaderBytes], int rank, int ranks,
                         std::uint64_t elements, const std::string& model_digest);
// Throws Error unless the header of the open shard `fd` is the one save() wrote for shard
// `index` of `count` with `elements` elements of the model of `model_digest`: a shard copied in
// from another checkpoint, or a manifest's model edited, is named, not read. A header without a
// digest (zeros: written before digests) is not compared.
void check_shard_header(int fd, const std::string& file, std::size_t index, std::size_t count,
                        std::uint64_t elements, const std::string& model_digest);

}  // namespace zerodp::checkpoint
