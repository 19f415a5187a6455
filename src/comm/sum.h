// The one reduction of the communicator: a sum in rank order, accumulated in fp32.
//
// out[i] = round_to_dtype(((x_0[i] + x_1[i]) + x_2[i]) + ... + x_{n-1}[i]), each x widened to
// fp32 exactly and the sum rounded once (dtype.h rounding; NaN comes out as dtype.h makes it).
// Both backends and every collective reduce through here, which is what makes all_reduce and
// reduce_scatter + all_gather, threads and MPI, give the same bits.
#pragma once

#include <cstddef>

#include "zerodp/common/dtype.h"

namespace zerodp::comm {

// inputs[0..n) and outputs[0..m) each point at count elements of dtype; n >= 1, m >= 1. An
// output may be the very same pointer as an input (in place); otherwise outputs must not
// overlap inputs or each other. The work runs in cache-sized blocks: every output element is
// written after all inputs of its block were read. With n == 1 the input is copied unchanged.
void sum_in_rank_order(DType dtype, const void* const* inputs, int n, void* const* outputs, int m,
                       std::size_t count);

}  // namespace zerodp::comm
