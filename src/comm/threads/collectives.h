// The shared-memory algorithms of the threads backend; see collectives.cc.
#pragma once

#include <cstdint>

#include "comm/threads/group.h"

namespace zerodp::comm::threads {

// Run by rank's progress thread once every rank has published call seq (the arrival phase)
// and the calls agree. Returns whether a departure phase must follow before the collective
// completes (peers may still be reading this rank's buffers).
bool run_collective(const Group& group, int rank, std::uint64_t seq);

// The error every rank reports if the ranks' buffers for call seq overlap where they must not,
// or "" if they are fine. The same verdict on every rank.
std::string check_buffers(const Group& group, std::uint64_t seq);

}  // namespace zerodp::comm::threads
