#include "comm/mpi/communicator.h"

#include <sched.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <thread>

#include "comm/mpi/runtime.h"
#include "zerodp/common/error.h"
#include "zerodp/common/shard.h"

namespace zerodp::comm::mpi {
namespace {

constexpr int kTagCall = 1;    // handshake: the Call
constexpr int kTagData = 2;    // the data of a collective
constexpr int kTagNotice = 3;  // control channel: why a rank gave up
// MPI counts are ints: larger transfers go as several messages of at most this many bytes.
constexpr std::size_t kMaxMessage = std::size_t{1} << 30;

WireCall to_wire(const Call& c) {
  WireCall w{};
  w.seq = c.seq;
  w.count = c.count;
  w.root = c.root;
  w.kind = static_cast<std::uint8_t>(c.kind);
  w.dtype = static_cast<std::uint8_t>(c.dtype);
  return w;
}

Call from_wire(const WireCall& w) {
  Call c;
  c.seq = w.seq;
  c.count = w.count;
  c.root = w.root;
  c.kind = static_cast<Collective>(w.kind);
  c.dtype = static_cast<DType>(w.dtype);
  return c;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    s += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  }
  return s;
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw Error(std::string(what) + " failed: " + std::string(text, len));
  }
}

}  // namespace

MpiCommunicator::MpiCommunicator(const Options& options)
    // Front checks the timeout before MPI is started.
    : Front(options), segment_bytes_(std::max<std::size_t>(options.mpi_segment_bytes, 1)) {
  Runtime& runtime = Runtime::get();
  runtime.progress().run([&] {
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    // Duplicates keep our messages apart from the program's; idup, so that a rank that never
    // comes is a timeout, not a hang.
    MPI_Request r[2];
    check(MPI_Comm_idup(MPI_COMM_WORLD, &data_, &r[0]), "MPI_Comm_idup");
    check(MPI_Comm_idup(MPI_COMM_WORLD, &control_, &r[1]), "MPI_Comm_idup");
    const auto deadline = Clock::now() + options.timeout;
    for (int done = 0; !done;) {
      MPI_Testall(2, r, &done, MPI_STATUSES_IGNORE);
      if (!done && Clock::now() > deadline) {
        throw Error("creating the MPI communicator timed out after " +
                    std::to_string(options.timeout.count()) +
                    " ms: not every rank of MPI_COMM_WORLD created one");
      }
      if (!done) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    listen(deadline);
  });
  runtime.add_wake_hook(this, [this] { poll_control(); });
}

void MpiCommunicator::listen(Clock::time_point deadline) {
  MPI_Comm_set_errhandler(data_, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(control_, MPI_ERRORS_RETURN);
  learn_hosts(deadline);
  check(MPI_Irecv(notice_, kNoticeBytes, MPI_CHAR, MPI_ANY_SOURCE, kTagNotice, control_,
                  &notice_request_),
        "MPI_Irecv");
}

MpiCommunicator::MpiCommunicator(MpiCommunicator& parent, int color, const Options& options)
    : Front(options), segment_bytes_(parent.segment_bytes_), parent_(&parent) {
  Runtime& runtime = Runtime::get();
  runtime.progress().run([&] {
    // MPI_Comm_split blocks until every rank calls it; host_group() has just passed a barrier
    // of the parent (with its timeout), so every rank is here.
    check(MPI_Comm_split(parent.data_, color, parent.rank_, &data_), "MPI_Comm_split");
    check(MPI_Comm_split(parent.control_, color, parent.rank_, &control_), "MPI_Comm_split");
    check(MPI_Comm_rank(data_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(data_, &size_), "MPI_Comm_size");
    listen(Clock::now() + options.timeout);
  });
  runtime.add_wake_hook(this, [this] { poll_control(); });
  std::lock_guard<std::mutex> lock(parent.children_mu_);
  parent.children_.push_back(this);
  if (parent.failed()) fail(parent.reason(), false);
}

std::unique_ptr<Communicator> MpiCommunicator::host_group(int ranks_per_host) {
  return split(ranks_per_host, rank_ / std::max(ranks_per_host, 1));
}

std::unique_ptr<Communicator> MpiCommunicator::peer_group(int ranks_per_host) {
  return split(ranks_per_host, rank_ % std::max(ranks_per_host, 1));
}

std::unique_ptr<Communicator> MpiCommunicator::split(int ranks_per_host, int color) {
  if (ranks_per_host < 1 || size_ % ranks_per_host != 0) {
    throw UsageError("ranks per host must divide the " + std::to_string(size_) + " ranks, got " +
                     std::to_string(ranks_per_host));
  }
  barrier();  // every rank is here, or this throws after the timeout: the split cannot hang
  Options options;
  options.timeout = timeout();
  options.mpi_segment_bytes = segment_bytes_;
  return std::make_unique<MpiCommunicator>(*this, color, options);
}

void MpiCommunicator::learn_hosts(Clock::time_point deadline) {
  // Every rank's host name, so that a rank that stops answering is named with its host. Fixed
  // size, so one nonblocking all-gather on the control communicator carries them.
  std::vector<char> names(std::size_t(size_) * MPI_MAX_PROCESSOR_NAME, '\0');
  char mine[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  check(MPI_Get_processor_name(mine, &len), "MPI_Get_processor_name");
  MPI_Request r;
  check(MPI_Iallgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME,
                       MPI_CHAR, control_, &r),
        "MPI_Iallgather");
  for (int done = 0; !done;) {
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (!done && Clock::now() > deadline) {
      throw Error("creating the MPI communicator timed out: not every rank sent its host name");
    }
    if (!done) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  hosts_.clear();
  for (int r = 0; r < size_; ++r) {
    const char* name = names.data() + std::size_t(r) * MPI_MAX_PROCESSOR_NAME;
    hosts_.emplace_back(name, strnlen(name, MPI_MAX_PROCESSOR_NAME));
  }
}

int MpiCommunicator::ranks_per_host() const {
  // Hosts of equal size, each a run of consecutive ranks (as mpirun fills them by slot).
  int per_host = 1;
  while (per_host < size_ && hosts_[per_host] == hosts_[0]) ++per_host;
  if (size_ % per_host != 0) return 0;
  for (int r = 0; r < size_; ++r) {
    if (hosts_[r] != hosts_[r - r % per_host]) return 0;
    if (r % per_host == 0 && r > 0 && hosts_[r] == hosts_[r - 1]) return 0;
  }
  return per_host;
}

std::string MpiCommunicator::where(const std::vector<int>& ranks) const {
  // On one host the names say nothing more; across hosts, each late rank's.
  if (std::all_of(hosts_.begin(), hosts_.end(),
                  [&](const std::string& h) { return h == hosts_[0]; })) {
    return {};
  }
  std::string s = " (";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    s += (i == 0 ? "rank " : ", rank ") + std::to_string(ranks[i]) + " is on host " +
         printable(hosts_[ranks[i]]);
  }
  return s + ")";
}

MpiCommunicator::~MpiCommunicator() {
  if (parent_) {
    std::lock_guard<std::mutex> lock(parent_->children_mu_);
    std::erase(parent_->children_, this);
  }
  Runtime& runtime = Runtime::get();
  runtime.progress().drain();
  runtime.remove_wake_hook(this);
  runtime.progress().run([this] {
    poll_control();  // a notice this rank still owes its peers
    if (notice_request_ != MPI_REQUEST_NULL) {
      MPI_Cancel(&notice_request_);
      MPI_Request_free(&notice_request_);
    }
    MPI_Comm_free(&data_);
    MPI_Comm_free(&control_);
  });
}

ProgressThread& MpiCommunicator::progress() {
  return Runtime::get().progress();
}

void MpiCommunicator::abort_group(const std::string& reason) noexcept {
  fail(reason, true);
  Runtime::get().progress().poke();  // the progress thread sends the notice
}

void MpiCommunicator::fail(const std::string& reason, bool tell_peers) noexcept {
  if (failure_.fail(reason) && tell_peers) notice_pending_.store(true, std::memory_order_release);
  // Ranks waiting in a host group of this one fail with it (their peers hear of it here).
  std::lock_guard<std::mutex> lock(children_mu_);
  for (MpiCommunicator* child : children_) child->fail(reason, false);
}

void MpiCommunicator::send_notice() {
  // Sent once, to every peer; small enough to go eagerly, so the requests are let go.
  const std::string text = reason().substr(0, kNoticeBytes - 1);
  static_assert(kNoticeBytes > 1);
  outgoing_notice_ = text;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    MPI_Request r;
    if (MPI_Isend(outgoing_notice_.data(), static_cast<int>(outgoing_notice_.size()), MPI_CHAR,
                  peer, kTagNotice, control_, &r) == MPI_SUCCESS) {
      MPI_Request_free(&r);
      moved_.control.fetch_add(outgoing_notice_.size(), std::memory_order_relaxed);
    }
  }
  notice_sent_ = true;
}

void MpiCommunicator::poll_control() {
  if (notice_pending_.load(std::memory_order_acquire) && !notice_sent_) send_notice();
  if (notice_request_ == MPI_REQUEST_NULL) return;
  int arrived = 0;
  MPI_Status status;
  MPI_Test(&notice_request_, &arrived, &status);
  if (!arrived) return;
  int len = 0;
  MPI_Get_count(&status, MPI_CHAR, &len);
  fail(std::string(notice_, static_cast<std::size_t>(std::max(len, 0))), false);
  notice_request_ = MPI_REQUEST_NULL;  // once failed, always failed: no more notices needed
}

void MpiCommunicator::post_send(const void* data, std::size_t bytes, int peer) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t done = 0; done < bytes; done += kMaxMessage) {
    const int n = static_cast<int>(std::min(kMaxMessage, bytes - done));
    requests_.push_back(MPI_REQUEST_NULL);
    check(MPI_Isend(p + done, n, MPI_BYTE, peer, kTagData, data_, &requests_.back()), "MPI_Isend");
    request_peer_.push_back(peer);
    request_is_recv_.push_back(false);
  }
  moved_.count(moving_, bytes, 0);
}

void MpiCommunicator::post_recv(void* data, std::size_t bytes, int peer) {
  auto* p = static_cast<unsigned char*>(data);
  for (std::size_t done = 0; done < bytes; done += kMaxMessage) {
    const int n = static_cast<int>(std::min(kMaxMessage, bytes - done));
    requests_.push_back(MPI_REQUEST_NULL);
    check(MPI_Irecv(p + done, n, MPI_BYTE, peer, kTagData, data_, &requests_.back()), "MPI_Irecv");
    request_peer_.push_back(peer);
    request_is_recv_.push_back(true);
  }
  moved_.count(moving_, 0, bytes);
}

void MpiCommunicator::cancel_posted() noexcept {
  for (std::size_t i = 0; i < requests_.size(); ++i) {
    if (requests_[i] == MPI_REQUEST_NULL) continue;
    if (request_is_recv_[i]) MPI_Cancel(&requests_[i]);
    MPI_Request_free(&requests_[i]);
  }
  requests_.clear();
  request_peer_.clear();
  request_is_recv_.clear();
}

void MpiCommunicator::give_up(const Call& call, const std::string& why) {
  cancel_posted();
  fail(why, true);
  poll_control();  // sends the notice now
  throw Error(reason());
}

void MpiCommunicator::wait_posted(const Call& call, const char* stage) {
  // Polling is how MPI makes progress (a single-copy receive is done inside the poll), so
  // poll hard at first; then yield, then sleep a little, so as not to take the core from
  // the computation this collective overlaps.
  const auto start = Clock::now();
  std::vector<int> done_index(requests_.size());
  int active = static_cast<int>(requests_.size());
  for (long polls = 0;; ++polls) {
    int completed = 0;
    if (active > 0) {
      check(MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &completed,
                         done_index.data(), MPI_STATUSES_IGNORE),
            "MPI_Testsome");
      if (completed == MPI_UNDEFINED) completed = active;
      active -= completed;
    }
    if (active == 0) {
      requests_.clear();
      request_peer_.clear();
      request_is_recv_.clear();
      return;
    }
    poll_control();
    if (failed()) give_up(call, reason());
    const auto now = Clock::now();
    if (now >= deadline_) {
      // Who is late: the peers whose messages have not come; failing that, whose receives
      // of ours have not completed.
      std::vector<int> late;
      for (bool recv : {true, false}) {
        for (std::size_t i = 0; i < requests_.size(); ++i) {
          if (requests_[i] != MPI_REQUEST_NULL && request_is_recv_[i] == recv &&
              std::find(late.begin(), late.end(), request_peer_[i]) == late.end()) {
            late.push_back(request_peer_[i]);
          }
        }
        if (!late.empty()) break;
      }
      std::sort(late.begin(), late.end());
      const std::string after = " timed out after " + std::to_string(timeout_.count()) + " ms: ";
      give_up(call, describe(call) + after + rank_list(late) +
                        (std::string(stage) == "arrive" ? " did not arrive"
                                                        : " did not complete the transfer") +
                        where(late));
    }
    if (completed > 0) continue;
    const auto waited = now - start;
    if (waited < std::chrono::microseconds(50)) continue;
    if (waited < std::chrono::milliseconds(2)) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

unsigned char* MpiCommunicator::staging(std::size_t bytes) {
  std::lock_guard lock(staging_mu_);
  if (staging_.size() < bytes) {
    staging_ = {};  // the old buffer goes first: never both at once
    staging_bytes_.store(0, std::memory_order_relaxed);
    staging_ = Buffer<unsigned char>(ledger_, Category::comm_buffers, bytes);  // touched here
    staging_bytes_.store(bytes, std::memory_order_relaxed);
  }
  return staging_.data();
}

std::size_t MpiCommunicator::staging_bytes_for(std::size_t count, std::size_t elem_bytes) const {
  if (size_ == 1) return 0;
  const std::size_t capacity = shard_of(count, size_, rank_).capacity;
  const std::size_t seg = std::min(std::max<std::size_t>(segment_bytes_ / elem_bytes, 1), capacity);
  return 2 * std::size_t(size_ - 1) * seg * elem_bytes;
}

void MpiCommunicator::reserve(std::size_t count, DType dtype) {
  if (const std::size_t bytes = staging_bytes_for(count, dtype_size(dtype)); bytes > 0) {
    staging(bytes);
  }
}

void MpiCommunicator::set_ledger(Ledger* ledger) {
  std::lock_guard lock(staging_mu_);
  staging_.recount(ledger);
  ledger_ = ledger;
}

void MpiCommunicator::arrive(const Work& work, Clock::time_point deadline) {
  poll_control();  // a peer's notice fails this collective before it starts
  if (failed()) throw Error(reason());
  deadline_ = deadline;
  timeout_ = work.timeout();
  calls_.assign(size_, WireCall{});
  calls_[rank_] = to_wire(work.call());
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    requests_.push_back(MPI_REQUEST_NULL);
    check(MPI_Irecv(&calls_[peer], sizeof(WireCall), MPI_BYTE, peer, kTagCall, data_,
                    &requests_.back()),
          "MPI_Irecv");
    request_peer_.push_back(peer);
    request_is_recv_.push_back(true);
  }
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    requests_.push_back(MPI_REQUEST_NULL);
    check(MPI_Isend(&calls_[rank_], sizeof(WireCall), MPI_BYTE, peer, kTagCall, data_,
                    &requests_.back()),
          "MPI_Isend");
    moved_.control.fetch_add(sizeof(WireCall), std::memory_order_relaxed);
    // A send that cannot complete says nothing of who is missing: blame the receives.
    request_peer_.push_back(peer);
    request_is_recv_.push_back(false);
  }
  wait_posted(work.call(), "arrive");
  peer_calls_.resize(size_);
  for (int r = 0; r < size_; ++r) peer_calls_[r] = from_wire(calls_[r]);
}

void MpiCommunicator::move_data(const Work& work, Clock::time_point /*deadline: deadline_*/) {
  collective(work.call());
}

}  // namespace zerodp::comm::mpi

namespace zerodp::comm {

std::unique_ptr<Communicator> make_mpi_communicator(const Options& options) {
  return std::make_unique<mpi::MpiCommunicator>(options);
}

}  // namespace zerodp::comm
