// The step time of zerodp's own engine on a link, predicted from its schedule: which
// collectives it issues, when, and where it waits for them (cell G of the seed, for this
// engine rather than for a free overlap fraction).
//
// The schedule is the engine's (src/zero/engine.cc), replayed with each rank's compute thread
// and one link that carries one collective at a time, in issue order (the backend's progress
// thread), starting when the last rank issued it:
//   forward, unit by unit    stages 1, 2: wait for the unit's parameter all-gathers, issued
//                            after the previous step's update (with overlap) or waited there;
//                            stage 3: gather the unit (and, with prefetch, issue the next
//                            unit's gather first), wait, compute, release
//   backward, unit by unit   stage 3 gathers again, as in forward; after a unit's backward its
//                            buckets are reduced: stage 0 all-reduces and stage 1
//                            reduce-scatters on the last micro-step; stages 2 and 3
//                            reduce-scatter every micro-step through two staging buffers (a
//                            third bucket waits for the oldest to land)
//   end of backward          wait for every reduction; one scalar all-reduce, waited
//   optimizer                compute; stages 1, 2 then issue every bucket's all-gather
// Without overlap every collective is waited as soon as it is issued. The step is the third
// step replayed, so a steady state's gathers carried over from the previous step are in it.
//
// A collective's time on the link is what the busiest host sends in it, over the payload rate,
// plus the latency of its messages (the MPI backend's algorithm, comm/communicator.h): one delay
// for the handshake, and per data phase (an all-reduce has two) one round trip for the rendezvous
// of each segment. Ranks fill hosts in order; ranks on one host exchange through shared memory,
// taken as free. Left out: the software cost of a collective and the compute the progress
// thread takes from the ranks; the compute it is given is measured with that thread running,
// and `measure` gives it a link whose rate is the shaper's times the pace its collectives kept
// beside compute (run/measurement.h's link_beside_compute).
//
// The compute it replays is either what a run measured, step by step and rank by rank, or a
// prediction made before any rank runs, the planner's way (plan/step_model.h): each unit's
// FLOPs over the rates the model's kernels reached on this CPU (KernelRates, measured on one
// rank without communication: run/measurement.h).
//
// Contract: pure; requires compute with one forward and one backward figure per unit of
// run.model (seconds, finite, >= 0), run.ranks a multiple of ranks_per_host, and, when the
// ranks span more than one host, a link rate > 0 (on one host the link is never used). The
// payload rate is the link's rate over Link::framing.
#pragma once

#include <vector>

#include "zerodp/predict/peak.h"

namespace zerodp::predict {

struct Link {
  double bits_per_second = 0;  // each host's rate onto the link (what a shaper limits)
  double delay_seconds = 0;    // one way
  // Bytes on the link per byte of payload: TCP over IPv4 over Ethernet at MTU 1500, with
  // timestamps, puts 1448 bytes of payload in each 1514-byte frame.
  double framing = 1514.0 / 1448.0;
};

// Where a step's compute goes, waits for collectives excluded: what the engine measures
// (StepResult's unit and optimizer seconds), or any estimate of it.
struct StepCompute {
  std::vector<double> forward, backward;  // per unit, over the step's micro-steps
  double optimizer = 0;                   // the norm, the update and the rounding to 16 bits
  double other = 0;                       // the rest: drawing samples, the loss
  // The share of its pace compute keeps while the link carries a collective (moving bytes
  // takes processor time too): 1 for compute measured in the run itself, which already ran
  // beside its collectives; KernelRates::beside_link for compute predicted from rates. > 0.
  double beside_link = 1;
  double total() const;  // at full pace
};

// The FLOPs of one unit's matrix products in one micro-step, as model/gemm.h counts a product
// (2 m n k): the MLP's layer 2 B W² forward, 4 B W² backward (2 B W² for the first layer, whose
// input needs no gradient); a GPT block 24 B T C² forward and 48 B T C² backward plus causal
// attention's scores and values, computed in blocks of 64 queries over the keys they see;
// the final unit's LM head 2 B T C V and 4 B T C V; the embeddings none. With activation
// checkpointing a block's backward adds its forward again. Under LoRA (a frozen base) the
// block's backward computes the inputs' gradients alone (24 B T C² less) and the LM head's
// 2 B T C V; each adapter of rank R on a projection adds 2 B T R (in + out) forward and
// 4 B T R (in + out) backward.
struct UnitFlops {
  double forward = 0, backward = 0;
};
std::vector<UnitFlops> unit_flops(const EngineModel& model, std::uint64_t micro_batch);

// What the model's kernels reach on this CPU: FLOPs a second of the units' forward and
// backward (their products and everything else each unit does, over the products' FLOPs),
// parameters a second of the optimizer's step, and the seconds a step spends elsewhere
// (drawing samples, the loss). All finite and > 0 but `other_seconds` (>= 0).
struct KernelRates {
  double forward_flops_per_second = 0;
  double backward_flops_per_second = 0;
  double optimizer_params_per_second = 0;
  double other_seconds = 0;
  // The units' pace while the link carries collectives over their pace alone: their seconds
  // alone over their seconds beside a stream of all-gathers on the link. 1 on one host.
  double beside_link = 1;
};
// The parameters rank `rank` updates in the optimizer's step: all of them at stage 0, its
// shard (its chunk of every bucket) above.
std::uint64_t optimizer_params(const EngineRun& run, int rank);
// Rank `rank`'s compute in one step of `run`, predicted: every unit's FLOPs over run.grad_accum
// micro-steps at the rates (plan::compute_seconds), the optimizer's parameters at its rate.
StepCompute compute_at_rates(const EngineRun& run, int rank, const KernelRates& rates);

struct ScheduledStep {
  double step_seconds = 0;
  double compute_seconds = 0;  // the slowest rank's, slowed beside the link included
  double comm_seconds = 0;     // the link busy with the step's collectives
  double exposed_seconds = 0;  // the step less its compute: waiting for the link
  double efficiency = 1;       // compute / step
  int collectives = 0;         // issued per step, the scalar all-reduce included
};

enum class LinkCollective { reduce_scatter, all_gather, all_reduce };

// Seconds one collective of `count` elements of elem_bytes keeps the link busy.
double collective_seconds(const EngineRun& run, int ranks_per_host, const Link& link,
                          LinkCollective kind, std::uint64_t count, std::uint64_t elem_bytes);

// The engine's step under run.stage, run.prefetch and `overlap`, every rank computing alike.
ScheduledStep predict_step(const EngineRun& run, int ranks_per_host, const Link& link,
                           const StepCompute& compute, bool overlap);
// The same with each rank's own compute (a collective waits for its last rank to issue it; the
// step ends when the last rank is done). compute_seconds is the largest rank's.
ScheduledStep predict_step(const EngineRun& run, int ranks_per_host, const Link& link,
                           const std::vector<StepCompute>& ranks, bool overlap);

}  // namespace zerodp::predict
