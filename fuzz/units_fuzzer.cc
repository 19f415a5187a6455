// Fuzz target: the number and unit parsers of zerodp/common/units.h, on any text.
//
// Properties, for every input:
//  - each parser returns a value or throws UsageError whose one line names the flag; nothing
//    else escapes, nothing crashes, no undefined behaviour (ASan + UBSan);
//  - values are in the parser's range: counts and bytes positive unless zero is allowed,
//    seconds and bandwidths finite and positive, fractions in [0, 1];
//  - the parsers agree where their forms overlap: a whole number is the same count, and the
//    same number of bytes with "B";
//  - round trips: a count or byte size printed as plain digits ("7500000000", "...B", and in
//    the largest binary unit dividing it, "24GiB") parses back to itself, and format_count()
//    parses back exactly when its suffix divides the count, else within its three digits.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "zerodp/common/error.h"
#include "zerodp/common/units.h"

namespace {

using namespace zerodp;
using namespace zerodp::units;

constexpr std::string_view kFlag = "--fuzzed";

[[noreturn]] void fail(const char* what, std::string_view text, std::uint64_t value = 0) {
  std::fprintf(stderr, "units fuzzer: %s (text '%.*s', value %llu)\n", what,
               static_cast<int>(text.size()), text.data(), static_cast<unsigned long long>(value));
  std::abort();
}

// Runs one parser: its value, or nullopt after a well-formed UsageError.
template <typename F>
auto attempt(F parse, std::string_view text) -> std::optional<decltype(parse(text))> {
  try {
    return parse(text);
  } catch (const UsageError& e) {
    const std::string_view message = e.what();
    if (message.rfind(kFlag, 0) != 0) fail("UsageError that does not name the flag", text);
    if (message.find('\n') != std::string_view::npos) fail("UsageError of several lines", text);
    return std::nullopt;
  }
}

void check_round_trips(std::uint64_t value) {
  const std::string digits = std::to_string(value);
  if (parse_count(digits, kFlag, Zero::allowed) != value) fail("count round trip", digits, value);
  if (parse_whole(digits, kFlag, Zero::allowed) != value) fail("whole round trip", digits, value);
  if (parse_bytes(digits + "B", kFlag, Zero::allowed) != value) {
    fail("bytes round trip", digits, value);
  }
  static constexpr std::pair<const char*, int> kBinary[] = {
      {"PiB", 50}, {"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}};
  for (const auto& [unit, shift] : kBinary) {
    if (value == 0 || value % (std::uint64_t(1) << shift) != 0) continue;
    const std::string text = std::to_string(value >> shift) + unit;
    if (parse_bytes(text, kFlag) != value) fail("binary bytes round trip", text, value);
    break;
  }

  const std::string formatted = format_count(value);
  const std::uint64_t back = parse_count(formatted, kFlag, Zero::allowed);
  // format_count() is exact when one of its suffixes divides the count with at most two
  // decimals; otherwise three significant digits, at most half a unit of the last one off.
  std::uint64_t scale = 1;  // of the suffix printed: the largest not above the count
  for (std::uint64_t s : {1'000ull, 1'000'000ull, 1'000'000'000ull, 1'000'000'000'000ull}) {
    if (value >= s) scale = s;
  }
  const bool exact = scale == 1 || value % (scale / 100) == 0;
  const double error = std::fabs(static_cast<double>(back) - static_cast<double>(value));
  if (exact ? back != value : error > 0.005 * static_cast<double>(value) + 1.0) {
    fail("format_count() does not parse back", formatted, value);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  const auto count = attempt([](auto t) { return parse_count(t, kFlag, Zero::allowed); }, text);
  const auto positive = attempt([](auto t) { return parse_count(t, kFlag); }, text);
  if (positive && (*positive == 0 || positive != count)) fail("parse_count and Zero", text);
  if (count && !positive && *count != 0) fail("parse_count rejects a positive count", text);

  const auto whole = attempt([](auto t) { return parse_whole(t, kFlag, Zero::allowed); }, text);
  if (whole && whole != count) fail("parse_whole and parse_count disagree", text, *whole);

  const auto bytes = attempt([](auto t) { return parse_bytes(t, kFlag, Zero::allowed); }, text);
  if (count && text.find_first_not_of("0123456789") == std::string_view::npos) {
    const std::string with_unit = std::string(text) + "B";
    if (parse_bytes(with_unit, kFlag, Zero::allowed) != *count) {
      fail("digits and digits+B disagree", text, *count);
    }
  }
  attempt([](auto t) { return parse_bytes(t, kFlag); }, text);

  if (const auto seconds = attempt([](auto t) { return parse_seconds(t, kFlag); }, text)) {
    if (!std::isfinite(*seconds) || *seconds <= 0) fail("seconds out of range", text);
    // Printed whole, with its unit: never cut off by the formatter's buffer.
    const std::string printed = format_seconds(*seconds);
    if (!(printed.ends_with(" s") || printed.ends_with(" ms") || printed.ends_with(" us"))) {
      fail("format_seconds() cut short", printed);
    }
  }
  if (const auto rate = attempt([](auto t) { return parse_bandwidth(t, kFlag); }, text)) {
    if (!std::isfinite(*rate) || *rate <= 0) fail("bandwidth out of range", text);
  }
  if (const auto fraction = attempt([](auto t) { return parse_fraction(t, kFlag); }, text)) {
    if (!(*fraction >= 0 && *fraction <= 1)) fail("fraction out of range", text);
    if (!format_percent(*fraction).ends_with(" %")) fail("format_percent() cut short", text);
  }

  if (bytes) {
    for (bool binary : {false, true}) {
      if (!format_bytes(*bytes, binary).ends_with("B")) fail("format_bytes() cut short", text);
    }
  }
  if (count) check_round_trips(*count);
  if (bytes) check_round_trips(*bytes);
  // The input's first 8 bytes as a number, so the round trips also see every magnitude.
  if (size >= 8) {
    std::uint64_t raw = 0;
    for (int i = 0; i < 8; ++i) raw = raw << 8 | data[i];
    check_round_trips(raw);
  }
  return 0;
}
