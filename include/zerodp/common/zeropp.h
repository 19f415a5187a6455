// ZeRO++'s three switches (docs/zeropp.md), shared by the planner and the engine as Stage is:
// their one type, their one parser, and the one rule of where they apply.
//
//   qwz  quantized weights: stage 3's parameter gathers move int8 blocks
//   hpz  hierarchical partitioning: a secondary copy of the parameters inside each host serves
//        the backward's gathers
//   qgz  quantized gradients: stage 3's gradient reductions become int8 all-to-alls, inside
//        each host and then across
//
// Contract:
//  - The words are the command line's (--zeropp qwz,hpz,qgz, or none) and JSON's; words()
//    gives them back in that order, so parse(words(z)) == z.
//  - ZeRO++ changes stage 3 only: stage_refusal() is that rule, said once for every front end.
//  - Pure functions: safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "zerodp/common/stage.h"

namespace zerodp {

struct ZeroPlusPlus {
  bool qwz = false;
  bool hpz = false;
  bool qgz = false;
  // hpz's secondary partition: the GPUs (ranks) it spans; 0: those of one node (host), known
  // once the node's size is (--zeropp hpz). A DeepSpeed config gives its own
  // (zero_hpz_partition_size).
  int hpz_size = 0;
  // The GPUs hpz's partition spans once settled; 1 without hpz (no secondary partition).
  int hpz_span() const { return hpz ? hpz_size : 1; }
  bool any() const { return qwz || hpz || qgz; }
  // Whether a quantization block size applies: qwz's and qgz's int8 blocks.
  bool quantizes() const { return qwz || qgz; }
  // Whether the ranks of one host matter: hpz's secondary partition and qgz's first all-to-all.
  bool uses_hosts() const { return hpz || qgz; }
  bool operator==(const ZeroPlusPlus&) const = default;
  // "none", or the switches that are on, in the order qwz, hpz, qgz, comma-separated (the
  // partition's size is not a word).
  std::string words() const;
};

// "none", or a comma-separated list of qwz, hpz and qgz (each at most once). Throws
// UsageError "<input>: expected none or a list of qwz, hpz, qgz such as qwz,hpz,qgz, got '...'"
// with `input` the flag or field that gave the text.
ZeroPlusPlus parse_zeropp(std::string_view text, std::string_view input);

// Why `zeropp` cannot run at `stage` ("qwz quantizes stage 3's parameter gathers; expected
// stage 3, got stage 2"), or empty when it can: ZeRO++ changes stage 3's collectives only.
std::string zeropp_stage_refusal(const ZeroPlusPlus& zeropp, Stage stage);

}  // namespace zerodp
