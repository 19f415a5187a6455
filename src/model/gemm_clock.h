// The clock gemm()'s statistics read (zerodp/model/gemm.h, set_gemm_clock), shared by its
// kernels so that the conversion they time and the product gemm() times are on one clock.
#pragma once

#include <time.h>

#include <chrono>

#include "zerodp/model/gemm.h"

namespace zerodp::model {

// Seconds on `clock`: steady wall time, or the calling thread's CPU time. Not for off.
inline double clock_seconds(GemmClock clock) {
  if (clock == GemmClock::wall) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace zerodp::model
