// bench_many_ranks: what one small collective costs with many thread ranks on few cores, the
// case `zerodp train --ranks 1024` meets on a laptop. Latency, not bandwidth: 1024 fp32
// elements, so the time is the group's arrival, checks and wake-ups, not the copy.
//
//   build/bench/bench_many_ranks                    N = 4, 16, 64, 256, 1024
//   build/bench/bench_many_ranks 64 1024            the N given
//
// For each N it prints the median over rounds of one all_reduce and of one all_gather, timed
// on rank 0 from the barrier before to its return (every rank takes part in each), and the
// wall time of the whole group. Rounds: enough for 0.5 s of collectives, at least 5.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "zerodp/comm/communicator.h"
#include "zerodp/common/shard.h"

namespace {

using zerodp::DType;
using zerodp::comm::Communicator;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kCount = 1024;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Result {
  double all_reduce = 0, all_gather = 0, wall = 0;
  int rounds = 0;
};

Result time_group(int n) {
  Result result;
  std::vector<double> reduce_times, gather_times;
  const auto start = Clock::now();
  zerodp::comm::run_thread_ranks(n, {}, [&](Communicator& comm) {
    std::vector<float> data(kCount, 1.0f), out(kCount, 0.0f);
    const zerodp::Shard own = zerodp::shard_of(kCount, n, comm.rank());
    std::vector<float> in(std::max<std::size_t>(own.size, 1), 1.0f);
    double spent = 0;
    // Rank 0 decides when to stop and tells the others, so that every rank issues the same
    // collectives.
    for (int round = 0;; ++round) {
      float go = comm.rank() == 0 && (round < 5 || spent < 0.5) ? 1.0f : 0.0f;
      comm.broadcast(&go, 1, DType::f32, 0);
      if (go == 0.0f) break;
      comm.barrier();
      auto t0 = Clock::now();
      comm.all_reduce(data.data(), kCount, DType::f32);
      const double reduce = std::chrono::duration<double>(Clock::now() - t0).count();
      comm.barrier();
      t0 = Clock::now();
      comm.all_gather(in.data(), out.data(), kCount, DType::f32);
      const double gather = std::chrono::duration<double>(Clock::now() - t0).count();
      if (comm.rank() == 0) {
        reduce_times.push_back(reduce);
        gather_times.push_back(gather);
        spent += reduce + gather;
        result.rounds = round + 1;
      }
    }
  });
  result.wall = std::chrono::duration<double>(Clock::now() - start).count();
  result.all_reduce = median(reduce_times);
  result.all_gather = median(gather_times);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> ranks;
  for (int i = 1; i < argc; ++i) {
    char* end = nullptr;
    const long n = std::strtol(argv[i], &end, 10);
    if (*end != '\0' || n < 1 || n > 4096) {
      std::fprintf(stderr, "bench_many_ranks: expected rank counts from 1 to 4096, got '%s'\n",
                   argv[i]);
      return 2;
    }
    ranks.push_back(int(n));
  }
  if (ranks.empty()) ranks = {4, 16, 64, 256, 1024};
  std::printf("%u cores; %zu x fp32 per collective; median of rank 0's time per call\n",
              std::thread::hardware_concurrency(), kCount);
  std::printf("%6s  %14s  %14s  %7s  %8s\n", "ranks", "all_reduce", "all_gather", "rounds", "wall");
  for (const int n : ranks) {
    const Result r = time_group(n);
    std::printf("%6d  %11.1f us  %11.1f us  %7d  %6.2f s\n", n, r.all_reduce * 1e6,
                r.all_gather * 1e6, r.rounds, r.wall);
  }
  return 0;
}
