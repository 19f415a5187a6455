#include "model/onednn_matmul.h"

#include "zerodp/common/error.h"

#if ZERODP_HAVE_ONEDNN

#include <dlfcn.h>

#include <bit>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <unordered_map>

#include "model/bf16_pack.h"
#include "model/gemm_clock.h"

namespace zerodp::model::onednn {
namespace {

using dim = dnnl::memory::dim;
using dt = dnnl::memory::data_type;

constexpr std::size_t kAlign = 64;  // bytes: a cache line, and an AVX-512 register

std::size_t aligned(std::size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

// Everything a primitive is specialised for. In bf16 the operands are packed, so their leading
// dimensions are not part of it (they are set to 0 in the key).
struct Key {
  Compute compute;
  bool ta, tb;
  std::size_t m, n, k, lda, ldb, ldc;
  std::uint32_t alpha_bits, beta_bits;
  int threads;
  auto operator<=>(const Key&) const = default;
};

struct Entry {
  dnnl::matmul product;
  dnnl::memory::desc a, b, c, scratchpad;
  std::size_t operand_bytes = 0;  // bf16: both packed operands, aligned; fp32: 0
  std::size_t scratch_bytes = 0;  // operand_bytes + oneDNN's scratchpad
};

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// oneDNN (Debian's build) runs on OpenMP: its threads are the calling thread's OpenMP threads.
// The functions are looked up in the process rather than linked, so that a build by a compiler
// with another OpenMP runtime (clang's libomp) still sets the one oneDNN reads (libgomp).
void use_threads(int threads) {
  using Get = int (*)();
  using Set = void (*)(int);
  static const Get get = reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  static const Set set = reinterpret_cast<Set>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (get != nullptr && set != nullptr && get() != threads) set(threads);
}

// op(X) [rows x cols] as stored: X row-major with row stride ld, or X^T of it.
dnnl::memory::desc operand(std::size_t rows, std::size_t cols, bool trans, std::size_t ld,
                           dt type) {
  const dim r = static_cast<dim>(rows), c = static_cast<dim>(cols), l = static_cast<dim>(ld);
  return trans ? dnnl::memory::desc({r, c}, type, {1, l})
               : dnnl::memory::desc({r, c}, type, {l, 1});
}

std::unique_ptr<Entry> create(const Key& key) {
  use_threads(key.threads);
  const float alpha = std::bit_cast<float>(key.alpha_bits);
  const float beta = std::bit_cast<float>(key.beta_bits);
  auto e = std::make_unique<Entry>();
  const bool bf16 = key.compute == Compute::bf16;
  const dt input = bf16 ? dt::bf16 : dt::f32;
  // bf16: the stored operands packed, so the row stride of A is its stored width.
  const std::size_t lda = bf16 ? (key.ta ? key.m : key.k) : key.lda;
  const std::size_t ldb = bf16 ? (key.tb ? key.k : key.n) : key.ldb;
  e->a = operand(key.m, key.k, key.ta, lda, input);
  e->b = operand(key.k, key.n, key.tb, ldb, input);
  e->c = dnnl::memory::desc({dim(key.m), dim(key.n)}, dt::f32, {dim(key.ldc), 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) {
    dnnl::post_ops sum;
    sum.append_sum(beta);
    attr.set_post_ops(sum);
  }
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e->a, e->b, e->c), attr, cpu_engine());
  e->scratchpad = pd.scratchpad_desc();
  e->product = dnnl::matmul(pd);
  if (bf16) e->operand_bytes = aligned(2 * key.m * key.k) + aligned(2 * key.k * key.n);
  e->scratch_bytes = e->operand_bytes + e->scratchpad.get_size();
  return e;
}

Key make_key(Compute compute, bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k,
             float alpha, std::size_t lda, std::size_t ldb, float beta, std::size_t ldc) {
  const bool bf16 = compute == Compute::bf16;
  return {compute,
          ta,
          tb,
          m,
          n,
          k,
          bf16 ? 0 : lda,
          bf16 ? 0 : ldb,
          ldc,
          std::bit_cast<std::uint32_t>(alpha),
          std::bit_cast<std::uint32_t>(beta),
          std::max(blas_threads(), 1)};
}

// The cached primitive for the product, created on first use; null where oneDNN has none for
// it here (`why` then says oneDNN's reason). Entries are never removed, so a returned pointer
// stays valid; a model has a few dozen shapes.
const Entry* find(const Key& key, std::string* why = nullptr) {
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<Entry>> cache;
  std::lock_guard lock(mutex);
  const auto found = cache.find(key);
  if (found != cache.end()) return found->second.get();
  try {
    return cache.emplace(key, create(key)).first->second.get();
  } catch (const dnnl::error& e) {
    if (why != nullptr) *why = e.what();
    return nullptr;
  }
}

const Entry& entry(const Key& key) {
  std::string why;
  const Entry* e = find(key, &why);
  ZERODP_CHECK_MSG(e != nullptr, "gemm: oneDNN has no " + std::string(compute_name(key.compute)) +
                                     " matmul for this product here: " + why);
  return *e;
}

// One thread's memory objects for an entry, made on its first call and pointed at each call's
// data (set_data_handle) rather than made per call: on the attention's small products, making
// them cost about 5 % of the product (bench_gemm, "attn scores" at 1 thread). Found without a
// lock.
struct Bound {
  const Entry* entry = nullptr;
  dnnl::memory a, b, c, scratchpad;
  std::unordered_map<int, dnnl::memory> args;
};

Bound& bound(const Key& key) {
  thread_local std::map<Key, Bound> own;
  Bound& it = own[key];
  if (it.entry == nullptr) {
    const Entry& e = entry(key);
    const dnnl::engine& engine = cpu_engine();
    it.a = dnnl::memory(e.a, engine, DNNL_MEMORY_NONE);
    it.b = dnnl::memory(e.b, engine, DNNL_MEMORY_NONE);
    it.c = dnnl::memory(e.c, engine, DNNL_MEMORY_NONE);
    it.args = {{DNNL_ARG_SRC, it.a}, {DNNL_ARG_WEIGHTS, it.b}, {DNNL_ARG_DST, it.c}};
    if (e.scratch_bytes > e.operand_bytes) {
      it.scratchpad = dnnl::memory(e.scratchpad, engine, DNNL_MEMORY_NONE);
      it.args.emplace(DNNL_ARG_SCRATCHPAD, it.scratchpad);
    }
    it.entry = &e;
  }
  return it;
}

}  // namespace

bool available(Compute compute) {
  // oneDNN decides by the CPU and the data types, not the shape: one product answers for all.
  static const bool fp32 =
      find(make_key(Compute::fp32, false, false, 16, 16, 16, 1.0f, 16, 16, 0.0f, 16));
  static const bool bf16 =
      find(make_key(Compute::bf16, false, false, 16, 16, 16, 1.0f, 16, 16, 0.0f, 16));
  return compute == Compute::bf16 ? bf16 : fp32;
}

std::size_t scratch_bytes(Compute compute, bool ta, bool tb, std::size_t m, std::size_t n,
                          std::size_t k, float alpha, std::size_t lda, std::size_t ldb, float beta,
                          std::size_t ldc) {
  if (m == 0 || n == 0 || k == 0) return 0;
  return entry(make_key(compute, ta, tb, m, n, k, alpha, lda, ldb, beta, ldc)).scratch_bytes;
}

std::optional<double> matmul(Compute compute, std::span<float> scratch, bool ta, bool tb,
                             std::size_t m, std::size_t n, std::size_t k, float alpha,
                             const float* a, std::size_t lda, const float* b, std::size_t ldb,
                             float beta, float* c, std::size_t ldc, GemmClock clock,
                             bool a_rounded) {
  Bound& it = bound(make_key(compute, ta, tb, m, n, k, alpha, lda, ldb, beta, ldc));
  const Entry& e = *it.entry;
  if (e.scratch_bytes > scratch.size_bytes()) return std::nullopt;
  auto* base = reinterpret_cast<unsigned char*>(scratch.data());
  void* a_data = const_cast<float*>(a);
  void* b_data = const_cast<float*>(b);
  double convert_seconds = 0.0;
  if (compute == Compute::bf16) {
    const double t0 = clock == GemmClock::off ? 0.0 : clock_seconds(clock);
    auto* a16 = reinterpret_cast<std::uint16_t*>(base);
    auto* b16 = reinterpret_cast<std::uint16_t*>(base + aligned(2 * m * k));
    if (!a_rounded) pack_bf16(a16, a, ta ? k : m, ta ? m : k, lda);
    pack_bf16(b16, b, tb ? n : k, tb ? k : n, ldb);
    a_data = a16;
    b_data = b16;
    if (clock != GemmClock::off) convert_seconds = clock_seconds(clock) - t0;
  }
  use_threads(std::max(blas_threads(), 1));
  thread_local dnnl::stream stream(cpu_engine());
  it.a.set_data_handle(a_data);
  it.b.set_data_handle(b_data);
  it.c.set_data_handle(c);
  if (e.scratch_bytes > e.operand_bytes) it.scratchpad.set_data_handle(base + e.operand_bytes);
  e.product.execute(stream, it.args);
  stream.wait();
  return convert_seconds;
}

}  // namespace zerodp::model::onednn

#else  // built without oneDNN

namespace zerodp::model::onednn {

bool available(Compute) {
  return false;
}

std::size_t scratch_bytes(Compute, bool, bool, std::size_t, std::size_t, std::size_t, float,
                          std::size_t, std::size_t, float, std::size_t) {
  ZERODP_CHECK_MSG(false, "gemm: zerodp was built without oneDNN");
  return 0;
}

std::optional<double> matmul(Compute, std::span<float>, bool, bool, std::size_t, std::size_t,
                             std::size_t, float, const float*, std::size_t, const float*,
                             std::size_t, float, float*, std::size_t, GemmClock, bool) {
  ZERODP_CHECK_MSG(false, "gemm: zerodp was built without oneDNN");
}

}  // namespace zerodp::model::onednn

#endif
