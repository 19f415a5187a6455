#include "zerodp/catalog/gpus.h"

#include <array>
#include <string>
#include <vector>

#include "zerodp/catalog/names.h"

namespace zerodp::catalog {

namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// A total as PyTorch prints it, in hundredths of a GiB: 39.39 GiB -> 3939.
constexpr std::uint64_t gib_hundredths(std::uint64_t hundredths) {
  return hundredths * kGiB / 100;
}

// The smallest total found in a public report that names the card, on Linux. Sources were read
// on 2026-12-02; docs/planner.md ("GPUs by name") lists the other reports found for each card
// and the cards left out for want of one.
constexpr std::array<GpuSpec, 20> kGpus{{
    {"a100-40gb", "NVIDIA A100-SXM4-40GB", 40, "40 GB HBM2", 42'298'834'944,
     "deviceQuery 'Total amount of global memory: 40339 MBytes (42298834944 bytes)', driver 12.2",
     "https://github.com/bottlerocket-os/bottlerocket/pull/3873"},
    {"a100-80gb", "NVIDIA A100 80GB", 80, "80 GB HBM2e", gib_hundredths(7914),
     "'GPU 0 has a total capacity of 79.14 GiB' (a single A100 80GB)",
     "https://github.com/lianqi1008/Control-GIC/issues/6"},
    {"a800-80gb", "NVIDIA A800 80GB", 80, "80 GB HBM2e", gib_hundredths(7914),
     "'GPU 0 has a total capacty of 79.14 GiB' (an A800 80GB)",
     "https://github.com/MzeroMiko/VMamba/issues/375"},
    {"h100-80gb", "NVIDIA H100 80GB HBM3 (SXM)", 80, "80 GB HBM3", gib_hundredths(7911),
     "'GPU 0 has a total capacity of 79.11 GiB' (NVIDIA H100 80GB HBM3, driver 535.247.01)",
     "https://github.com/vllm-project/vllm/issues/27508"},
    {"h100-nvl", "NVIDIA H100 NVL", 94, "94 GB HBM3", gib_hundredths(9300),
     "'GPU 0 has a total capacity of 93.00 GiB' (an H100 NVL 94GB, on RunPod)",
     "https://github.com/ali-vilab/VACE/issues/56"},
    // No public report of what CUDA reports names an H200: this is nvidia-smi's total, which
    // is more than CUDA reports (an H100's 81559MiB is 79.11 GiB to CUDA, 0.54 GiB less).
    {"h200", "NVIDIA H200 (SXM)", 141, "141 GB HBM3e", std::uint64_t{143'771} << 20,
     "nvidia-smi's total 143771MiB (140.40 GiB), not CUDA's: no report of the CUDA total was "
     "found; expect about 0.5 GiB less",
     "https://thundergolfer.com/blog/nvidia-gpu-memory-capacity"},
    {"b200", "NVIDIA B200", 180, "180 GB HBM3e", gib_hundredths(17835),
     "cudaDeviceProp::totalGlobalMem 'Total Global Memory: 178.35 GB' (GiB: 178.35 GiB) for an "
     "NVIDIA B200",
     "https://github.com/pytorch/ao/pull/4002"},
    {"l40s", "NVIDIA L40S", 48, "48 GB GDDR6", gib_hundredths(4440),
     "'GPU 0 has a total capacity of 44.40 GiB' (on an L40S)",
     "https://github.com/vllm-project/vllm/issues/23230"},
    {"l40", "NVIDIA L40", 48, "48 GB GDDR6", gib_hundredths(4440),
     "'GPU 0 has a total capacity of 44.40 GiB' (a single L40)",
     "https://github.com/QwenLM/Qwen3-VL/issues/2097"},
    {"a10g", "NVIDIA A10G (AWS g5)", 24, "24 GB GDDR6", gib_hundredths(2249),
     "'(GPU 0; 22.49 GiB total capacity; ...)' (an A10G with 24 GB)",
     "https://github.com/AUTOMATIC1111/stable-diffusion-webui/issues/1259"},
    {"l4", "NVIDIA L4", 24, "24 GB GDDR6", gib_hundredths(2205),
     "'GPU 0 has a total capacity of 22.05 GiB' (the L4 of vLLM's CI)",
     "https://github.com/vllm-project/vllm/issues/20214"},
    {"rtx-3090", "NVIDIA GeForce RTX 3090", 24, "24 GB GDDR6X", gib_hundredths(2369),
     "'GPU 0 has a total capacity of 23.69 GiB' (an RTX 3090; others report 23.70)",
     "https://github.com/hiyouga/LlamaFactory/issues/2744"},
    {"rtx-4090", "NVIDIA GeForce RTX 4090", 24, "24 GB GDDR6X", gib_hundredths(2352),
     "'GPU 0 has a total capacity of 23.52 GiB' (a 4090 24G; others report 23.64-23.68)",
     "https://github.com/Soul-AILab/SoulX-FlashTalk/issues/5"},
    {"rtx-a6000", "NVIDIA RTX A6000", 48, "48 GB GDDR6", gib_hundredths(4754),
     "'(GPU 0; 47.54 GiB total capacity; ...)', nvidia-smi 49140MiB in the same report",
     "https://github.com/vllm-project/vllm/issues/1201"},
    {"rtx-6000-ada", "NVIDIA RTX 6000 Ada Generation", 48, "48 GB GDDR6", gib_hundredths(4443),
     "'GPU 0 has a total capacity of 44.43 GiB', nvidia-smi 46068MiB in the same report",
     "https://github.com/DINGYANB/MTVCrafter/issues/21"},
    {"v100-16gb", "NVIDIA Tesla V100 16GB", 16, "16 GB HBM2", gib_hundredths(1577),
     "'GPU 0 has a total capacty of 15.77 GiB' (8 x V100 16GB; others report 15.78)",
     "https://github.com/meta-llama/llama-cookbook/issues/234"},
    {"v100-32gb", "NVIDIA Tesla V100 32GB", 32, "32 GB HBM2", gib_hundredths(3174),
     "'(GPU 0; 31.74 GiB total capacity; ...)' (V100 32GB)",
     "https://github.com/liucongg/ChatGLM-Finetuning/issues/73"},
    {"t4", "NVIDIA Tesla T4", 16, "16 GB GDDR6", gib_hundredths(1475),
     "'GPU 0 has a total capacity of 14.75 GiB' (Google Colab with a T4)",
     "https://github.com/hpcaitech/Open-Sora/issues/697"},
    {"mi300x", "AMD Instinct MI300X", 192, "192 GB HBM3", 201'310'208ull * 1024,
     "rocminfo's GLOBAL segment 'Size: 201310208(0xbffc000) KB'",
     "https://github.com/ROCm/rocm-examples/issues/187"},
    {"mi250x", "AMD Instinct MI250X (one GCD)", 64, "64 GB HBM2e a GCD, 2 a card", 68'702'699'520,
     "'ACC: Total GPU memory 68702699520' for one AMD Instinct MI250X device (a GCD)",
     "https://github.com/csc-training/portable-gpu-programming"},
}};

// Vendor figures read on 2026-12-07 (docs/planner.md, "Compute rates").
constexpr std::string_view kA100 =
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
    "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf";
constexpr std::string_view kH100 = "https://www.nvidia.com/en-us/data-center/h100/";
constexpr std::string_view kGa102 =
    "https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf";
constexpr std::string_view kV100 =
    "https://images.nvidia.com/content/technologies/volta/pdf/"
    "volta-v100-datasheet-update-us-1165301-r5.pdf";
constexpr std::array<GpuRate, 17> kRates{{
    {"a100-40gb", 312e12, false, "BFLOAT16 Tensor Core 312 TFLOPS | 624 TFLOPS* (* with sparsity)",
     kA100},
    {"a100-80gb", 312e12, false, "BFLOAT16 Tensor Core 312 TFLOPS | 624 TFLOPS* (* with sparsity)",
     kA100},
    {"h100-80gb", 989.5e12, true,
     "H100 SXM: BFLOAT16 Tensor Core* 1,979 teraFLOPS (* with sparsity)", kH100},
    {"h100-nvl", 835.5e12, true,
     "H100 NVL: BFLOAT16 Tensor Core* 1,671 teraFLOPS (* with sparsity)", kH100},
    {"h200", 989.5e12, true, "H200 SXM: BFLOAT16 Tensor Core* 1,979 teraFLOPS (* with sparsity)",
     "https://www.nvidia.com/en-us/data-center/h200/"},
    {"b200", 2250e12, true,
     "HGX B200: FP16/BF16 Tensor Core 4.5 PFLOPS (specification in sparse; dense is 1/2)",
     "https://www.nvidia.com/en-us/data-center/hgx/"},
    {"l40s", 362.05e12, false, "BFLOAT16 Tensor Core TFLOPS 362.05 | 733* (* with sparsity)",
     "https://www.nvidia.com/en-us/data-center/l40s/"},
    {"l40", 181.05e12, false, "BFLOAT16 Tensor Core TFLOPS 181.05 | 362.1* (* with sparsity)",
     "https://www.nvidia.com/en-us/data-center/l40/"},
    {"l4", 121e12, true,
     "BFLOAT16 Tensor Core 242 teraFLOPS* (* shown with sparsity; one-half lower without)",
     "https://www.nvidia.com/en-us/data-center/l4/"},
    {"rtx-3090", 71e12, false, "RTX 3090: Peak FP16 Tensor TFLOPS with FP32 Accumulate 71/142",
     kGa102},
    {"rtx-4090", 165.2e12, false,
     "RTX 4090: Peak BF16 Tensor TFLOPS with FP32 Accumulate 165.2/330.4",
     "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"},
    {"rtx-a6000", 154.8e12, false,
     "RTX A6000: Peak BF16 Tensor TFLOPS with FP32 Accumulate 154.8/309.6", kGa102},
    {"v100-16gb", 125e12, false, "V100 SXM2: Tensor Performance 125 TFLOPS (fp16)", kV100},
    {"v100-32gb", 125e12, false, "V100 SXM2: Tensor Performance 125 TFLOPS (fp16)", kV100},
    {"t4", 65e12, false, "Mixed Precision (FP16/FP32) 65 FP16 TFLOPS",
     "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/"
     "t4-tensor-core-datasheet-951643.pdf"},
    {"mi300x", 1307.4e12, false, "Peak BF16 1307.4 TFLOPS (2614.9 with sparsity)",
     "https://rocm.docs.amd.com/en/docs-6.2.2/conceptual/gpu-arch/mi300.html"},
    // The MI250X's 383 TFLOPS are its two GCDs'; the catalogue's card is one GCD.
    {"mi250x", 191.5e12, false, "Peak BF16 383.0 TFLOPS a module of two GCDs (191.5 a GCD)",
     "https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html"},
}};

}  // namespace

std::span<const GpuRate> gpu_rates() {
  return kRates;
}

std::optional<TrainingEfficiency> published_efficiency(std::string_view gpu_name,
                                                       bool full_checkpointing) {
  // llm-foundry, scripts/train/benchmarking/README.md at 4952183: the medians of the HFU its
  // tables print (tests/catalog/throughput_test.cc holds the runs and recomputes them).
  const GpuSpec* card = find_gpu(gpu_name);
  if (card == nullptr) return std::nullopt;
  if (card->name == "a100-40gb" || card->name == "a100-80gb") {
    return full_checkpointing
               ? TrainingEfficiency{0.6764,
                                    "the median HFU of llm-foundry's 49 published A100 runs with "
                                    "full checkpointing"}
               : TrainingEfficiency{0.5319,
                                    "the median HFU of llm-foundry's 90 published A100 runs "
                                    "without"};
  }
  if (card->name == "h100-80gb") {
    return full_checkpointing
               ? TrainingEfficiency{0.539,
                                    "the median HFU of llm-foundry's 29 published H100 runs with "
                                    "full checkpointing"}
               : TrainingEfficiency{0.4031,
                                    "the median HFU of llm-foundry's 41 published H100 runs "
                                    "without"};
  }
  return std::nullopt;
}

const GpuRate* gpu_rate(std::string_view gpu_name) {
  const GpuSpec* card = find_gpu(gpu_name);
  if (card == nullptr) return nullptr;
  for (const GpuRate& r : kRates) {
    if (r.gpu == card->name) return &r;
  }
  return nullptr;
}

std::span<const GpuSpec> gpu_catalogue() {
  return kGpus;
}

const GpuSpec* find_gpu(std::string_view name) {
  const std::string wanted = normalised_name(name);
  for (const GpuSpec& g : kGpus) {
    if (normalised_name(g.name) == wanted) return &g;
  }
  return nullptr;
}

std::string suggest_gpu(std::string_view name) {
  std::vector<std::string_view> names;
  for (const GpuSpec& g : kGpus) names.push_back(g.name);
  return closest_name(name, names);
}

std::vector<const GpuSpec*> cards_sold_as(std::uint64_t bytes) {
  std::vector<const GpuSpec*> cards;
  for (const GpuSpec& g : kGpus) {
    if (bytes == std::uint64_t{g.sold_gb} * 1'000'000'000 ||
        bytes == std::uint64_t{g.sold_gb} * kGiB) {
      cards.push_back(&g);
    }
  }
  return cards;
}

}  // namespace zerodp::catalog
