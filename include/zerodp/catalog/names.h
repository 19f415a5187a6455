// Names a user types for a catalogue entry (a model, a GPU), and the "did you mean" for one
// that is not there.
//
// Contract: pure. Names compare as typed loosely: lower case, without '-', '_', '.' and spaces
// ("A100_80GB" is "a100-80gb", "Llama3-8B" is "llama-3-8b"). closest_name() reads at most 64
// bytes of what was typed (longer is no name of ours) and returns a candidate or "".
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace zerodp::catalog {

std::string normalised_name(std::string_view name);

// The candidate `typed` most likely means: the first that starts with it (at least two
// characters typed: "a100" -> "a100-40gb"), else the closest within two edits, a digit never
// replaced by another ("gpt5" is not "gpt2"); else "".
std::string closest_name(std::string_view typed, std::span<const std::string_view> candidates);

}  // namespace zerodp::catalog
