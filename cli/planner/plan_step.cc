// The predicted step's inputs: the card's dense rate and the efficiency its runs reach, the
// nodes and the links between GPUs, and the run's tokens and price (plan_flags.h).
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "output.h"
#include "plan_flags.h"
#include "zerodp/catalog/gpus.h"
#include "zerodp/catalog/links.h"
#include "zerodp/common/error.h"
#include "zerodp/common/text_wrap.h"
#include "zerodp/common/units.h"
#include "zerodp/report/table.h"

namespace zerodp::cli {
namespace {

std::string link_names(catalog::LinkLevel level) {
  std::string names;
  for (const catalog::LinkSpec& l : catalog::link_catalogue()) {
    if (l.level == level) names += (names.empty() ? "" : ", ") + std::string(l.name);
  }
  return names;
}

const catalog::LinkSpec* read_link(const std::string& text, const char* flag,
                                   catalog::LinkLevel level) {
  if (text.empty()) return nullptr;
  const catalog::LinkSpec* link = catalog::find_link(text);
  if (link == nullptr || link->level != level) {
    throw UsageError(std::string(flag) + ": expected one of " + link_names(level) +
                     " (--list-links), got " + shown(text));
  }
  return link;
}

std::string rate_text(double bytes_per_second) {
  char text[48];
  std::snprintf(text, sizeof text, "%.1f GB/s", bytes_per_second / 1e9);
  return text;
}

// "nvlink4 (NVLink 4 (H100, H200 SXM)): a ring's bus rate 367.2 GB/s, measured".
std::string described(const catalog::LinkSpec& link, double bus_rate) {
  return std::string(link.name) + " (" + std::string(link.what) + "): bus rate " +
         rate_text(bus_rate) + (link.measured ? ", measured" : ", nominal (no run reaches it)");
}

// The compute's rate and efficiency: the card's (--gpu) and --efficiency or its published runs'.
void read_compute(const PlanFlags& f, report::PlanInputs& in) {
  if (!f.efficiency.empty()) {
    // Below 0.1 % of a card's rate no training run has been published; a step that slow is a
    // typo, not a plan.
    const double e = units::parse_fraction(f.efficiency, "--efficiency");
    if (e < 1e-3) {
      throw UsageError(
          "--efficiency: expected a fraction from 0.1% to 100% such as 0.5 or 50%, "
          "got " +
          shown(f.efficiency));
    }
    in.hfu = e;
    in.hfu_origin = "--efficiency, the fraction of the card's dense rate the step reaches";
  }
  if (!in.gpu) return;
  // The rate is the card's bf16 (fp16) tensor rate; a run in fp32 does not compute at it.
  if (in.precision == plan::Precision::fp32 && in.optimizer) return;
  if (const catalog::GpuRate* rate = catalog::gpu_rate(in.gpu->name)) {
    in.dense_flops = rate->dense_flops;
  }
  if (in.hfu || !in.step_compute) return;
  const auto published = catalog::published_efficiency(
      in.gpu->name, in.step_compute->checkpointing == plan::Checkpointing::full);
  if (published) {
    in.hfu = published->hfu;
    in.hfu_origin = std::string(published->origin);
  }
}

// The step's nodes: the topology given, else the card's usual server's nodes when N fills them
// (or N on one of them), each assumption listed.
std::optional<deepspeed::Topology> step_nodes(const report::PlanInputs& in,
                                              const catalog::UsualServer& server) {
  if (in.topology) return in.topology;
  if (!in.gpus) return std::nullopt;
  const int n = *in.gpus;
  if (in.gpus_per_node) {  // given without --nodes: the nodes N makes
    if (n % *in.gpus_per_node != 0) return std::nullopt;
    return deepspeed::Topology{*in.gpus_per_node, n / *in.gpus_per_node};
  }
  const int per_node = server.gpus_per_node.value_or(8);
  if (n <= per_node) return deepspeed::Topology{n, 1};
  if (server.gpus_per_node && n % per_node == 0) return deepspeed::Topology{per_node, n / per_node};
  return std::nullopt;
}

void read_links(const PlanFlags& f, report::PlanInputs& in) {
  const catalog::LinkSpec* intra =
      read_link(f.intra_node, "--intra-node", catalog::LinkLevel::intra_node);
  const catalog::LinkSpec* inter =
      read_link(f.inter_node, "--inter-node", catalog::LinkLevel::inter_node);
  if (intra && !f.intra_bandwidth.empty()) {
    throw UsageError("--intra-node: not with --intra-bandwidth; give the link or its rate");
  }
  if (inter && !f.inter_bandwidth.empty()) {
    throw UsageError("--inter-node: not with --inter-bandwidth; give the link or its rate");
  }
  const catalog::UsualServer server =
      in.gpu ? catalog::usual_server(in.gpu->name) : catalog::UsualServer{};
  const std::optional<deepspeed::Topology> nodes = step_nodes(in, server);
  if (!nodes) return;
  if (inter && nodes->nodes == 1) {
    throw UsageError("--inter-node: the " + std::to_string(nodes->gpus()) +
                     " GPUs are one node, which sends nothing across nodes; give --gpus-per-node "
                     "and --nodes");
  }
  plan::LinkRates rates;
  std::vector<report::Assumption> assumed;
  if (nodes->gpus_per_node > 1) {
    if (in.intra_bandwidth) {
      rates.intra = *in.intra_bandwidth;
      in.intra_link = "--intra-bandwidth " + rate_text(rates.intra);
    } else if (intra || server.intra) {
      const catalog::LinkSpec& link = intra ? *intra : *server.intra;
      rates.intra = link.bytes_per_second;
      in.intra_link = described(link, rates.intra);
      if (!intra) {
        assumed.push_back({field_ref("intra_node"), std::string(link.name), "the server's"});
      }
    } else {
      return;  // no link inside the node known: no step
    }
  }
  if (nodes->nodes > 1) {
    const int n = nodes->gpus_per_node;
    if (in.inter_bandwidth) {
      rates.inter = *in.inter_bandwidth * n;
      in.inter_link = "--inter-bandwidth " + rate_text(*in.inter_bandwidth) + " a GPU, bus rate " +
                      rate_text(rates.inter) + " over the node's " + std::to_string(n) + " GPUs";
    } else if (inter || server.inter) {
      const catalog::LinkSpec& link = inter ? *inter : *server.inter;
      rates.inter = catalog::bus_rate_across_nodes(link, n);
      in.inter_link = described(link, rates.inter) +
                      (link.per_node ? "" : " (a NIC a GPU, " + std::to_string(n) + " a node)");
      if (!inter) {
        assumed.push_back({field_ref("inter_node"), std::string(link.name), "the server's"});
      }
    } else {
      return;  // no network known: no step
    }
  }
  if (!in.topology && !in.gpus_per_node && nodes->gpus() > 1) {
    assumed.insert(assumed.begin(),
                   {field_ref("gpus_per_node"), std::to_string(nodes->gpus_per_node),
                    nodes->nodes == 1 ? "all in one node" : std::string(server.described)});
  }
  in.step_topology = nodes;
  in.step_links = rates;
  for (report::Assumption& a : assumed) in.assumptions.push_back(std::move(a));
}

// Why a model's step at N is not predicted: the first input it lacks, and the flag that gives
// it; empty when it is.
std::string why_no_step(const report::PlanInputs& in) {
  const bool compute = in.compute_seconds || (in.dense_flops && in.hfu);
  if (compute && in.step_links) return "";
  const std::string alternative = " (or give " + field_ref("compute_time") + ")";
  if (!compute) {
    if (!in.gpu) {
      return "it needs the card's rate: give " + field_ref("gpu") + alternative;
    }
    const std::string card = std::string(in.gpu->name);
    if (in.precision == plan::Precision::fp32 && in.optimizer) {
      return "the catalogue's rates are bf16's, not fp32's" + alternative;
    }
    if (!in.dense_flops) return "no published dense rate for " + card + alternative;
    return "no published runs give " + card + "'s efficiency: give " + field_ref("efficiency") +
           ", the fraction of its dense rate your runs reach" + alternative;
  }
  return "the nodes and links are not known: give " + field_ref("gpus_per_node") + " and " +
         field_ref("inter_node") + " (or " + field_ref("intra_node") + ", " +
         field_ref("inter_bandwidth") + ")";
}

double read_price(const std::string& text) {
  return units::parse_real(text, "--price-per-gpu-hour",
                           "a price a GPU-hour such as 2.5 (in any currency)",
                           units::Zero::allowed);
}

}  // namespace

void read_step(const PlanFlags& f, report::PlanInputs& in) {
  read_compute(f, in);
  // The links matter, and their assumptions are said, only where a step is predicted: with its
  // compute (cell G with one volume at one bandwidth is the seed's own arithmetic).
  const bool compute = in.compute_seconds || (in.step_compute && in.dense_flops && in.hfu);
  if (compute && !in.bandwidth && !in.comm_bytes) {
    read_links(f, in);
  } else if (!f.intra_node.empty() || !f.inter_node.empty()) {
    throw UsageError(std::string(f.intra_node.empty() ? "--inter-node" : "--intra-node") +
                     ": times a predicted step, which needs --model with --gpu (a card with a "
                     "published rate and efficiency, or --efficiency) or --compute-time, and "
                     "not --bandwidth or --comm-bytes");
  }
  if (in.step_compute && in.gpus && !in.bandwidth && !in.comm_bytes) {
    in.step_not_predicted = why_no_step(in);
  }
  if (in.lora && in.gpus && in.lora->nf4) {
    in.step_not_predicted =
        "a QLoRA run's step (bitsandbytes dequantizes each weight for each pass) is not "
        "predicted yet";
  } else if (in.lora && in.gpus && !in.lora->modules_to_save.empty()) {
    in.step_not_predicted =
        "the step of a LoRA run with modules_to_save (whole modules trained beside the "
        "adapters) is not predicted yet";
  }
  if (!f.tokens.empty()) in.tokens = double(units::parse_count(f.tokens, "--tokens"));
  if (!f.price_per_gpu_hour.empty()) in.price_per_gpu_hour = read_price(f.price_per_gpu_hour);
}

void list_links(bool json) {
  if (json) {
    nlohmann::json all = nlohmann::json::array();
    for (const catalog::LinkSpec& l : catalog::link_catalogue()) {
      all.push_back(
          {{"name", l.name},
           {"level", l.level == catalog::LinkLevel::intra_node ? "intra_node" : "inter_node"},
           {"what", l.what},
           {"bytes_per_second", l.bytes_per_second},
           {"measured", l.measured},
           {"per_node", l.per_node},
           {"nominal", l.nominal},
           {"quoted", l.quoted},
           {"source", l.source}});
    }
    std::fprintf(out(), "%s\n", all.dump(2).c_str());
    return;
  }
  std::fprintf(out(), "%-9s %-14s %-44s %s\n", "link", "flag", "what", "rate used");
  for (const catalog::LinkSpec& l : catalog::link_catalogue()) {
    const bool intra = l.level == catalog::LinkLevel::intra_node;
    const std::string rate = rate_text(l.bytes_per_second) +
                             (intra        ? " bus"
                              : l.per_node ? " a node"
                                           : " a NIC") +
                             (l.measured ? ", measured" : ", nominal");
    std::fprintf(out(), "%-9.*s %-14s %-44.*s %s\n", int(l.name.size()), l.name.data(),
                 intra ? "--intra-node" : "--inter-node", int(l.what.size()), l.what.data(),
                 rate.c_str());
  }
  std::fprintf(out(), "\n%s\n",
               fill_words("bus rate: what a ring collective moves per GPU per second, as "
                          "nccl-tests' busbw; across nodes a ring's rate is the node's NICs "
                          "together; measured: a published NCCL run on that link, else the "
                          "link's nominal rate, which no run reaches; sources: docs/planner.md",
                          report::kPlanColumns, 2)
                   .c_str());
}

}  // namespace zerodp::cli
