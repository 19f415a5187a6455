#include "zerodp/run/agreement.h"

#include <cstdint>
#include <map>
#include <span>

#include "zerodp/common/error.h"
#include "zerodp/data/text_data.h"

namespace zerodp::run {
namespace {

// A digest as four fp32 values of 16 bits each: fp32 holds integers up to 2^24 exactly, and a
// broadcast copies them bit for bit.
constexpr std::size_t kDigestFloats = 4;
// The bytes of a value each rank shows in the message, one byte per fp32.
constexpr std::size_t kShownBytes = 96;

std::uint64_t digest(const RunSetting& s) {
  const std::string text = s.name + '\0' + (s.key.empty() ? s.value : s.key);
  return data::fnv1a64(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

std::vector<float> packed_digests(const RunSettings& settings) {
  std::vector<float> out;
  for (const RunSetting& s : settings) {
    const std::uint64_t d = digest(s);
    for (std::size_t i = 0; i < kDigestFloats; ++i) out.push_back(float((d >> (16 * i)) & 0xffff));
  }
  return out;
}

// Every rank's value of one setting, gathered as bytes (truncated to kShownBytes).
std::vector<std::string> gather_values(comm::Communicator& comm, const std::string& mine) {
  const std::size_t n = static_cast<std::size_t>(comm.size());
  std::vector<float> mine_f(kShownBytes, 0.0f), all(kShownBytes * n);
  const std::string shown =
      mine.size() > kShownBytes ? mine.substr(0, kShownBytes - 3) + "..." : mine;
  for (std::size_t i = 0; i < shown.size(); ++i)
    mine_f[i] = float(static_cast<unsigned char>(shown[i]));
  comm.all_gather(mine_f.data(), all.data(), all.size(), DType::f32);
  std::vector<std::string> values(n);
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < kShownBytes && all[r * kShownBytes + i] != 0.0f; ++i)
      values[r] += static_cast<char>(static_cast<unsigned char>(all[r * kShownBytes + i]));
  }
  return values;
}

// "rank 3", "ranks 0, 2", "ranks 0-3".
std::string rank_list(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (i > 0) out += ", ";
    out += std::to_string(ranks[i]);
    if (j > i) out += (j == i + 1 ? ", " : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string disagreement_line(const std::string& name, const std::vector<std::string>& values) {
  // Groups in order of their lowest rank, so rank 0's value comes first.
  std::vector<std::string> order;
  std::map<std::string, std::vector<int>> ranks_of;
  for (std::size_t r = 0; r < values.size(); ++r) {
    if (!ranks_of.count(values[r])) order.push_back(values[r]);
    ranks_of[values[r]].push_back(static_cast<int>(r));
  }
  std::string line = "ranks disagree on " + name + ":";
  for (std::size_t g = 0; g < order.size(); ++g) {
    const std::vector<int>& ranks = ranks_of[order[g]];
    line += (g ? ", " : " ") + rank_list(ranks) + (ranks.size() == 1 ? " runs " : " run ") +
            (order[g].empty() ? "(none)" : escape_controls(order[g]));
  }
  if (order.size() == 1) line += " (the same text, other bytes)";
  return line;
}

void check_ranks_agree(comm::Communicator& comm, const RunSettings& settings) {
  const std::vector<float> mine = packed_digests(settings);
  std::vector<float> root = mine;
  if (!root.empty()) comm.broadcast(root.data(), root.size(), DType::f32, 0);
  // differ[i]: how many ranks run setting i otherwise than rank 0; the same on every rank.
  std::vector<float> differ(settings.size(), 0.0f);
  for (std::size_t i = 0; i < settings.size(); ++i) {
    for (std::size_t k = 0; k < kDigestFloats; ++k) {
      if (mine[i * kDigestFloats + k] != root[i * kDigestFloats + k]) differ[i] = 1.0f;
    }
  }
  if (!differ.empty()) comm.all_reduce(differ.data(), differ.size(), DType::f32);
  for (std::size_t i = 0; i < settings.size(); ++i) {
    if (differ[i] == 0.0f) continue;
    throw UsageErrorOnEveryRank(
        disagreement_line(settings[i].name, gather_values(comm, settings[i].value)));
  }
}

std::vector<std::uint64_t> gather_words(comm::Communicator& comm,
                                        const std::vector<std::uint64_t>& mine) {
  std::vector<std::uint64_t> all(mine.size() * std::size_t(comm.size()));
  comm.all_gather(mine.data(), all.data(), all.size() * 4, DType::bf16);
  return all;
}

}  // namespace zerodp::run
