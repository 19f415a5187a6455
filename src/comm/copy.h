// copy(): the communicator's memcpy. Copies of a few MiB and more — chunks of an all-gather or
// a broadcast — go with streaming (non-temporal) stores: the destination would not stay in
// cache anyway, and they spare reading its lines before writing them. On this machine that is
// 30-50 % faster than glibc's memcpy at 8-128 MiB.
#pragma once

#include <cstddef>

namespace zerodp::comm {

// dst and src must not overlap. The copy is complete and visible to other threads that
// synchronise with this one afterwards (streaming stores are fenced).
void copy(void* dst, const void* src, std::size_t bytes);

}  // namespace zerodp::comm
