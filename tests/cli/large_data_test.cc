// A --data file larger than the memory a run may have: training reads each window from the
// file, never the whole file, so a 2 GiB corpus trains under a 3 GiB address-space limit.
// Left out of the sanitizer builds (tests/CMakeLists.txt): their shadow memory reserves far
// more than 3 GiB of address space, so the limit would fail any run there.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli/cli_testing.h"
#include "testing/temp_dir.h"

// GCC says -fsanitize=address with __SANITIZE_ADDRESS__, clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define ZERODP_LARGE_DATA_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ZERODP_LARGE_DATA_UNDER_ASAN 1
#endif
#endif

namespace zerodp::testing {
namespace {

// fnv1a64 of n zero bytes: xor with 0 changes nothing, so it is the offset basis times the
// prime to the n-th power (mod 2^64).
std::uint64_t fnv1a64_of_zeros(std::uint64_t n) {
  std::uint64_t h = 0xcbf29ce484222325ULL, prime = 0x100000001b3ULL;
  for (; n > 0; n >>= 1, prime *= prime) {
    if (n & 1) h *= prime;
  }
  return h;
}

TEST(LargeData, TwoGibFileTrainsUnderAThreeGibAddressSpaceLimit) {
#ifdef ZERODP_LARGE_DATA_UNDER_ASAN
  // A build that adds -fsanitize=address by its own flags, not ZERODP_SANITIZE, still compiles
  // this file: say so rather than pass without running, or fail in ASan's start-up.
  GTEST_FAIL() << "built with AddressSanitizer, whose shadow memory reserves far more than the "
                  "3 GiB limit: leave tests/cli/large_data_test.cc out of this build, as "
                  "tests/CMakeLists.txt does under ZERODP_SANITIZE";
#endif
  // A sparse file: no disk blocks, all zero bytes, which is a corpus like any other.
  const std::string path = fresh_path("zerodp_large_data") + ".bin";
  constexpr off_t kSize = off_t{2} << 30;
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  const bool sized = ::ftruncate(fd, kSize) == 0;
  ::close(fd);
  if (!sized) std::filesystem::remove(path);
  ASSERT_TRUE(sized) << path;

  const auto start = std::chrono::steady_clock::now();
  const CliResult r = run_zerodp("train --data '" + path +
                                     "' --layers 1 --heads 1 --hidden 32 --seq-len 16 --steps 2 "
                                     "--ranks 1 --threads 1 --out ''",
                                 "prlimit --as=3221225472 ");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::filesystem::remove(path);
  std::printf("  2 GiB --data under a 3 GiB limit: %.1f s\n", seconds);
  EXPECT_EQ(r.status, 0) << r.err;
  // The whole file is the corpus: its size and the fingerprint of 2^31 zero bytes.
  char fingerprint[64];
  std::snprintf(fingerprint, sizeof fingerprint, "2,147,483,648 bytes, fnv1a64 %016llx",
                static_cast<unsigned long long>(fnv1a64_of_zeros(std::uint64_t{1} << 31)));
  EXPECT_TRUE(r.has(fingerprint)) << fingerprint << "\n" << r.out;
  EXPECT_EQ(r.err.find("out of memory"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace zerodp::testing
