// Names a user types for a catalogue entry (a model, a GPU, a Hugging Face Hub id), and the
// "did you mean" for one that is not there.
//
// Contract: pure. Names compare as typed loosely: lower case, without '-', '_', '.' and spaces
// ("A100_80GB" is "a100-80gb", "Llama3-8B" is "llama-3-8b"; a Hub id keeps its '/').
// closest_name() reads at most kMaxTypedName bytes of what was typed (longer is no name of
// ours: every candidate is shorter, and the edit distance it computes is quadratic in the
// length) and returns one of the candidates, as spelt there, or "".
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace zerodp::catalog {

// Room for a Hub id (an organisation and a repository name of up to 96 characters each on the
// Hub; the longest the catalogue holds has 51).
inline constexpr std::size_t kMaxTypedName = 128;

std::string normalised_name(std::string_view name);

// The candidate `typed` most likely means, by the first rule that finds one:
//  1. the first that starts with it, at least two characters typed ("a100" -> "a100-40gb");
//  2. one that holds it as a run of whole words, '-', '_', '.', ' ' and '/' separating words,
//     when it holds a digit: a model number ("a6000" -> "rtx-a6000", "4090" -> "rtx-4090",
//     "QwQ-32B" -> "Qwen/QwQ-32B"); the shortest such candidate, and none when two tie;
//  3. the closest within two edits, a digit never replaced by another ("gpt5" is not "gpt2",
//     "rtx-4080" is not "rtx-4090");
// else "".
std::string closest_name(std::string_view typed, std::span<const std::string_view> candidates);

}  // namespace zerodp::catalog
