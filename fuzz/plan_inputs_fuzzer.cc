// Fuzz target: make_plan() on any PlanInputs the command line can produce, i.e. every value in
// the range its parsers accept (positive counts and bytes up to 2^64 - 1, GPU counts up to
// INT_MAX, P and G from 1 to 64 and K from 0 to 64, positive finite seconds and bandwidths,
// overlaps in [0, 1]), in any combination.
//
// Properties: make_plan() throws UsageError (one line) or returns a report whose every byte
// figure equals the closed form computed here in 128 bits, so a 64-bit overflow anywhere is a
// wrong figure, not a silent one; whose feasibility answers agree with those figures; whose
// times are finite with an efficiency in (0, 1]; and which prints as a table and as JSON.
#include <fuzzer/FuzzedDataProvider.h>

#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "zerodp/common/error.h"
#include "zerodp/plan/activations.h"
#include "zerodp/plan/step_model.h"
#include "zerodp/report/json.h"
#include "zerodp/report/notes.h"
#include "zerodp/report/report.h"
#include "zerodp/report/table.h"

namespace {

using namespace zerodp;
using namespace zerodp::plan;
using u128 = unsigned __int128;

[[noreturn]] void fail(const char* what, int stage = -1) {
  std::fprintf(stderr, "plan_inputs fuzzer: %s (stage %d)\n", what, stage);
  std::abort();
}
void expect(bool ok, const char* what, int stage = -1) {
  if (!ok) fail(what, stage);
}

// A 64-bit value of any magnitude: the fuzzer picks the bits and how many of them to keep.
std::uint64_t any_u64(FuzzedDataProvider& in, std::uint64_t min) {
  const int bits = in.ConsumeIntegralInRange(0, 64);
  const std::uint64_t raw = in.ConsumeIntegral<std::uint64_t>();
  const std::uint64_t value = bits == 64 ? raw : raw & ((std::uint64_t(1) << bits) - 1);
  return value < min ? min : value;
}

// A positive finite double of any magnitude, subnormals included ("1e-320s" parses).
double any_positive(FuzzedDataProvider& in) {
  const double d = std::fabs(std::bit_cast<double>(in.ConsumeIntegral<std::uint64_t>()));
  return std::isfinite(d) && d > 0 ? d : 1.0;
}

// Bytes per rank of Φ over N ranks at `stage`, per the seed's formula with whole elements.
u128 state_bytes(u128 params, u128 ranks, int stage, const BytesPerParam& b) {
  const u128 p = b.params, g = b.grads, k = b.optimizer, shard = (params + ranks - 1) / ranks;
  switch (stage) {
    case 0:
      return (p + g + k) * params;
    case 1:
      return (p + g) * params + k * shard;
    case 2:
      return p * params + (g + k) * shard;
    default:
      return (p + g + k) * shard;
  }
}

void check_report(const report::PlanInputs& in, const report::PlanReport& r) {
  const BytesPerParam& b = in.bpp;
  // The budget: what activations and the CUDA allowance leave, or 0 (a verdict, not an error)
  // when they alone reach the GPU memory.
  if (in.gpu_memory) {
    const u128 held = u128(in.activation_bytes) + in.cuda_overhead;
    const u128 budget = held >= *in.gpu_memory ? 0 : *in.gpu_memory - held;
    expect(r.budget && u128(*r.budget) == budget, "budget", -1);
    expect(r.activations_fill_gpu == (held >= *in.gpu_memory), "activations_fill_gpu", -1);
  }
  for (int i = 0; i < 4; ++i) {
    const report::StageReport& s = r.stages[i];
    if (in.params) {
      const u128 phi = *in.params;
      const u128 replicated = i == 0   ? u128(b.params) + b.grads + b.optimizer
                              : i == 1 ? u128(b.params) + b.grads
                              : i == 2 ? u128(b.params)
                                       : 0;
      expect(s.floor_bytes && *s.floor_bytes == replicated * phi, "floor bytes", i);
      if (in.gpus) {
        const u128 n = static_cast<unsigned>(*in.gpus);
        const u128 state = state_bytes(phi, n, i, b);
        expect(s.model_state_bytes && *s.model_state_bytes == state, "model state bytes", i);
        expect(s.total_bytes && *s.total_bytes == state + in.activation_bytes, "total bytes", i);
        // Ring: every collective sends at most all of the buffer but a rank's own chunk;
        // exactly (N-1)/N of it when N divides Φ.
        const u128 p = b.params, g = b.grads;
        const u128 per_element = i == 0 ? 2 * g : i == 3 ? 2 * p + g : p + g;
        expect(s.comm_ring && *s.comm_ring <= per_element * phi, "ring bytes bound", i);
        if (phi % n == 0) {
          expect(*s.comm_ring == per_element * phi / n * (n - 1), "ring bytes", i);
        }
        const u128 seed_payload = (i == 3 ? 2 * p + g : g) * phi * (n - 1) *
                                  (in.seed_directions == Directions::both ? 2 : 1);
        expect(s.comm_seed && *s.comm_seed == (seed_payload + n / 2) / n, "seed bytes", i);
        if (r.budget) expect(s.fits && *s.fits == (state <= *r.budget), "fits", i);
      }
      if (r.budget) {
        expect(s.min_gpus_asked, "min_gpus asked", i);
        if (s.min_gpus) {
          const std::uint64_t n = *s.min_gpus, node = in.round_to.value_or(1);
          expect(n >= 1 && n % node == 0, "min_gpus a multiple of the node", i);
          expect(state_bytes(phi, n, i, b) <= *r.budget, "min_gpus fits", i);
          if (node == 1 && n > 1) {
            expect(state_bytes(phi, n - 1, i, b) > *r.budget, "min_gpus - 1 does not fit", i);
          }
        } else if (!in.round_to || *in.round_to == 1) {
          // No N: not even N = Φ fits, one element per rank, the least the state gets.
          expect(state_bytes(phi, phi, i, b) > *r.budget, "no min_gpus though N = Φ fits", i);
        }
      }
    } else if (in.gpus && r.budget) {
      const u128 n = static_cast<unsigned>(*in.gpus);
      expect(s.max_params.has_value(), "max_params", i);
      const std::uint64_t m = *s.max_params;
      expect(state_bytes(m, n, i, b) <= *r.budget, "max_params fits", i);
      if (m < UINT64_MAX) {
        expect(state_bytes(u128(m) + 1, n, i, b) > *r.budget, "max_params + 1 fits too", i);
      }
    }
    if (s.step) {
      for (const auto* v :
           {&s.tokens_per_second_per_gpu, &s.mfu, &s.wall_clock_seconds, &s.gpu_hours, &s.cost}) {
        expect(!*v || std::isfinite(**v), "a predicted figure not finite", i);
      }
      expect(std::isfinite(s.step->step_seconds) && s.step->step_seconds > 0,
             "a predicted step not finite", i);
    }
    if (s.time) {
      const StepTime& t = *s.time;
      expect(std::isfinite(t.comm_seconds) && std::isfinite(t.exposed_seconds) &&
                 std::isfinite(t.hidden_seconds),
             "step time not finite", i);
      // 0 only when the true value is below the smallest double.
      expect(
          t.efficiency <= 1 && (t.efficiency > 0 || t.exposed_seconds / t.compute_seconds > 1e307),
          "efficiency outside (0, 1]", i);
    }
  }
  if (r.comm_ratio_seed) expect(std::isfinite(*r.comm_ratio_seed), "comm ratio");
  const std::string table = report::plan_table(r, false) + report::plan_table(r, true);
  expect(!table.empty(), "empty table");
  for (const std::string& note : report::plan_notes(r)) expect(!note.empty(), "empty note");
  const std::string json = report::plan_json(r);
  expect(nlohmann::json::parse(json)["stages"].size() == 4, "JSON without four stages");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  report::PlanInputs p;
  if (in.ConsumeBool()) p.params = any_u64(in, 1);
  if (in.ConsumeBool()) p.gpus = static_cast<int>(any_u64(in, 1) % INT_MAX) + 1;
  if (in.ConsumeBool()) p.gpu_memory = any_u64(in, 1);
  p.bpp.params = in.ConsumeIntegralInRange(1, 64);
  p.bpp.grads = in.ConsumeIntegralInRange(1, 64);
  p.bpp.optimizer = in.ConsumeIntegralInRange(0, 64);
  switch (in.ConsumeIntegralInRange(0, 2)) {
    case 1:
      p.activation_bytes = any_u64(in, 0);
      p.activations_given = true;
      break;
    case 2: {
      // As the command line derives them: all five shape flags, hidden a multiple of heads.
      TransformerShape shape{any_u64(in, 1), any_u64(in, 1), any_u64(in, 1), any_u64(in, 1),
                             any_u64(in, 1)};
      if (shape.hidden % shape.heads != 0) return -1;
      const auto bytes =
          activation_bytes(shape, static_cast<Checkpointing>(in.ConsumeIntegralInRange(0, 2)));
      if (!bytes) return -1;  // the command line rejects it first
      p.activation_bytes = *bytes;
      p.activations_given = true;
      p.activations_from = field_ref("layers") + ", " + field_ref("hidden") + ", " +
                           field_ref("heads") + ", " + field_ref("seq_len") + ", " +
                           field_ref("micro_batch");
      break;
    }
  }
  if (in.ConsumeBool()) p.round_to = any_u64(in, 1);
  if (in.ConsumeBool()) p.seed_directions = Directions::both;
  if (in.ConsumeBool()) p.compute_seconds = any_positive(in);
  if (in.ConsumeBool()) p.bandwidth = any_positive(in);
  if (in.ConsumeBool()) p.overlap = in.ConsumeProbability<double>();
  if (in.ConsumeBool()) p.comm_bytes = any_u64(in, 1);
  if (in.ConsumeBool()) {
    p.time_convention =
        in.ConsumeBool() ? report::CommConvention::seed : report::CommConvention::ring;
  }
  // The predicted step's inputs, as the front end fills them from a model, a card and links.
  if (in.ConsumeBool()) {
    report::PlanInputs::StepCompute c;
    c.forward_flops = any_positive(in);
    c.backward_flops = any_positive(in);
    c.model_flops = any_positive(in);
    c.tokens = any_u64(in, 1);
    c.layers = any_u64(in, 1);
    c.grad_accum = in.ConsumeIntegralInRange<std::uint64_t>(1, 1'000'000);
    p.step_compute = c;
  }
  if (in.ConsumeBool()) p.dense_flops = any_positive(in);
  if (in.ConsumeBool()) p.hfu = in.ConsumeProbability<double>();
  if (in.ConsumeBool() && p.gpus) {
    const int n = in.ConsumeIntegralInRange(1, 64);
    if (*p.gpus % n == 0) p.step_topology = deepspeed::Topology{n, *p.gpus / n};
    p.step_links = LinkRates{any_positive(in), any_positive(in)};
  }
  if (in.ConsumeBool()) p.tokens = double(any_u64(in, 1));
  if (in.ConsumeBool()) p.price_per_gpu_hour = in.ConsumeBool() ? 0.0 : any_positive(in);

  report::PlanReport report;
  try {
    report = report::make_plan(p);
  } catch (const InvalidArgument& e) {
    // Every refusal names the input at fault: first, by its field, and by the front end's name
    // for it when rendered.
    const std::string message = e.what();
    expect(!e.field().empty() && message.rfind(e.field(), 0) == 0,
           "InvalidArgument that does not open with its field");
    const std::string flagged = e.message([](std::string_view f) { return "--" + std::string(f); });
    expect(flagged.rfind("--" + e.field(), 0) == 0,
           "a rendered message that does not open with the flag");
    expect(message.find('\n') == std::string::npos, "InvalidArgument of several lines");
    return 0;
  } catch (const UsageError&) {
    expect(false, "a UsageError that names no input");
  }
  check_report(p, report);
  return 0;
}
