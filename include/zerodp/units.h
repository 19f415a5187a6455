// Numbers as people write them: "175B" parameters, "80GB" of memory, "300GB/s", "250ms".
//
// Contract:
//  - Counts and byte sizes are parsed exactly, in integer arithmetic: "7.5B" is 7500000000 and
//    "2.06TB" is 2060000000000, with no floating-point rounding. A value that is not a whole
//    number of parameters or bytes ("1.5B" bytes), or that does not fit in 64 bits, is rejected.
//  - Decimal suffixes are powers of 10 (K, M, B/G, T; KB, MB, GB, TB, PB), binary ones powers of
//    2 (KiB, MiB, GiB, TiB, PiB). 1 GB = 10^9 bytes, as in the seed.
//  - Every failure throws zerodp::UsageError with one line that names the flag, the accepted
//    form and the text received. Negative numbers, NaN, inf and unknown suffixes never parse.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace zerodp::units {

enum class Zero { rejected, allowed };

// A count of things, e.g. parameters: "1e9", "1B", "7.5B", "175B", "50M", "1000", "2K".
std::uint64_t parse_count(std::string_view text, std::string_view flag, Zero zero = Zero::rejected);

// A whole number (GPU counts, steps): digits only, so "4.0" and "1e3" are rejected as
// "a whole number" would not be what the user meant to be rounded.
std::uint64_t parse_whole(std::string_view text, std::string_view flag, Zero zero = Zero::rejected);

// A size in bytes with a unit: "80GB", "24GiB", "512MB", "2.06TB", "0B".
std::uint64_t parse_bytes(std::string_view text, std::string_view flag, Zero zero = Zero::rejected);

// A duration in seconds: "10s", "250ms", "40us", "2min", "1h"; a bare number is seconds.
double parse_seconds(std::string_view text, std::string_view flag);

// A bandwidth in bytes per second: "300GB/s", "25GiB/s".
double parse_bandwidth(std::string_view text, std::string_view flag);

// A fraction in [0, 1]: "0.6" or "60%".
double parse_fraction(std::string_view text, std::string_view flag);

}  // namespace zerodp::units
