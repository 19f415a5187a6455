#include "zerodp/common/units.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <span>

#include "zerodp/common/error.h"

namespace zerodp::units {
namespace {

using u128 = unsigned __int128;

// A decimal number split into its digits and a power of ten: value = mantissa * 10^exponent.
// Only the plain form is accepted: digits, an optional fraction, an optional e-exponent.
struct Decimal {
  u128 mantissa = 0;
  int exponent = 0;
  std::string_view suffix;  // whatever follows the number
};

std::optional<Decimal> split_decimal(std::string_view text) {
  Decimal d;
  std::size_t i = 0;
  int digits = 0;
  auto push_digit = [&](char c) {
    // Beyond 36 significant digits the value cannot be a meaningful 64-bit count anyway;
    // keep the magnitude, drop the precision, and let the range check reject it.
    if (d.mantissa < (u128(1) << 120)) {
      d.mantissa = d.mantissa * 10 + static_cast<unsigned>(c - '0');
    } else {
      ++d.exponent;
    }
  };
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') push_digit(text[i++]), ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      push_digit(text[i++]);
      --d.exponent;
      ++digits;
    }
  }
  if (digits == 0) return std::nullopt;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E') && i + 1 < text.size()) {
    std::size_t j = i + 1;
    bool negative = false;
    if (text[j] == '+' || text[j] == '-') negative = text[j++] == '-';
    int e = 0, e_digits = 0;
    while (j < text.size() && text[j] >= '0' && text[j] <= '9') {
      if (e < 10000) e = e * 10 + (text[j] - '0');
      ++j, ++e_digits;
    }
    if (e_digits > 0) {
      d.exponent += negative ? -e : e;
      i = j;
    }
  }
  d.suffix = text.substr(i);
  return d;
}

struct Multiplier {
  std::string_view suffix;
  int power_of_ten;
  int power_of_two;
};

// value * 10^p10 * 2^p2 as an exact integer, or nullopt when it is not whole or exceeds 64 bits.
std::optional<std::uint64_t> exact_value(const Decimal& d, int p10, int p2) {
  constexpr u128 kLimit = std::numeric_limits<std::uint64_t>::max();
  u128 value = d.mantissa;
  int e = d.exponent + p10;
  for (int k = 0; k < p2; ++k) {
    value <<= 1;
    if (value > (kLimit << 40)) return std::nullopt;
  }
  for (; e > 0; --e) {
    if (value == 0) break;
    value *= 10;
    if (value > (kLimit << 40)) return std::nullopt;
  }
  for (; e < 0; ++e) {
    if (value % 10 != 0) return std::nullopt;
    value /= 10;
  }
  if (value > kLimit) return std::nullopt;
  return static_cast<std::uint64_t>(value);
}

[[noreturn]] void reject(std::string_view flag, std::string_view expected, std::string_view text,
                         std::string_view why = {}) {
  std::string message =
      std::string(flag) + ": expected " + std::string(expected) + ", got " + shown(text);
  if (!why.empty()) message += " (" + std::string(why) + ")";
  throw UsageError(message);
}

// What a value that is not a whole number of the unit becomes: refused, or (a capacity a
// report prints rounded, "23.65GiB") rounded down to whole bytes.
enum class Fraction { rejected, floored };

// `d` * 10^p10 * 2^p2 rounded down to a whole number, or nullopt past 64 bits. Called once
// exact_value() has refused: a value with decimals below the unit, or one too large.
std::optional<std::uint64_t> floored_value(Decimal d, int p10, int p2) {
  constexpr u128 kLimit = std::numeric_limits<std::uint64_t>::max();
  int e = d.exponent + p10;
  if (e >= 0) return std::nullopt;  // whole, so exact_value() refused it as too large
  // A decimal past the 20th moves the value by less than 2^50 / 10^20 < 10^-5 of a byte.
  while (e < -20) d.mantissa /= 10, ++e;
  u128 pow10 = 1;
  for (int i = 0; i < -e; ++i) pow10 *= 10;  // at most 10^20 < 2^67
  // q * 2^p2 + floor(r * 2^p2 / 10^-e), where r * 2^p2 < 2^67 * 2^50 fits in 128 bits.
  const u128 q = d.mantissa / pow10, r = d.mantissa % pow10;
  if (q > (kLimit >> p2)) return std::nullopt;
  const u128 v = (q << p2) + (r << p2) / pow10;
  if (v > kLimit) return std::nullopt;
  return static_cast<std::uint64_t>(v);
}

// How a unit is matched: exactly, or (sizes in bytes) in any case and after spaces, so that
// "80gb" and "80 GB" read as 80GB, as people and other tools write them.
enum class Spelling { exact, loose };

bool same_unit(std::string_view given, std::string_view unit, Spelling spelling) {
  if (spelling == Spelling::exact) return given == unit;
  while (!given.empty() && given.front() == ' ') given.remove_prefix(1);
  if (given.size() != unit.size()) return false;
  for (std::size_t i = 0; i < unit.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
    if (lower(given[i]) != lower(unit[i])) return false;
  }
  return true;
}

std::uint64_t parse_with_suffixes(std::string_view text, std::string_view flag, Zero zero,
                                  std::string_view expected,
                                  std::span<const Multiplier> multipliers,
                                  Fraction fraction = Fraction::rejected,
                                  Spelling spelling = Spelling::exact) {
  auto d = split_decimal(text);
  if (!d) reject(flag, expected, text);
  for (const Multiplier& m : multipliers) {
    if (!same_unit(d->suffix, m.suffix, spelling)) continue;
    auto value = exact_value(*d, m.power_of_ten, m.power_of_two);
    if (!value && fraction == Fraction::floored) {
      value = floored_value(*d, m.power_of_ten, m.power_of_two);
    }
    if (!value) {
      // Tell apart "too large" from "not whole": the user fixes them differently.
      Decimal whole = *d;
      while (whole.exponent < 0) whole.mantissa /= 10, ++whole.exponent;
      if (!exact_value(whole, m.power_of_ten, m.power_of_two)) {
        reject(flag, expected, text, "does not fit in 64 bits");
      }
      reject(flag, expected, text, "not a whole number");
    }
    if (*value == 0 && zero == Zero::rejected) reject(flag, expected, text, "must be positive");
    return *value;
  }
  const bool blank = d->suffix.find_first_not_of(' ') == std::string_view::npos;
  reject(flag, expected, text, blank ? "missing unit" : "unknown unit");
}

double parse_with_units(std::string_view text, std::string_view flag, std::string_view expected,
                        std::initializer_list<std::pair<std::string_view, double>> units) {
  auto d = split_decimal(text);
  if (!d) reject(flag, expected, text);
  for (const auto& [suffix, scale] : units) {
    if (d->suffix != suffix) continue;
    std::string number(text.substr(0, text.size() - suffix.size()));
    double value = std::strtod(number.c_str(), nullptr) * scale;
    if (!std::isfinite(value)) reject(flag, expected, text, "out of range");
    if (value <= 0) reject(flag, expected, text, "must be positive");
    return value;
  }
  reject(flag, expected, text, d->suffix.empty() ? "missing unit" : "unknown unit");
}

std::uint64_t parse_with_suffixes(std::string_view text, std::string_view flag, Zero zero,
                                  std::string_view expected,
                                  std::initializer_list<Multiplier> multipliers) {
  return parse_with_suffixes(text, flag, zero, expected,
                             std::span<const Multiplier>(multipliers.begin(), multipliers.size()));
}

// The units of a size in bytes, decimal and binary, as parse_bytes() and parse_capacity() read
// them (Spelling::loose: any case, spaces before). A bare K, M, G, T or P is decimal, as
// `80G` means 80GB to Kubernetes and to the planner's counts; Ki ... Pi are binary.
constexpr Multiplier kByteUnits[] = {
    {"B", 0, 0},    {"KB", 3, 0},   {"MB", 6, 0},   {"GB", 9, 0},   {"TB", 12, 0}, {"PB", 15, 0},
    {"K", 3, 0},    {"M", 6, 0},    {"G", 9, 0},    {"T", 12, 0},   {"P", 15, 0},  {"KiB", 0, 10},
    {"MiB", 0, 20}, {"GiB", 0, 30}, {"TiB", 0, 40}, {"PiB", 0, 50}, {"Ki", 0, 10}, {"Mi", 0, 20},
    {"Gi", 0, 30},  {"Ti", 0, 40},  {"Pi", 0, 50}};

}  // namespace

std::uint64_t parse_count(std::string_view text, std::string_view flag, Zero zero) {
  return parse_with_suffixes(
      text, flag, zero, "a count such as 1e9, 7.5B, 175B or 50M",
      {{"", 0, 0}, {"K", 3, 0}, {"k", 3, 0}, {"M", 6, 0}, {"B", 9, 0}, {"G", 9, 0}, {"T", 12, 0}});
}

namespace {
// A whole number is written as digits or as a count is (1e3, 2.5e3), with nothing after it.
bool whole_number_form(std::string_view text) {
  const auto d = split_decimal(text);
  return d && d->suffix.empty();
}
}  // namespace

std::uint64_t parse_whole(std::string_view text, std::string_view flag, Zero zero) {
  const std::string_view expected = "a whole number such as 4";
  if (!whole_number_form(text)) reject(flag, expected, text);
  return parse_with_suffixes(text, flag, zero, expected, {{"", 0, 0}});
}

std::uint64_t parse_whole_in(std::string_view text, std::string_view flag, std::uint64_t min,
                             std::uint64_t max) {
  const std::string expected =
      "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  if (!whole_number_form(text)) reject(flag, expected, text);
  const Zero zero = min == 0 ? Zero::allowed : Zero::rejected;
  std::uint64_t value = 0;
  try {
    value = parse_with_suffixes(text, flag, zero, expected, {{"", 0, 0}});
  } catch (const UsageError&) {
    reject(flag, expected, text);  // beyond 64 bits: out of range like any other
  }
  if (value < min || value > max) reject(flag, expected, text);
  return value;
}

std::uint64_t parse_tokens(std::string_view text, std::string_view flag, std::uint64_t max) {
  std::string expected = "a whole number of tokens such as 4096 or 4k (k = 1024)";
  if (max != UINT64_MAX) expected += ", at most " + std::to_string(max);
  const bool k = !text.empty() && (text.back() == 'k' || text.back() == 'K');
  const std::string_view number = k ? text.substr(0, text.size() - 1) : text;
  if (k && (number.empty() || number.find_first_not_of("0123456789") != number.npos)) {
    reject(flag, expected, text);
  }
  const auto d = split_decimal(number);
  if (!d || !d->suffix.empty()) reject(flag, expected, text);
  const int p2 = k ? 10 : 0;
  const std::optional<std::uint64_t> value = exact_value(*d, 0, p2);
  if (!value) {
    Decimal whole = *d;
    while (whole.exponent < 0) whole.mantissa /= 10, ++whole.exponent;
    reject(flag, expected, text,
           exact_value(whole, 0, p2) ? "not a whole number" : "does not fit in 64 bits");
  }
  if (*value == 0) reject(flag, expected, text, "must be positive");
  if (*value > max) reject(flag, expected, text);
  return *value;
}

std::uint64_t parse_bytes(std::string_view text, std::string_view flag, Zero zero) {
  return parse_with_suffixes(text, flag, zero, "a size such as 80GB, 24GiB or 512MB", kByteUnits,
                             Fraction::rejected, Spelling::loose);
}

std::uint64_t parse_capacity(std::string_view text, std::string_view flag) {
  return parse_with_suffixes(text, flag, Zero::rejected, "a size such as 80GB, 24GiB or 23.65GiB",
                             kByteUnits, Fraction::floored, Spelling::loose);
}

double parse_seconds(std::string_view text, std::string_view flag) {
  return parse_with_units(
      text, flag, "a duration such as 10s, 250ms or 2min",
      {{"", 1.0}, {"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"min", 60.0}, {"h", 3600.0}});
}

double parse_seconds_in(std::string_view text, std::string_view flag, double min, double max) {
  auto plain = [](double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%gs", seconds);
    return std::string(text);
  };
  const std::string expected =
      "a duration from " + plain(min) + " to " + plain(max) + " such as 10s, 250ms or 2min";
  double value = 0;
  try {
    value = parse_seconds(text, flag);
  } catch (const UsageError&) {
    reject(flag, expected, text);
  }
  if (!(value >= min && value <= max)) reject(flag, expected, text);
  return value;
}

double parse_bandwidth(std::string_view text, std::string_view flag) {
  // Bit rates as links and tc(8) name them: 1 Mbit/s = 125 KB/s.
  return parse_with_units(text, flag, "a bandwidth such as 300GB/s, 25GiB/s or 200Mbit/s",
                          {{"B/s", 1.0},
                           {"Kbit/s", 125.0},
                           {"Mbit/s", 125e3},
                           {"Gbit/s", 125e6},
                           {"kbit", 125.0},
                           {"mbit", 125e3},
                           {"gbit", 125e6},
                           {"KB/s", 1e3},
                           {"MB/s", 1e6},
                           {"GB/s", 1e9},
                           {"TB/s", 1e12},
                           {"KiB/s", 1024.0},
                           {"MiB/s", 1048576.0},
                           {"GiB/s", 1073741824.0},
                           {"TiB/s", 1099511627776.0}});
}

double parse_fraction(std::string_view text, std::string_view flag) {
  const std::string_view expected = "a fraction from 0 to 1 such as 0.6 or 60%";
  auto d = split_decimal(text);
  if (!d || !(d->suffix.empty() || d->suffix == "%")) reject(flag, expected, text);
  std::string number(text.substr(0, text.size() - d->suffix.size()));
  double value = std::strtod(number.c_str(), nullptr) / (d->suffix == "%" ? 100.0 : 1.0);
  if (!(value >= 0.0 && value <= 1.0)) reject(flag, expected, text, "outside [0, 1]");
  return value;
}

double parse_real(std::string_view text, std::string_view flag, std::string_view expected,
                  Zero zero) {
  const std::string number(text);
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  const bool plain = !number.empty() && *end == '\0' &&
                     number.find_first_not_of("0123456789.eE+-") == std::string::npos;
  if (!plain || !std::isfinite(v) || v < 0 || (v == 0 && zero == Zero::rejected)) {
    reject(flag, expected, text);
  }
  return v;
}

ByteUnit byte_unit_for(std::uint64_t largest, bool binary) {
  static constexpr ByteUnit kDecimal[] = {
      {"PB", 1e15}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}};
  static constexpr ByteUnit kBinary[] = {{"PiB", 1125899906842624.0},
                                         {"TiB", 1099511627776.0},
                                         {"GiB", 1073741824.0},
                                         {"MiB", 1048576.0},
                                         {"KiB", 1024.0}};
  for (const ByteUnit& unit : binary ? kBinary : kDecimal) {
    if (static_cast<double>(largest) >= unit.bytes) return unit;
  }
  return {"B", 1.0};
}

std::string format_bytes_in(std::uint64_t bytes, ByteUnit unit, int decimals) {
  if (unit.bytes == 1.0) decimals = 0;  // a byte count is whole
  char text[64];
  std::snprintf(text, sizeof text, "%.*f %.*s", decimals, static_cast<double>(bytes) / unit.bytes,
                static_cast<int>(unit.name.size()), unit.name.data());
  return text;
}

std::string format_bytes(std::uint64_t bytes, bool binary) {
  const ByteUnit unit = byte_unit_for(bytes, binary);
  const double value = static_cast<double>(bytes) / unit.bytes;
  // Three significant digits; 999.7 GB rounds to "1000 GB" rather than changing unit.
  const int decimals = unit.bytes == 1.0 ? 0 : value < 10 ? 2 : value < 100 ? 1 : 0;
  return format_bytes_in(bytes, unit, decimals);
}

std::string format_with_commas(std::uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string format_count(std::uint64_t count) {
  static constexpr std::pair<std::uint64_t, char> kSuffixes[] = {
      {1'000'000'000'000ull, 'T'}, {1'000'000'000ull, 'B'}, {1'000'000ull, 'M'}, {1'000ull, 'K'}};
  for (const auto& [scale, suffix] : kSuffixes) {
    if (count < scale) continue;
    const double value = static_cast<double>(count) / static_cast<double>(scale);
    // Exact with up to two decimals when the count allows it ("7.5B"), else three digits.
    int decimals = value < 10 ? 2 : value < 100 ? 1 : 0;
    for (int d = 0, step = 1; d <= 2; ++d, step *= 10) {
      if (count % (scale / step) == 0) {
        decimals = d;
        break;
      }
    }
    char text[64];
    std::snprintf(text, sizeof text, "%.*f%c", decimals, value, suffix);
    return text;
  }
  return std::to_string(count);
}

std::string format_seconds(double seconds) {
  char text[64];
  if (seconds >= 1e12) {
    // Beyond 30,000 years two decimals mean nothing, and a %f of 1e300 would not fit here.
    std::snprintf(text, sizeof text, "%.3g s", seconds);
  } else if (seconds >= 1.0 || seconds == 0.0) {
    std::snprintf(text, sizeof text, "%.2f s", seconds);
  } else if (seconds >= 1e-3) {
    std::snprintf(text, sizeof text, "%.2f ms", seconds * 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.2f us", seconds * 1e6);
  }
  return text;
}

std::string format_duration(double seconds) {
  if (seconds < 120) return format_seconds(seconds);
  char text[64];
  if (seconds < 2 * 3600.0) {
    std::snprintf(text, sizeof text, "%.1f min", seconds / 60);
  } else if (seconds < 48 * 3600.0) {
    std::snprintf(text, sizeof text, "%.1f h", seconds / 3600);
  } else if (seconds < 1e12) {
    std::snprintf(text, sizeof text, "%.1f days", seconds / 86400);
  } else {
    std::snprintf(text, sizeof text, "%.3g days", seconds / 86400);
  }
  return text;
}

std::string format_money(double amount) {
  if (!(amount < 1e15)) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", amount);
    return text;
  }
  const auto cents = static_cast<std::uint64_t>(std::llround(amount * 100));
  char tail[8];
  std::snprintf(tail, sizeof tail, ".%02u", static_cast<unsigned>(cents % 100));
  return format_with_commas(cents / 100) + tail;
}

std::string format_percent(double fraction, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f %%", decimals, fraction * 100.0);
  return text;
}

std::string format_list(const std::vector<std::string>& items, std::size_t most) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < most; ++i) {
    out += (out.empty() ? "" : ", ") + items[i];
  }
  if (items.size() > most) out += " and " + format_with_commas(items.size() - most) + " more";
  return out;
}

}  // namespace zerodp::units
