// The model's hot elementwise loops in two builds: the build's baseline (x86-64-v3: AVX2, 8
// floats a register) and an AVX-512 variant (16), chosen once per process by the CPU. The two
// variants are the same source, inlined into each: every operation is an IEEE-754 operation
// on one element (no contraction into FMAs, -ffp-contract=off; reductions keep their explicit
// partial sums, simd_math.h), so the register width changes the speed and never a bit.
// tests/model/avx512_test.cc holds the variants to that, bit for bit, where the CPU runs both.
//
// ZERODP_AVX512 marks a function as the AVX-512 variant; ZERODP_HAVE_AVX512_VARIANTS says
// whether this compiler and target build them at all (x86-64 with GCC or clang).
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ZERODP_HAVE_AVX512_VARIANTS 1
#define ZERODP_AVX512 __attribute__((target("avx512f,avx512bw")))
#else
#define ZERODP_HAVE_AVX512_VARIANTS 0
#define ZERODP_AVX512
#endif

namespace zerodp::model {

// Whether this CPU runs the AVX-512 variants (AVX-512 F and BW), decided once.
inline bool cpu_runs_avx512() {
#if ZERODP_HAVE_AVX512_VARIANTS
  static const bool runs = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return runs;
#else
  return false;
#endif
}

}  // namespace zerodp::model
