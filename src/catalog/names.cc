#include "zerodp/catalog/names.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace zerodp::catalog {

namespace {

// Levenshtein distance, one row at a time.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// Whether the digits typed appear, in order, among the candidate's: a digit left out is a
// typo ("rtx-490"), a digit changed is another model or card ("gpt5" is not "gpt2", nor
// "rtx-4080" an "rtx-4090").
bool digits_kept(const std::string& typed, const std::string& candidate) {
  std::size_t j = 0;
  for (const char c : typed) {
    if (c < '0' || c > '9') continue;
    while (j < candidate.size() && candidate[j] != c) ++j;
    if (j == candidate.size()) return false;
    ++j;
  }
  return true;
}

}  // namespace

std::string normalised_name(std::string_view name) {
  std::string out;
  for (const char c : name) {
    if (c == '-' || c == '_' || c == '.' || c == ' ') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

std::string closest_name(std::string_view typed, std::span<const std::string_view> candidates) {
  // The distance is quadratic in the lengths: a long text is no name of ours anyway.
  if (typed.size() > 64) return {};
  const std::string wanted = normalised_name(typed);
  if (wanted.size() >= 2) {
    for (const std::string_view c : candidates) {
      if (normalised_name(c).rfind(wanted, 0) == 0) return std::string(c);
    }
  }
  std::string_view best;
  std::size_t best_distance = 3;
  for (const std::string_view c : candidates) {
    const std::string name = normalised_name(c);
    const std::size_t d = edit_distance(wanted, name);
    if (d < best_distance && digits_kept(wanted, name)) best = c, best_distance = d;
  }
  return std::string(best);
}

}  // namespace zerodp::catalog
