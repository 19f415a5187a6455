// The data stage of the MPI backend's collectives: point-to-point messages between every pair
// of ranks, all nonblocking, then local work. Chunks are c_0..c_{N-1} = shard_of(count, N, r).
//
//   reduce_scatter  rank r receives c_r of every peer's input and sums in rank order with its
//                   own c_r (sum_in_rank_order, as the threads backend: the same bits). The
//                   chunk goes in segments of at most Options::mpi_segment_bytes per peer,
//                   double-buffered in staging kept by the communicator: segment s+1 is on
//                   its way while segment s is summed, and staging stays 2 (N-1) segments.
//   all_gather      rank r sends c_r of its input to every peer, and receives each peer's
//                   chunk straight into its place in out.
//   all_reduce      reduce_scatter into data's own chunk, then all_gather in place.
//   broadcast       the root sends the buffer to every peer.
//   barrier         nothing: the handshake was the barrier.
//
// Sends are posted before receives. Open MPI's TCP transport moves a pair's two directions at
// once only that way round: on 2 hosts joined at 200 Mbit/s, a 4 MiB fp32 all-gather (2 MiB
// each way) took 171 ms with receives first and 92 ms with sends first, a link's full rate in
// both directions (Open MPI's own MPI_Allgather: 178 ms).
//
// Messages between two ranks on one tag arrive in the order sent, and both sides post them in
// the same order, so segments and phases match without sequence numbers. No data moves before
// the handshake, so data messages are never left half-matched by a rank that did not arrive.
//
// 16-bit data is summed here, in fp32, after the transfer; no MPI reduction operation (user
// defined or not) is involved.
#include <algorithm>
#include <cstring>
#include <vector>

#include "comm/copy.h"
#include "comm/mpi/communicator.h"
#include "comm/sum.h"
#include "zerodp/common/shard.h"

namespace zerodp::comm::mpi {
namespace {

std::size_t segment_length(const Shard& chunk, std::size_t segment, std::size_t elements) {
  const std::size_t begin = segment * elements;
  if (begin >= chunk.size) return 0;
  return std::min(elements, chunk.size - begin);
}

const unsigned char* byte_at(const void* p, std::size_t elements, std::size_t elem) {
  return static_cast<const unsigned char*>(p) + elements * elem;
}
unsigned char* byte_at(void* p, std::size_t elements, std::size_t elem) {
  return static_cast<unsigned char*>(p) + elements * elem;
}

}  // namespace

void MpiCommunicator::reduce_scatter(const Call& call, const void* in, void* out) {
  const int n = size_, r = rank_;
  const std::size_t elem = dtype_size(call.dtype);
  const Shard mine = shard_of(call.count, n, r);
  const std::size_t capacity = mine.capacity;
  if (capacity == 0) return;
  const std::size_t seg = std::min(std::max<std::size_t>(segment_bytes_ / elem, 1), capacity);
  const std::size_t segments = (capacity + seg - 1) / seg;
  const std::size_t slot_bytes = seg * elem;
  unsigned char* stage = n > 1 ? staging(staging_bytes_for(call.count, elem)) : nullptr;
  // Peer j's slot in staging buffer b: peers in ring order after this rank.
  auto slot = [&](std::size_t b, int j) {
    const int k = (j - r - 1 + n) % n;  // 0 .. n-2
    return stage + (b * (n - 1) + k) * slot_bytes;
  };
  auto post = [&](std::size_t s) {
    for (int step = 1; step < n; ++step) {
      const int j = (r + step) % n;
      const Shard theirs = shard_of(call.count, n, j);
      if (const std::size_t len = segment_length(theirs, s, seg); len > 0) {
        post_send(byte_at(in, theirs.offset + s * seg, elem), len * elem, j);
      }
    }
    for (int step = 1; step < n; ++step) {
      const int j = (r + step) % n;
      if (const std::size_t len = segment_length(mine, s, seg); len > 0) {
        post_recv(slot(s % 2, j), len * elem, j);
      }
    }
  };
  std::vector<const void*> inputs(n);
  post(0);
  for (std::size_t s = 0; s < segments; ++s) {
    wait_posted(call, "data");
    if (s + 1 < segments) post(s + 1);
    const std::size_t len = segment_length(mine, s, seg);
    if (len == 0) continue;
    for (int j = 0; j < n; ++j) {
      inputs[j] = j == r ? byte_at(in, mine.offset + s * seg, elem) : slot(s % 2, j);
    }
    void* dst = byte_at(out, s * seg, elem);
    sum_in_rank_order(call.dtype, inputs.data(), n, &dst, 1, len);
  }
}

void MpiCommunicator::all_gather(const Call& call, const void* in, void* out) {
  const int n = size_, r = rank_;
  const std::size_t elem = dtype_size(call.dtype);
  const Shard mine = shard_of(call.count, n, r);
  for (int step = 1; step < n; ++step) {
    if (mine.size > 0) post_send(in, mine.size * elem, (r + step) % n);
  }
  for (int step = 1; step < n; ++step) {
    const int j = (r + step) % n;
    const Shard theirs = shard_of(call.count, n, j);
    if (theirs.size > 0) post_recv(byte_at(out, theirs.offset, elem), theirs.size * elem, j);
  }
  unsigned char* own = byte_at(out, mine.offset, elem);
  if (mine.size > 0 && own != in) copy(own, in, mine.size * elem);
  wait_posted(call, "data");
}

void MpiCommunicator::all_to_all(const Call& call) {
  const int n = size_, r = rank_;
  const std::size_t block = call.count * dtype_size(call.dtype);
  if (block == 0) return;
  const auto* in = static_cast<const unsigned char*>(call.in);
  auto* out = static_cast<unsigned char*>(call.out);
  for (int step = 1; step < n; ++step) {
    const int j = (r + step) % n;
    post_send(in + std::size_t(j) * block, block, j);
  }
  for (int step = 1; step < n; ++step) {
    const int j = (r + step) % n;
    post_recv(out + std::size_t(j) * block, block, j);
  }
  copy(out + std::size_t(r) * block, in + std::size_t(r) * block, block);
  wait_posted(call, "data");
}

void MpiCommunicator::broadcast(const Call& call) {
  if (call.count == 0) return;
  const std::size_t bytes = call.count * dtype_size(call.dtype);
  if (rank_ == call.root) {
    for (int j = 0; j < size_; ++j) {
      if (j != rank_) post_send(call.out, bytes, j);
    }
  } else {
    post_recv(call.out, bytes, call.root);
  }
  wait_posted(call, "data");
}

void MpiCommunicator::collective(const Call& call) {
  moving_ = call.kind;  // what post_send() and post_recv() count the bytes under
  switch (call.kind) {
    case Collective::reduce_scatter:
      reduce_scatter(call, call.in, call.out);
      break;
    case Collective::all_gather:
      all_gather(call, call.in, call.out);
      break;
    case Collective::all_reduce: {
      void* own =
          byte_at(call.out, shard_of(call.count, size_, rank_).offset, dtype_size(call.dtype));
      reduce_scatter(call, call.out, own);
      all_gather(call, own, call.out);
      break;
    }
    case Collective::broadcast:
      broadcast(call);
      break;
    case Collective::all_to_all:
      all_to_all(call);
      break;
    case Collective::barrier:
      break;
  }
}

}  // namespace zerodp::comm::mpi
