// Numbers as people write them: "175B" parameters, "80GB" of memory, "300GB/s", "250ms".
//
// Contract:
//  - Counts and byte sizes are parsed exactly, in integer arithmetic: "7.5B" is 7500000000 and
//    "2.06TB" is 2060000000000, with no floating-point rounding. A value that is not a whole
//    number of parameters or bytes ("1.5B" bytes), or that does not fit in 64 bits, is rejected.
//  - Decimal suffixes are powers of 10 (K, M, B/G, T; KB, MB, GB, TB, PB), binary ones powers of
//    2 (KiB, MiB, GiB, TiB, PiB). 1 GB = 10^9 bytes, as in the seed.
//  - Every failure throws zerodp::UsageError with one line that names the value as the caller
//    does (`flag`: a flag, or a field_ref() from a library), the accepted form and the text
//    received. Negative numbers, NaN, inf and unknown suffixes never parse.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zerodp::units {

enum class Zero { rejected, allowed };

// A count of things, e.g. parameters: "1e9", "1B", "7.5B", "175B", "50M", "1000", "2K".
std::uint64_t parse_count(std::string_view text, std::string_view flag, Zero zero = Zero::rejected);

// A whole number (GPU counts, steps): digits, or a count's form without a unit ("1e3",
// "2.5e3", "4.0"), read exactly as --params reads 1e9. Nothing is rounded: "4.5" and "1e-1"
// are refused as not whole.
std::uint64_t parse_whole(std::string_view text, std::string_view flag, Zero zero = Zero::rejected);

// A whole number from `min` to `max`, for a flag stored in a narrower type or with a real limit:
// "--ranks: expected a whole number from 1 to 1024, got '4294967298'". Never wraps: the text
// is compared with the range before it is narrowed.
std::uint64_t parse_whole_in(std::string_view text, std::string_view flag, std::uint64_t min,
                             std::uint64_t max);

// A number of tokens (a sequence length): digits, or digits and k for 1024 tokens, as model
// cards write context lengths ("4k" is 4096, "32k" 32768, "128k" 131072: powers of two, not
// 4000). A plain number is read as parse_whole() reads it ("4096", "1e3"); before a k only
// digits ("4.5k", "1e3k", "4kk" and "-4k" are refused). Positive, and at most `max`:
// "--seq-len: expected a whole number of tokens such as 4096 or 4k (k = 1024), got '4kk'".
std::uint64_t parse_tokens(std::string_view text, std::string_view flag,
                           std::uint64_t max = UINT64_MAX);

// A size in bytes with a unit: "80GB", "24GiB", "512MB", "2.06TB", "0B". The unit in any case
// and after spaces ("80gb", "80 GB"), and a bare K, M, G, T, P (decimal: "80G" is 80GB) or
// Ki, Mi, Gi, Ti, Pi (binary: "24Gi" is 24GiB), as other tools write sizes.
std::uint64_t parse_bytes(std::string_view text, std::string_view flag, Zero zero = Zero::rejected);

// A memory capacity: a size as parse_bytes() reads it, and also one with more decimals than
// its unit has bytes, as a report prints a capacity rounded ("23.65GiB", "39.39 GiB"):
// rounded down to whole bytes, since a capacity never holds a fraction of one.
// Positive.
std::uint64_t parse_capacity(std::string_view text, std::string_view flag);

// A duration in seconds: "10s", "250ms", "40us", "2min", "1h"; a bare number is seconds.
double parse_seconds(std::string_view text, std::string_view flag);

// A duration from `min` to `max` seconds, so that it converts to milliseconds without overflow:
// "--timeout: expected a duration from 1 ms to 7 days such as 300s, got '1e16s'".
double parse_seconds_in(std::string_view text, std::string_view flag, double min, double max);

// A bandwidth in bytes per second: "300GB/s", "25GiB/s", or a bit rate: "200Mbit/s", "1gbit"
// (tc's spelling).
double parse_bandwidth(std::string_view text, std::string_view flag);

// A fraction in [0, 1]: "0.6" or "60%".
double parse_fraction(std::string_view text, std::string_view flag);

// A plain real number without a unit: digits, a point, an exponent ("3e-4", "1.0"); no NaN,
// inf or negative value; above 0, or 0 too with Zero::allowed. `expected` describes the
// accepted form: "--lr: expected a positive number such as 3e-4, got 'x'".
double parse_real(std::string_view text, std::string_view flag, std::string_view expected,
                  Zero zero);

// Formatting, the other direction: numbers as the planner's tables and figures print them.
// Decimal units by default (1 GB = 10^9 bytes, as in the seed); binary (GiB) on request.

struct ByteUnit {
  std::string_view name;  // "GB", "GiB", "B", ...
  double bytes;           // bytes in one unit
};

// The unit a column of values is printed in: the largest unit not above `largest` (so the
// largest value shows at least 1), "B" for values below 1 KB. A column shares one unit so
// its values can be compared by eye: the seed prints 0.34 TB beside 1.03 TB.
ByteUnit byte_unit_for(std::uint64_t largest, bool binary);

// `bytes` in `unit` with `decimals` digits after the point: "5.50 GB".
std::string format_bytes_in(std::uint64_t bytes, ByteUnit unit, int decimals = 2);

// `bytes` in the unit that suits it, three significant digits: "59.6 GB", "800 MB", "0 B".
std::string format_bytes(std::uint64_t bytes, bool binary = false);

// A count as parse_count() reads it: exact when a suffix divides it ("175B", "50M", "1B"),
// otherwise three significant digits ("3.26M").
std::string format_count(std::uint64_t count);

// An exact whole number with thousands separators: 8,030,261,248.
std::string format_with_commas(std::uint64_t n);

// Seconds with a unit that keeps two decimals meaningful: "6.87 s", "250.00 ms", "40.00 us".
std::string format_seconds(double seconds);

// A long duration in the unit that reads best: seconds below two minutes (format_seconds),
// then "12.5 min", "7.3 h", "3.2 days".
std::string format_duration(double seconds);

// An amount of money in the price's own currency, unnamed: "1,234.50"; "%.3g" past 10^15.
std::string format_money(double amount);

// A fraction as a percentage: format_percent(0.0547, 1) is "5.5 %".
std::string format_percent(double fraction, int decimals = 1);

// Items separated by ", ": {"a", "b"} is "a, b"; none is "". Past `most` items, the first
// `most` and how many more: "a, b and 2,998 more" (a hostile config's 3,000 keys are a line).
std::string format_list(const std::vector<std::string>& items, std::size_t most = std::size_t(-1));

}  // namespace zerodp::units
