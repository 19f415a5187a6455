// Call: one collective as a rank issued it, and what the front and both backends derive from
// it alone — its name and description in error messages, the agreement check between ranks,
// and the bytes a ring algorithm sends for it (the accounting of zerodp/comm/communicator.h).
// call.cc is where the front learns what each kind of collective is called and what it sends
// (collective_name() of zerodp/comm/communicator.h is defined there too).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "zerodp/comm/communicator.h"
#include "zerodp/common/dtype.h"

namespace zerodp::comm {

struct Call {
  Collective kind = Collective::barrier;
  DType dtype = DType::f32;
  int root = 0;           // broadcast only; 0 otherwise
  std::uint64_t seq = 0;  // 1-based position among this communicator's collectives
  std::size_t count = 0;  // elements of the full buffer (0 for barrier)
  const void* in = nullptr;
  void* out = nullptr;  // all_reduce and broadcast: in place, in == out
};

// "all_reduce #7 (100003 x fp32)", "broadcast #2 (10 x bf16, root 1)", "barrier #3".
std::string describe(const Call& call);

// Whether two ranks' calls at the same position agree (kind, count, dtype, root, seq).
bool same_collective(const Call& a, const Call& b);

// The error every rank reports when calls disagree; calls[0..ranks) are the ranks' calls at
// one position, at least one different from calls[0]. The same text on every rank.
std::string mismatch_message(const Call* calls, int ranks);

// Bytes rank `rank` of `ranks` sends in `call` under the ring algorithms of
// zerodp/comm/communicator.h.
std::uint64_t ring_bytes_sent(const Call& call, int ranks, int rank);

// Bytes of one element range: count * dtype_size.
inline std::size_t bytes_of(std::size_t count, DType dtype) {
  return count * dtype_size(dtype);
}

}  // namespace zerodp::comm
