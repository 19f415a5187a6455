// Failures end in errors on every rank, with messages that name the collective, its call
// number and the ranks — never a hang, never corrupted data.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "comm/comm_testing.h"
#include "zerodp/comm/communicator.h"
#include "zerodp/common/error.h"

namespace zerodp::comm {
namespace {

using ::testing::HasSubstr;
using Ms = std::chrono::milliseconds;

// The message of the Error fn throws, or "no error".
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Rank 2 does not arrive at all_reduce #2 until its peers have given up: they time out with a
// message naming the collective, the call and rank 2; rank 2's late call fails at once with
// the same reason, and the group stays failed.
TEST(CommFailure, MissingRankTimesOutOnEveryRank) {
  Options options;
  options.timeout = Ms(300);
  std::atomic<int> gave_up{0};
  run_thread_ranks(3, options, [&](Communicator& comm) {
    std::vector<float> data(10, 1.0f);
    comm.all_reduce(data.data(), 10, DType::f32);
    const int r = comm.rank();
    if (r == 2) {
      while (gave_up.load() < 2) std::this_thread::sleep_for(Ms(1));
      const auto start = std::chrono::steady_clock::now();
      const std::string msg = error_of([&] { comm.all_reduce(data.data(), 10, DType::f32); });
      EXPECT_LT(seconds_since(start), 0.25) << "the late rank must fail at once";
      EXPECT_THAT(msg, HasSubstr("all_reduce #2 (10 x fp32) failed on rank 2: all_reduce #2 "
                                 "(10 x fp32) timed out after 300 ms"));
      EXPECT_THAT(msg, HasSubstr("rank 2 did not arrive (its last collective was #1)"));
    } else {
      const std::string msg = error_of([&] { comm.all_reduce(data.data(), 10, DType::f32); });
      gave_up.fetch_add(1);
      EXPECT_THAT(msg, HasSubstr("all_reduce #2 (10 x fp32) failed on rank " + std::to_string(r) +
                                 ": all_reduce #2 (10 x fp32) timed out "
                                 "after 300 ms: rank 2 did not arrive (its last collective "
                                 "was #1)"));
      EXPECT_EQ(data[0], 3.0f) << "the failed collective must leave the data alone";
    }
    // Once failed, always failed.
    EXPECT_THAT(error_of([&] { comm.barrier(); }), HasSubstr("barrier #3 failed on rank"));
    EXPECT_THAT(error_of([&] { comm.barrier(); }), HasSubstr("timed out after 300 ms"));
  });
}

// A rank whose function returns without the collective its peers wait in fails them at once,
// long before the (default, 300 s) timeout.
TEST(CommFailure, RankThatLeftFailsItsPeersAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  run_thread_ranks(4, {}, [&](Communicator& comm) {
    if (comm.rank() == 3) return;
    std::vector<float> data(100, 1.0f);
    const std::string msg = error_of([&] { comm.all_reduce(data.data(), 100, DType::f32); });
    EXPECT_THAT(msg, HasSubstr("all_reduce #1 (100 x fp32) cannot complete: rank 3 left the "
                               "group (its function returned)"));
  });
  EXPECT_LT(seconds_since(start), 60.0);
}

// A rank that throws aborts the group: its peers' collectives, pending and later, fail with
// its reason, and run_thread_ranks rethrows the original exception.
TEST(CommFailure, ThrowingRankAbortsEveryPendingAndLaterCollective) {
  std::atomic<bool> issued{false};
  try {
    run_thread_ranks(4, {}, [&](Communicator& comm) {
      std::vector<float> a(1000, 1.0f), b(1000, 1.0f), c(1000, 1.0f);
      comm.all_reduce(a.data(), 1000, DType::f32);
      if (comm.rank() == 1) {
        while (!issued.load()) std::this_thread::sleep_for(Ms(1));
        throw std::runtime_error("boom in backward");
      }
      // Rank 0 has collectives in flight when rank 1 fails; the others just call.
      std::vector<Handle> hs;
      hs.push_back(comm.all_reduce_async(b.data(), 1000, DType::f32));
      hs.push_back(comm.reduce_scatter_async(b.data(), c.data(), 1000, DType::f32));
      if (comm.rank() == 0) issued.store(true);
      for (Handle& h : hs) {
        EXPECT_THAT(error_of([&] { h.wait(); }), HasSubstr("rank 1 aborted: boom in backward"));
      }
      const std::string later =
          error_of([&] { comm.all_gather(a.data(), c.data(), 10, DType::f32); });
      EXPECT_THAT(later, HasSubstr("all_gather #4 (10 x fp32) failed on rank " +
                                   std::to_string(comm.rank()) + ": rank 1 aborted: boom"));
    });
    FAIL() << "run_thread_ranks must rethrow";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "boom in backward");  // the original exception, not a copy
  }
}

TEST(CommFailure, ExplicitAbortCarriesTheReason) {
  run_thread_ranks(3, {}, [&](Communicator& comm) {
    std::vector<std::uint16_t> data(5, 0);
    if (comm.rank() == 2) {
      comm.abort("out of memory for the gathered unit");
      comm.abort("a second reason is ignored");
    }
    EXPECT_THAT(error_of([&] { comm.all_reduce(data.data(), 5, DType::bf16); }),
                HasSubstr("failed on rank " + std::to_string(comm.rank()) +
                          ": rank 2 aborted: out of memory for the gathered unit"));
  });
}

// Mismatched calls fail on every rank with one message naming both calls and the ranks, and
// leave the data as it was.
struct Mismatch {
  const char* name;
  std::function<void(Communicator&, std::vector<float>&, std::vector<float>&)> call;
  const char* message;
};

TEST(CommFailure, MismatchedCollectivesAreReportedNotRun) {
  const std::vector<Mismatch> cases = {
      {"count",
       [](Communicator& c, std::vector<float>& d, std::vector<float>&) {
         c.all_reduce(d.data(), c.rank() == 1 ? 11 : 12, DType::f32);
       },
       "collectives do not match: rank 0 called all_reduce #1 (12 x fp32) but rank 1 called "
       "all_reduce #1 (11 x fp32)"},
      {"kind",
       [](Communicator& c, std::vector<float>& d, std::vector<float>& o) {
         if (c.rank() == 2) {
           c.all_gather(d.data(), o.data(), 12, DType::f32);
         } else {
           c.all_reduce(d.data(), 12, DType::f32);
         }
       },
       "collectives do not match: rank 0 called all_reduce #1 (12 x fp32) but rank 2 called "
       "all_gather #1 (12 x fp32)"},
      {"dtype",
       [](Communicator& c, std::vector<float>& d, std::vector<float>& o) {
         c.reduce_scatter(d.data(), o.data(), 12, c.rank() == 1 ? DType::bf16 : DType::f16);
       },
       "collectives do not match: rank 0 called reduce_scatter #1 (12 x fp16) but rank 1 "
       "called reduce_scatter #1 (12 x bf16)"},
      {"root",
       [](Communicator& c, std::vector<float>& d, std::vector<float>&) {
         c.broadcast(d.data(), 12, DType::f32, c.rank() == 2 ? 1 : 0);
       },
       "collectives do not match: rank 0 called broadcast #1 (12 x fp32, root 0) but rank 2 "
       "called broadcast #1 (12 x fp32, root 1)"},
      {"barrier",
       [](Communicator& c, std::vector<float>& d, std::vector<float>&) {
         if (c.rank() == 0) {
           c.barrier();
         } else {
           c.all_reduce(d.data(), 12, DType::f32);
         }
       },
       "collectives do not match: rank 0 called barrier #1 but rank 1 called all_reduce #1 "
       "(12 x fp32)"},
  };
  for (const Mismatch& m : cases) {
    SCOPED_TRACE(m.name);
    run_thread_ranks(3, {}, [&](Communicator& comm) {
      std::vector<float> data(12, static_cast<float>(comm.rank() + 1));
      std::vector<float> out(12, -1.0f);
      const std::string msg = error_of([&] { m.call(comm, data, out); });
      EXPECT_THAT(msg, HasSubstr(m.message));
      EXPECT_THAT(msg, HasSubstr("failed on rank " + std::to_string(comm.rank())));
      EXPECT_EQ(data, std::vector<float>(12, static_cast<float>(comm.rank() + 1)));
      EXPECT_EQ(out, std::vector<float>(12, -1.0f));
    });
  }
}

TEST(CommFailure, RanksSharingABufferAreReported) {
  std::vector<float> shared(8, 1.0f);
  run_thread_ranks(2, {}, [&](Communicator& comm) {
    EXPECT_THAT(error_of([&] { comm.all_reduce(shared.data(), 8, DType::f32); }),
                HasSubstr("ranks 0 and 1 passed overlapping buffers to all_reduce #1"));
  });
  EXPECT_EQ(shared, std::vector<float>(8, 1.0f));
  run_thread_ranks(2, {}, [&](Communicator& comm) {
    std::vector<float> in(8, 1.0f);
    EXPECT_THAT(error_of([&] { comm.reduce_scatter(in.data(), in.data() + 1, 8, DType::f32); }),
                HasSubstr("passed overlapping in and out buffers to reduce_scatter #1"));
  });
}

// The check over every rank's buffers is a sweep, not a pairwise loop: it must find the same
// pairs the pairwise rule names, far apart in rank order, and allow what the rule allows.
TEST(CommFailure, OverlapsAreFoundAmongManyRanksAndSharedReadsAreAllowed) {
  constexpr int kRanks = 16;
  constexpr std::size_t kCount = 4 * kRanks;
  // Every rank reads one shared input: reads may overlap.
  std::vector<float> shared_in(kCount);
  for (std::size_t i = 0; i < kCount; ++i) shared_in[i] = float(i);
  run_thread_ranks(kRanks, {}, [&](Communicator& comm) {
    std::vector<float> out(4, -1.0f);
    comm.reduce_scatter(shared_in.data(), out.data(), kCount, DType::f32);
    for (std::size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(out[i], float(kRanks) * float(4 * comm.rank() + int(i)));
    }
  });
  // Rank 11 gathers into memory rank 3 reads from: ranks 3 and 11, whatever lies between.
  std::vector<float> block(kCount * 2, 1.0f);
  run_thread_ranks(kRanks, {}, [&](Communicator& comm) {
    std::vector<float> own_in(4, 0.0f), own_out(kCount, 0.0f);
    float* in = comm.rank() == 3 ? block.data() + kCount : own_in.data();
    float* out = comm.rank() == 11 ? block.data() + kCount - 8 : own_out.data();
    EXPECT_THAT(error_of([&] { comm.all_gather(in, out, kCount, DType::f32); }),
                HasSubstr("ranks 3 and 11 passed overlapping buffers to all_gather #1"));
  });
  EXPECT_EQ(block, std::vector<float>(kCount * 2, 1.0f));
}

TEST(CommFailure, BadArgumentsAreUsageErrors) {
  EXPECT_THROW(run_thread_ranks(0, {}, [](Communicator&) {}), UsageError);
  Options zero;
  zero.timeout = Ms(0);
  EXPECT_THROW(run_thread_ranks(2, zero, [](Communicator&) {}), UsageError);
  run_thread_ranks(2, {}, [&](Communicator& comm) {
    std::vector<float> data(4);
    EXPECT_THROW(comm.broadcast(data.data(), 4, DType::f32, 2), UsageError);
    EXPECT_THROW(comm.set_timeout(Ms(-1)), UsageError);
    comm.set_timeout(Ms(5000));
    comm.broadcast(data.data(), 4, DType::f32, 1);
  });
}

}  // namespace
}  // namespace zerodp::comm
