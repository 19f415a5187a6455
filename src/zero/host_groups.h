// ZeRO++'s communicators beside the engine's group (docs/zeropp.md): hpZ gathers stage 3's
// params over this rank's host, and qgZ reduces the gradients inside the host first, then over
// this rank's peers (the ranks of the same place on every host). The engine's step moves bytes
// on all of them, so its stats are their sum.
#pragma once

#include <memory>

#include "zerodp/comm/communicator.h"
#include "zerodp/zero/engine.h"

namespace zerodp::zero {

struct HostGroups {
  // Opens what the options ask for: nothing without hpZ and qgZ; the host with either; the peers
  // with qgZ. The ranks per host are the options' or, when 0, the communicator's. Throws
  // InvalidArgument("ranks_per_host") when the hosts are unequal or scattered and none were
  // given, or when they do not divide the group. Collective: every rank of `group` calls it.
  static HostGroups open(comm::Communicator& group, const EngineOptions& options);

  // The collectives of a step: the group's, the host's and the peers'.
  comm::Stats stats_with(const comm::Communicator& group) const;

  std::unique_ptr<comm::Communicator> host;   // null without hpZ and qgZ
  std::unique_ptr<comm::Communicator> peers;  // null without qgZ
};

}  // namespace zerodp::zero
