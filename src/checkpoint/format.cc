#include "checkpoint/format.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "zerodp/checkpoint/checkpoint.h"
#include "zerodp/common/error.h"
#include "zerodp/common/sha256.h"

namespace zerodp::checkpoint {
namespace fs = std::filesystem;
namespace {

// Header fields after the magic: version, rank and ranks as uint32 from byte 8, the element
// count as uint64 at byte 24, the model digest's 32 bytes from byte 32 (zeros before digests).
constexpr std::size_t kFieldsAt = 8, kElementsAt = 24, kDigestAt = 32, kDigestBytes = 32;

void digest_bytes(const std::string& hex, unsigned char* out) {
  for (std::size_t i = 0; i < kDigestBytes; ++i)
    out[i] = static_cast<unsigned char>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
}

}  // namespace

std::string shard_name(int rank, int ranks) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "rank-%05d-of-%05d.bin", rank, ranks);
  return buf;
}

std::string step_folder(const std::string& save_dir, std::int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08lld", static_cast<long long>(step));
  return (fs::path(save_dir) / buf).string();
}

bool is_complete(const fs::path& folder) {
  return folder.filename().string().rfind("step-", 0) == 0 && fs::exists(folder / kManifestFile);
}

std::string model_digest(const nlohmann::json& model) {
  nlohmann::json weights = model;
  weights.erase("data");
  weights.erase("checkpoint_activations");
  weights.erase("compute");
  const std::string text =
      weights.dump(-1, ' ', false,
                   nlohmann::json::error_handler_t::replace);  // keys sorted: one text per config
  return sha256_hex(text.data(), text.size());
}

void encode_shard_header(unsigned char (&header)[kShardHeaderBytes], int rank, int ranks,
                         std::uint64_t elements, const std::string& model_digest) {
  std::memset(header, 0, kShardHeaderBytes);
  std::memcpy(header, kShardMagic, sizeof kShardMagic);
  const std::uint32_t fields[3] = {kFormatVersion, std::uint32_t(rank), std::uint32_t(ranks)};
  std::memcpy(header + kFieldsAt, fields, sizeof fields);
  std::memcpy(header + kElementsAt, &elements, sizeof elements);
  digest_bytes(model_digest, header + kDigestAt);
}

void check_shard_header(int fd, const std::string& file, std::size_t index, std::size_t count,
                        std::uint64_t elements, const std::string& model_digest) {
  unsigned char header[kShardHeaderBytes];
  if (::pread(fd, header, kShardHeaderBytes, 0) != static_cast<ssize_t>(kShardHeaderBytes))
    throw Error("cannot read the header of " + file + ": " + errno_text());
  std::uint32_t fields[3];
  std::uint64_t stored;
  std::memcpy(fields, header + kFieldsAt, sizeof fields);
  std::memcpy(&stored, header + kElementsAt, sizeof stored);
  if (std::memcmp(header, kShardMagic, sizeof kShardMagic) != 0 || fields[0] != kFormatVersion ||
      fields[1] != index || fields[2] != count || stored != elements) {
    throw Error("shard " + file + ": its header is not that of shard " + std::to_string(index) +
                " of " + std::to_string(count) + " with " + std::to_string(elements) + " elements");
  }
  unsigned char expected[kDigestBytes], none[kDigestBytes] = {};
  digest_bytes(model_digest, expected);
  if (std::memcmp(header + kDigestAt, none, kDigestBytes) != 0 &&
      std::memcmp(header + kDigestAt, expected, kDigestBytes) != 0) {
    throw UsageError("shard " + file +
                     " holds the weights of another model config than \"model\" " +
                     "(the manifest's model was changed after the save)");
  }
}

}  // namespace zerodp::checkpoint
