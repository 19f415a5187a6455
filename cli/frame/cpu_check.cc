// The instructions this build was compiled for, checked before anything else of the program
// runs.
//
// A build on a machine with AVX2, FMA and F16C is compiled for x86-64-v3 (CMakeLists.txt), and
// so is the .deb made from it. Copied to a node without them, the program would die on the first
// such instruction with SIGILL; instead it says which CPU it needs and exits with status 1. This
// file alone is compiled for plain x86-64 (CMakeLists.txt) and linked into the executable only;
// its constructor runs before the C++ static initialisers (priority 101 < the default), which
// may already use the newer instructions.
#include <cstdio>
#include <cstdlib>

namespace {

__attribute__((constructor(101))) void require_the_cpu_of_the_build() {
#ifdef ZERODP_REQUIRES_X86_64_V3
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
      !__builtin_cpu_supports("f16c")) {
    std::fputs(
        "zerodp: this build needs an x86-64-v3 CPU (AVX2, FMA, F16C), which this machine lacks; "
        "build zerodp on it, or anywhere with -DZERODP_X86_64_V3=OFF (docs/install.md)\n",
        stderr);
    std::_Exit(1);
  }
#endif
}

}  // namespace
