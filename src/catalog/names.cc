#include "zerodp/catalog/names.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace zerodp::catalog {

namespace {

bool separator(char c) {
  return c == '-' || c == '_' || c == '.' || c == ' ' || c == '/';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

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
    if (!is_digit(c)) continue;
    while (j < candidate.size() && candidate[j] != c) ++j;
    if (j == candidate.size()) return false;
    ++j;
  }
  return true;
}

// Whether `wanted` (normalised) is a run of whole words of `candidate`: "a6000" of
// "rtx-a6000", "llama318binstruct" of "meta-llama/Llama-3.1-8B-Instruct", not "a60" of either.
bool holds_words(std::string_view candidate, const std::string& wanted) {
  std::vector<std::string> words(1);
  for (const char c : candidate) {
    if (separator(c)) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    words.back().push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  for (std::size_t first = 0; first < words.size(); ++first) {
    std::string run;
    for (std::size_t last = first; last < words.size() && run.size() < wanted.size(); ++last) {
      run += words[last];
      if (run == wanted) return true;
    }
  }
  return false;
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
  if (typed.size() > kMaxTypedName) return {};
  const std::string wanted = normalised_name(typed);
  if (wanted.size() >= 2) {
    for (const std::string_view c : candidates) {
      if (normalised_name(c).rfind(wanted, 0) == 0) return std::string(c);
    }
  }
  // A model number typed alone names the one candidate that carries it; a number that several
  // carry equally ("80gb": the A100's, the A800's, the H100's) names none of them.
  if (wanted.size() >= 2 && std::any_of(wanted.begin(), wanted.end(), is_digit)) {
    std::string_view shortest;
    bool tied = false;
    for (const std::string_view c : candidates) {
      if (!holds_words(c, wanted)) continue;
      if (shortest.empty() || c.size() < shortest.size()) {
        shortest = c;
        tied = false;
      } else if (c.size() == shortest.size()) {
        tied = true;
      }
    }
    if (!shortest.empty() && !tied) return std::string(shortest);
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
