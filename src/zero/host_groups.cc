#include "zero/host_groups.h"

#include <string>

#include "zerodp/common/error.h"

namespace zerodp::zero {

HostGroups HostGroups::open(comm::Communicator& group, const EngineOptions& options) {
  HostGroups groups;
  if (!options.zeropp.uses_hosts()) return groups;
  const int per_host = options.ranks_per_host > 0 ? options.ranks_per_host : group.ranks_per_host();
  if (per_host == 0) {
    throw InvalidArgument("ranks_per_host",
                          field_ref("ranks_per_host") +
                              ": the hosts hold unequal or scattered ranks; give the ranks per "
                              "host for ZeRO++'s hosts");
  }
  if (group.size() % per_host != 0) {
    throw InvalidArgument("ranks_per_host", field_ref("ranks_per_host") + ": " +
                                                std::to_string(per_host) + " does not divide the " +
                                                std::to_string(group.size()) + " ranks");
  }
  groups.host = group.host_group(per_host);
  if (options.zeropp.qgz) groups.peers = group.peer_group(per_host);
  return groups;
}

comm::Stats HostGroups::stats_with(const comm::Communicator& group) const {
  comm::Stats stats = group.stats();
  if (host) stats += host->stats();
  if (peers) stats += peers->stats();
  return stats;
}

}  // namespace zerodp::zero
