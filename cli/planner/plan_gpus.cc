// `zerodp plan`'s GPUs beyond their count: nodes and the two levels (--gpus-per-node,
// --nodes, --intra-bandwidth, --inter-bandwidth), ZeRO++ (--zeropp or the DeepSpeed config),
// and the GPU peak's terms (--buffers, --cuda-overhead, --largest-layer).
#include <climits>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "output.h"
#include "plan_flags.h"
#include "zerodp/catalog/gpus.h"
#include "zerodp/common/error.h"
#include "zerodp/common/text_wrap.h"
#include "zerodp/common/units.h"
#include "zerodp/deepspeed/runtime.h"
#include "zerodp/deepspeed/topology.h"
#include "zerodp/report/table.h"

namespace zerodp::cli {

void read_gpu_memory(const PlanFlags& f, report::PlanInputs& in) {
  if (!f.gpu.empty()) {
    if (!f.gpu_memory.empty()) {
      throw UsageError("--gpu-memory: not with --gpu, which gives the card's memory; give one");
    }
    in.gpu = catalog::find_gpu(f.gpu);
    if (!in.gpu) {
      const std::string near = catalog::suggest_gpu(f.gpu);
      throw UsageError("--gpu: unknown GPU " + shown(f.gpu) +
                       (near.empty() ? "" : "; did you mean '" + near + "'?") +
                       " (--list-gpus lists them; --gpu-memory gives any other)");
    }
    in.gpu_memory = in.gpu->reported_bytes;
    return;
  }
  if (!f.gpu_memory.empty()) in.gpu_memory = units::parse_capacity(f.gpu_memory, "--gpu-memory");
}

void list_gpus(bool json) {
  if (json) {
    nlohmann::json all = nlohmann::json::array();
    for (const catalog::GpuSpec& g : catalog::gpu_catalogue()) {
      all.push_back({{"name", g.name},
                     {"device", g.device},
                     {"sold_as", g.sold_as},
                     {"sold_gb", g.sold_gb},
                     {"reported_bytes", g.reported_bytes},
                     {"reported_as", g.reported_as},
                     {"source", g.source}});
    }
    std::fprintf(out(), "%s\n", all.dump(2).c_str());
    return;
  }
  std::fprintf(out(), "%-12s %-30s %-28s %s\n", "--gpu", "device", "sold as", "reports to CUDA");
  for (const catalog::GpuSpec& g : catalog::gpu_catalogue()) {
    std::fprintf(out(), "%-12.*s %-30.*s %-28.*s %s = %s\n", int(g.name.size()), g.name.data(),
                 int(g.device.size()), g.device.data(), int(g.sold_as.size()), g.sold_as.data(),
                 units::format_bytes_in(g.reported_bytes, {"GiB", double(1ull << 30)}).c_str(),
                 units::format_bytes_in(g.reported_bytes, {"GB", 1e9}).c_str());
  }
  std::fprintf(out(), "\n%s\n",
               fill_words("reported: the smallest total a public report of the card gives "
                          "(PyTorch's \"total capacity\"); sources: plan --gpu NAME prints its "
                          "own, docs/planner.md lists them all",
                          report::kPlanColumns, 2)
                   .c_str());
}

// --gpus-per-node and --nodes: N = n·k, and the two levels when something asks for them.
void read_topology(const PlanFlags& f, const ZeroPlusPlusAsked& asked, report::PlanInputs& in) {
  std::optional<int> per_node;
  if (!f.gpus_per_node.empty()) {
    per_node = parse_gpu_count(f.gpus_per_node, "--gpus-per-node", 1, 1 << 20);
  }
  if (!f.nodes.empty()) {
    if (!per_node) throw UsageError("--nodes: needs --gpus-per-node, the GPUs of each node");
    const int nodes = parse_gpu_count(f.nodes, "--nodes", 1, 1 << 20);
    const std::uint64_t gpus = std::uint64_t(*per_node) * nodes;
    if (in.gpus && std::uint64_t(*in.gpus) != gpus) {
      throw UsageError("--gpus: " + std::to_string(*in.gpus) +
                       " is not --gpus-per-node x --nodes (" + std::to_string(gpus) +
                       "); give one or the other");
    }
    if (gpus > INT_MAX) {
      throw UsageError("--nodes: expected at most " + std::to_string(INT_MAX) + " GPUs in all");
    }
    in.gpus = static_cast<int>(gpus);
  }
  if (per_node && in.gpus && *per_node > *in.gpus) {
    throw UsageError("--gpus-per-node: expected at most --gpus (" + std::to_string(*in.gpus) +
                     "), got " + shown(f.gpus_per_node));
  }
  in.gpus_per_node = per_node;
  const std::string asker = !f.nodes.empty()             ? "--nodes"
                            : !f.intra_bandwidth.empty() ? "--intra-bandwidth"
                            : !f.inter_bandwidth.empty() ? "--inter-bandwidth"
                            : !asked.any()               ? ""
                            : asked.source == "--zeropp" ? "--zeropp"
                                                         : asked.source + "'s ZeRO++ keys";
  if (asker.empty()) return;
  if (!per_node) {
    throw UsageError("--gpus-per-node: required with " + asker +
                     ", the GPUs of each node (the level inside a node)");
  }
  if (!in.gpus) throw UsageError("--gpus: required with " + asker + " (or --nodes)");
  if (*in.gpus % *per_node != 0) {
    throw UsageError("--gpus-per-node: expected a divisor of --gpus (" + std::to_string(*in.gpus) +
                     ") for whole nodes, got " + shown(f.gpus_per_node));
  }
  in.topology = deepspeed::Topology{*per_node, *in.gpus / *per_node};
  if (!f.intra_bandwidth.empty()) {
    in.intra_bandwidth = units::parse_bandwidth(f.intra_bandwidth, "--intra-bandwidth");
  }
  if (!f.inter_bandwidth.empty()) {
    in.inter_bandwidth = units::parse_bandwidth(f.inter_bandwidth, "--inter-bandwidth");
  }
  in.zeropp = asked.request;
  in.zeropp_source = asked.source;
  if (in.zeropp.hpz && in.zeropp.hpz_size == 0) {  // --zeropp hpz: a partition over the node
    if (*per_node == 1) {
      throw UsageError("--zeropp: hpz needs nodes of more than one GPU (--gpus-per-node 1)");
    }
    in.zeropp.hpz_size = *per_node;
  }
  if (*per_node % in.zeropp.hpz_span() != 0) {
    throw UsageError(in.zeropp_source + ": hpZ's partition of " +
                     std::to_string(in.zeropp.hpz_size) + " GPUs must divide --gpus-per-node (" +
                     std::to_string(*per_node) + ") to stay inside a node");
  }
}

// --zeropp qwz,hpz,qgz (or none); nullopt without the flag. hpz spans the node.
std::optional<ZeroPlusPlus> read_zeropp(const PlanFlags& f) {
  if (f.zeropp.empty()) return std::nullopt;
  return parse_zeropp(f.zeropp, "--zeropp");
}

// The GPU peak's terms: DeepSpeed's buffers and the CUDA allowance. On by default for a
// published model or a DeepSpeed config (a real run on real GPUs); off for the seed's --params
// arithmetic unless asked for.
void read_runtime(const PlanFlags& f, const catalog::ModelConfig& config, report::PlanInputs& in) {
  const bool real_run = in.model.has_value() || !in.deepspeed_config.empty();
  if (!f.largest_layer.empty()) {
    if (in.model) {
      throw UsageError("--largest-layer: not with --model or --model-config, which give it");
    }
    const std::uint64_t largest = units::parse_count(f.largest_layer, "--largest-layer");
    if (in.params && largest > *in.params) {
      throw UsageError("--largest-layer: expected at most --params (" +
                       units::format_count(*in.params) + "), got " + shown(f.largest_layer));
    }
    in.largest_layer = largest;
  } else if (in.model) {
    in.largest_layer = in.model->params.largest_layer_params;
  }
  if (f.buffers.empty()) {
    in.buffers = real_run;
  } else if (f.buffers == "deepspeed" || f.buffers == "none") {
    in.buffers = f.buffers == "deepspeed";
  } else {
    throw UsageError("--buffers: expected deepspeed or none, got " + shown(f.buffers));
  }
  if (in.buffers) {
    if (!in.params) throw UsageError("--buffers: needs a model (--params, --model)");
    if (!in.largest_layer) {
      throw UsageError(
          "--largest-layer: required with --params and " +
          (f.buffers.empty() ? "--deepspeed-config" : std::string("--buffers deepspeed")) +
          " (ZeRO-3 gathers the largest layer whole; or --buffers none), a count such "
          "as 65M");
    }
    // A config brought its own sizes (report::apply_deepspeed_config).
    if (in.deepspeed_config.empty()) in.buffers_source = "DeepSpeed's defaults";
    if (in.model) {
      in.persistent_params =
          catalog::small_tensor_params(config, in.buffer_settings.param_persistence_threshold);
      in.reuse_kept_params =
          catalog::reuse_kept_params(config, in.buffer_settings.max_reuse_distance);
    }
  }
  if (!f.cuda_overhead.empty()) {
    // "0" needs no unit: it turns the allowance off.
    in.cuda_overhead =
        f.cuda_overhead == "0"
            ? 0
            : units::parse_bytes(f.cuda_overhead, "--cuda-overhead", units::Zero::allowed);
    in.cuda_overhead_source = "--cuda-overhead " + f.cuda_overhead;
  } else if (real_run) {
    in.assumptions.push_back({field_ref("cuda_overhead"),
                              units::format_bytes(deepspeed::kDefaultCudaOverhead),
                              "CUDA context and allocator"});
    in.cuda_overhead = deepspeed::kDefaultCudaOverhead;
    in.cuda_overhead_source =
        "the default: the top of Hugging Face's 1-2 GB for the context and kernels; "
        "--cuda-overhead to change";
  }
}

}  // namespace zerodp::cli
