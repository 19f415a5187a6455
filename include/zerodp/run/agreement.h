// Ranks that agree: before a run starts, every rank checks that all ranks run the same
// settings, so that MPI processes started with different flags or data fail at once instead of
// training silently on a mix.
//
// Contract:
//  - check_ranks_agree() is collective: every rank calls it with its own list of settings, in
//    the same order (the same code builds it). It returns when every setting's name and key
//    are equal on all ranks.
//  - Otherwise it throws UsageErrorOnEveryRank (a UsageError) on every rank with the same one
//    line, naming the first setting that differs and what each rank runs: "ranks disagree on
//    --seed: rank 0 runs 1, rank 1 runs 2".
//  - Only fp32 crosses the communicator: each setting's 64-bit digest travels as four fp32
//    values that hold 16-bit integers exactly; values are shown (not compared) as text bytes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "zerodp/comm/communicator.h"
#include "zerodp/common/error.h"

namespace zerodp::run {

struct RunSetting {
  RunSetting(std::string name_, std::string value_, std::string key_ = {})
      : name(std::move(name_)), value(std::move(value_)), key(std::move(key_)) {}
  std::string name;   // the input, as a message names it: field_ref("seed")
  std::string value;  // what the user sees in the message: "2", "a.txt (fnv1a64 ..., 9 bytes)"
  std::string key;    // what is compared; empty: the value (e.g. a file's bytes, not its path)
};
using RunSettings = std::vector<RunSetting>;

// A UsageError every rank throws at the same point with the same line, as check_ranks_agree()
// does after its last collective: run_ranks() lets it through without aborting the group (an
// abort would race the peers' last collective and replace their line with "rank 1 aborted").
class UsageErrorOnEveryRank : public UsageError {
 public:
  using UsageError::UsageError;
};

// The same for a run that fails, every rank at the same step for the same reason (a loss that
// is no longer finite is the same on every rank: the ranks all-reduce it).
class ErrorOnEveryRank : public Error {
 public:
  using Error::Error;
};

void check_ranks_agree(comm::Communicator& comm, const RunSettings& settings);

// The line check_ranks_agree() throws, from what each rank runs of the setting `name`
// (values[r] for rank r); exposed for tests. Ranks with equal values are grouped.
std::string disagreement_line(const std::string& name, const std::vector<std::string>& values);

// Every rank's words, rank by rank, on every rank (collective; every rank gives as many).
// all_gather copies bits without arithmetic, so 64-bit words travel as four 16-bit elements.
std::vector<std::uint64_t> gather_words(comm::Communicator& comm,
                                        const std::vector<std::uint64_t>& mine);

}  // namespace zerodp::run
