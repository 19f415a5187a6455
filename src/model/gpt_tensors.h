// The order of the tensors inside each GPT unit: the one place that defines the flat layout.
// gpt_units() lays the tensors out in this order; the model finds them by these indices.
#pragma once

#include <cstddef>

namespace zerodp::model {

enum EmbeddingTensor : std::size_t { kWte, kWpe, kEmbeddingTensors };

// Weights of matmuls are [out, in].
enum BlockTensor : std::size_t {
  kLn1Weight,       // [C]
  kLn1Bias,         // [C]
  kAttnWeight,      // [3C, C]   q, k, v rows stacked
  kAttnBias,        // [3C]
  kAttnProjWeight,  // [C, C]
  kAttnProjBias,    // [C]
  kLn2Weight,       // [C]
  kLn2Bias,         // [C]
  kFcWeight,        // [4C, C]
  kFcBias,          // [4C]
  kFcProjWeight,    // [C, 4C]
  kFcProjBias,      // [C]
  kBlockTensors
};

enum FinalTensor : std::size_t { kLnfWeight, kLnfBias, kFinalTensors };

}  // namespace zerodp::model
