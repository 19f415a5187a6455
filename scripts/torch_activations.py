#!/usr/bin/python3
"""What PyTorch itself saves for backward, family by family: the reference zerodp's planner is held to.

Re-implements each family's Hugging Face `...ForCausalLM` training forward (attn_implementation="eager",
parameters cast to bf16 as under DeepSpeed bf16, no autocast, loss = ForCausalLMLoss) and counts, exactly,
the storages autograd keeps for backward (torch.autograd.graph.saved_tensors_hooks; parameters and views of
parameters excluded, each storage counted once at its full nbytes, attributed to the module running when it
was first saved). A TorchDispatchMode tracks every op's output storages and their lifetimes to give the peak
of live non-parameter bytes during forward and during backward (both relative to the start of forward;
backward_peak includes the parameter gradients as they appear). tests/plan/torch_reference_test.cc runs it
and compares every count with the planner's formula (src/catalog/model_activations.cc) under this build's
differences (include/zerodp/plan/torch_runtime.h).

  /usr/bin/python3 scripts/torch_activations.py --config tests/plan/torch_reference/llama.json \
      --seq-len 32 --micro-batch 2 [--verbose]      # one JSON object
  /usr/bin/python3 scripts/torch_activations.py --config ... --shapes 8x2,12x3,16x1   # one a line
  /usr/bin/python3 scripts/torch_activations.py --config A.json --config B.json --shapes ...  # A's, then B's
  /usr/bin/python3 scripts/torch_activations.py --optimizer-step 1000000   # AdamW's step temporaries
  /usr/bin/python3 scripts/torch_activations.py --config ... --lora-rank 8 --lora-targets q_proj,v_proj \
      [--lora-dropout 0.05] [--quantize nf4]   # the base frozen, PEFT's LoRA on the linears named
      ("all-linear" by default); --quantize nf4: every linear but the head as bitsandbytes' Linear4bit

(`python3` on the PATH may be another interpreter, without Debian's python3-torch; use /usr/bin/python3.)
Output: "layers" = saved bytes per decoder layer; "per_layer" = {submodule: [bytes in layer 0, 1, ...]}
("*" replaces expert indices; "self_attn.core" is the functional eager attention, "self_attn.rope" the
rotary application, "mlp.router"/"dispatch"/"combine" the MoE routing code); "outside" = embedding,
final_norm, lm_head, loss (and gemma2's final_logit_softcap); "shared" = storages saved by more than one
layer or created outside the layers without grad (rotary cos/sin); "saved_buffers" = saved module
buffers (GPT-2's bool causal `bias`, Gemma3's embed_scale), not in total_saved; "tokens_per_expert".

Hugging Face sources followed (huggingface/transformers at these commits):
  llama 5dd4a63548857797727ae73eeb6a6e886ea02a3e (v4.48-style eager_attention_forward), qwen3_moe and
  phi3 00d4b3d2142cb4ced2f51b90614b5d26bc045015, deepseek_v2 0233e509531ace915c8241b4c16c8032a583279c
  (3-D expert weights, fp32 router, complex freqs_cis), gemma3 0018aa647bb13801f061e2d1027c326f531b59fb,
  olmo2 000c33fdfde12e1ffafbfcdb3c926df5727a00b6 (cos/sin stay fp32), gemma2 006e86931247d7bacf94ad00ada1fb6baf11e94b
  (+ v4.48 layout: position_embeddings once per model), gpt2 0010f60284ab4b9d14b7df9c6525b1a2ad44e640
  (same ops as v4.48's eager_attention_forward: bool `bias` buffer + torch.where, softmax in the input
  dtype), gpt_neox written to the v4.48+ layout (fused query_key_value -> view/transpose/chunk,
  partial rotary, llama-style eager core), loss/loss_utils.py 0114da07ec0e101b420a923dedeb6032b6ac3a44,
  activations.py 00e12e7c54598e50e7bef1540db3408f81916de1.
  mistral/qwen2/qwen3/mixtral/qwen2_moe follow the llama file with their known differences (qkv bias for
  qwen2*, per-head q/k norm for qwen3*, Mixtral's w1/w2/w3 experts under block_sparse_moe, qwen2_moe's
  shared expert with sigmoid gate). Rotary cos/sin are computed once per model.
  The causal mask is built as HF eager does (additive, no grad), so it is never saved.
  DeepSeek-V2: topk_method "greedy" and "group_limited_greedy" are both implemented; the test runs
  "greedy" (group-limited adds a saved bool mask of T*E bytes from masked_fill).

OPTIMIZER STEP (--optimizer-step S, one flat fp32 parameter, state initialised): the peak of new bytes
  during torch's AdamW step, with foreach=True and foreach=False.
"""

import argparse
import json
import math
import os
import re
import sys
import weakref
from contextlib import contextmanager

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils._pytree import tree_flatten  # noqa: E402

F32 = torch.float32
BF16 = torch.bfloat16

# --------------------------------------------------------------------------------------------
# Module scope stack (forward pre/post hooks) plus pseudo-scopes for functional code.
# --------------------------------------------------------------------------------------------

SCOPE = [""]


@contextmanager
def scope(name):
    SCOPE.append(SCOPE[-1] + "." + name if SCOPE[-1] else name)
    try:
        yield
    finally:
        SCOPE.pop()


def install_scope_hooks(model):
    handles = []
    for name, mod in model.named_modules():
        if not name:
            continue

        def pre(m, inp, _n=name):
            SCOPE.append(_n)

        def post(m, inp, out, _n=name):
            assert SCOPE[-1] == _n, (SCOPE[-1], _n)
            SCOPE.pop()

        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_forward_hook(post))
    return handles


def storage_of(t):
    """(data_ptr, nbytes) of the whole storage behind t (torch 1.13: TypedStorage)."""
    if hasattr(t, "untyped_storage"):
        s = t.untyped_storage()
        return s.data_ptr(), s.nbytes()
    s = t.storage()
    return s.data_ptr(), s.nbytes()


# --------------------------------------------------------------------------------------------
# Live-bytes tracker: every op's output storages, freed when the last tracked tensor object
# that refers to the storage dies (PyObject preservation keeps a tensor's Python object alive
# exactly as long as its TensorImpl, so weakref.finalize fires when the C++ tensor dies).
# --------------------------------------------------------------------------------------------


class _Entry:
    __slots__ = ("ptr", "nbytes", "objs", "scope", "__weakref__")

    def __init__(self, ptr, nbytes, scope_name):
        self.ptr, self.nbytes, self.objs, self.scope = ptr, nbytes, set(), scope_name


class LiveTracker(TorchDispatchMode):
    def __init__(self, excluded_ptrs):
        super().__init__()
        self.excluded = set(excluded_ptrs)
        self.live = {}
        self.cur = 0
        self.peak = 0
        self.last_op = None

    def reset_peak(self):
        self.peak = self.cur

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.last_op = func.__name__ if hasattr(func, "__name__") else str(func)
        if self.last_op.startswith("detach") and not isinstance(out, torch.Tensor) and args:
            # torch 1.13: aten.detach of a wrapped-number tensor (a Python scalar operand that
            # autograd saves, e.g. the `* scaling`) comes back unwrapped; hand the 0-dim tensor back.
            return args[0]
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self._track(t)
        return out

    def _track(self, t):
        ptr, nb = storage_of(t)
        if nb == 0 or ptr in self.excluded:
            return
        e = self.live.get(ptr)
        if e is None:
            e = _Entry(ptr, nb, SCOPE[-1])
            self.live[ptr] = e
            self.cur += nb
            self.peak = max(self.peak, self.cur)
        key = id(t)
        if key in e.objs:
            return
        e.objs.add(key)
        weakref.finalize(t, LiveTracker._release, weakref.ref(self), e, key)

    @staticmethod
    def _release(selfref, e, key):
        self = selfref()
        if self is None:
            return
        e.objs.discard(key)
        if not e.objs and self.live.get(e.ptr) is e:
            del self.live[e.ptr]
            self.cur -= e.nbytes

    def creation_scope(self, ptr):
        e = self.live.get(ptr)
        return e.scope if e is not None else None


# --------------------------------------------------------------------------------------------
# Saved-tensor recorder (saved_tensors_hooks): one record per storage, full storage nbytes,
# attributed to the scope that first saved it.
# --------------------------------------------------------------------------------------------


class SavedRecorder:
    def __init__(self, param_ptrs, buffer_ptrs, tracker):
        self.param_ptrs, self.buffer_ptrs, self.tracker = param_ptrs, buffer_ptrs, tracker
        self.records = {}  # ptr -> record (current)
        self.all_records = []

    def pack(self, t):
        ptr, nb = storage_of(t)
        if nb == 0 or ptr in self.param_ptrs:
            return t
        rec = self.records.get(ptr)
        if rec is not None and not any(r() is not None for r in rec["refs"]):
            rec = None  # storage pointer reused after the earlier saved tensor died
        if rec is None:
            rec = {
                "ptr": ptr,
                "nbytes": nb,
                "dtype": str(t.dtype).replace("torch.", ""),
                "shape": list(t.shape),
                "numel": t.numel(),
                "scope": SCOPE[-1],
                "after_op": self.tracker.last_op if self.tracker else None,
                "savers": [SCOPE[-1]],
                "created": self.tracker.creation_scope(ptr) if self.tracker else None,
                "requires_grad": bool(t.requires_grad),
                "buffer": ptr in self.buffer_ptrs,
                "refs": [],
            }
            self.records[ptr] = rec
            self.all_records.append(rec)
        else:
            rec["savers"].append(SCOPE[-1])
        try:
            rec["refs"].append(weakref.ref(t))
        except TypeError:
            pass
        return t

    @staticmethod
    def unpack(t):
        return t

    def alive(self):
        return [r for r in self.all_records if any(w() is not None for w in r["refs"])]


# --------------------------------------------------------------------------------------------
# Config: HF config.json field names and HF defaults for each family.
# --------------------------------------------------------------------------------------------


class Cfg(dict):
    __getattr__ = dict.get


DEFAULTS = {
    "common": dict(
        rms_norm_eps=1e-6,
        rope_theta=10000.0,
        attention_bias=False,
        mlp_bias=False,
        attention_dropout=0.0,
        hidden_act="silu",
        tie_word_embeddings=False,
        max_position_embeddings=2048,
        initializer_range=0.02,
        rope_scaling=None,
    ),
    "gemma2": dict(
        hidden_activation="gelu_pytorch_tanh",
        query_pre_attn_scalar=256,
        attn_logit_softcapping=50.0,
        final_logit_softcapping=30.0,
        sliding_window=4096,
        tie_word_embeddings=True,
        head_dim=256,
    ),
    "gemma3_text": dict(
        hidden_activation="gelu_pytorch_tanh",
        query_pre_attn_scalar=256,
        attn_logit_softcapping=None,
        final_logit_softcapping=None,
        sliding_window=4096,
        sliding_window_pattern=6,
        rope_theta=1000000.0,
        rope_local_base_freq=10000.0,
        tie_word_embeddings=True,
        head_dim=256,
    ),
    "qwen2": dict(tie_word_embeddings=False),
    "qwen2_moe": dict(norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[]),
    "qwen3_moe": dict(norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[]),
    "mixtral": dict(num_local_experts=8, num_experts_per_tok=2, router_jitter_noise=0.0),
    "phi3": dict(resid_pdrop=0.0, embd_pdrop=0.0, partial_rotary_factor=1.0),
    "deepseek_v2": dict(
        topk_method="greedy", n_group=None, topk_group=None, routed_scaling_factor=1.0, first_k_dense_replace=0
    ),
    "gpt2": dict(
        n_positions=1024,
        n_inner=None,
        activation_function="gelu_new",
        layer_norm_epsilon=1e-5,
        attn_pdrop=0.1,
        resid_pdrop=0.1,
        embd_pdrop=0.1,
        scale_attn_weights=True,
        scale_attn_by_inverse_layer_idx=False,
        reorder_and_upcast_attn=False,
        tie_word_embeddings=True,
    ),
    "gpt_neox": dict(
        rotary_pct=0.25,
        rotary_emb_base=10000,
        hidden_act="gelu",
        layer_norm_eps=1e-5,
        use_parallel_residual=True,
        attention_bias=True,
        hidden_dropout=0.0,
    ),
}

FAMILIES = [
    "gpt2", "gpt_neox", "llama", "mistral", "qwen2", "mixtral", "qwen3", "qwen3_moe", "qwen2_moe",
    "gemma2", "gemma3_text", "phi3", "olmo2", "deepseek_v2",
]


def load_config(path):
    with open(path) as f:
        raw = json.load(f)
    mt = raw["model_type"]
    if mt not in FAMILIES:
        raise SystemExit(f"unsupported model_type {mt!r}")
    c = Cfg(DEFAULTS["common"])
    c.update(DEFAULTS.get(mt, {}))
    c.update(raw)
    if mt == "gpt2":  # GPT2Config.attribute_map
        c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"] = c["n_embd"], c["n_layer"], c["n_head"]
        c["max_position_embeddings"] = c["n_positions"]
        c["intermediate_size"] = c["n_inner"] or 4 * c["n_embd"]
        c["num_key_value_heads"] = c["num_attention_heads"]
    if c.num_key_value_heads is None:
        c["num_key_value_heads"] = c.num_attention_heads
    if c.head_dim is None or mt in ("gpt2", "gpt_neox", "phi3", "qwen2", "olmo2"):
        if mt != "deepseek_v2":
            c["head_dim"] = c.hidden_size // c.num_attention_heads
    if mt == "gemma3_text" and not c.layer_types:
        p = c.sliding_window_pattern
        c["layer_types"] = [
            "sliding_attention" if bool((i + 1) % p) else "full_attention" for i in range(c.num_hidden_layers)
        ]
    return c


# --------------------------------------------------------------------------------------------
# Building blocks, op by op as in HF transformers.
# --------------------------------------------------------------------------------------------


class SiLU(nn.Module):  # ACT2FN["silu"]: nn.functional.silu
    def forward(self, x):
        return F.silu(x)


class GELU(nn.Module):  # ACT2FN["gelu"]: nn.functional.gelu
    def forward(self, x):
        return F.gelu(x)


class GELUTanh(nn.Module):  # ACT2FN["gelu_pytorch_tanh"]
    def forward(self, x):
        return F.gelu(x, approximate="tanh")


class NewGELU(nn.Module):  # ACT2FN["gelu_new"] (python formula, GPT-2)
    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


def act(name):
    return {"silu": SiLU, "swish": SiLU, "gelu": GELU, "gelu_pytorch_tanh": GELUTanh, "gelu_new": NewGELU}[name]()


class RMSNorm(nn.Module):
    """style 'llama': weight * x.to(dtype); 'olmo2': (weight * x).to(dtype); 'gemma': (x * (1 + w)).type_as."""

    def __init__(self, dim, eps, style="llama"):
        super().__init__()
        self.style = style
        self.weight = nn.Parameter(torch.zeros(dim) if style == "gemma" else torch.ones(dim))
        self.variance_epsilon = self.eps = eps

    def forward(self, hidden_states):
        if self.style == "gemma":
            x = hidden_states
            xf = x.float()
            output = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
            output = output * (1.0 + self.weight.float())
            return output.type_as(x)
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        if self.style == "olmo2":
            return (self.weight * hidden_states).to(input_dtype)
        return self.weight * hidden_states.to(input_dtype)


class Conv1D(nn.Module):  # transformers.pytorch_utils.Conv1D
    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class RotaryEmbedding(nn.Module):
    """Default RoPE: inv_freq buffer; cos/sin computed once per forward under no_grad (model level)."""

    def __init__(self, dim, base, cast_to_input_dtype=True, complex_freqs=False):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.cast, self.complex = cast_to_input_dtype, complex_freqs
        self.attention_scaling = 1.0

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        if self.complex:  # DeepSeek-V2: freqs_cis
            freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
            return freqs_cis * self.attention_scaling
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        if not self.cast:  # OLMo2 returns fp32 cos/sin
            return cos, sin
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def apply_rotary_pos_emb_olmo2(q, k, cos, sin, unsqueeze_dim=1):
    q_type, k_type = q.dtype, k.dtype
    q_embed, k_embed = apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim)
    return q_embed.to(q_type), k_embed.to(k_type)


def apply_rotary_pos_emb_partial(q, k, cos, sin, unsqueeze_dim=1):  # Phi3, GPT-NeoX
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    q_embed = torch.cat([(q_rot * cos) + (rotate_half(q_rot) * sin), q_pass], dim=-1)
    k_embed = torch.cat([(k_rot * cos) + (rotate_half(k_rot) * sin), k_pass], dim=-1)
    return q_embed, k_embed


def apply_rotary_emb_complex(xq, xk, freqs_cis):  # DeepSeek-V2
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.unsqueeze(1).to(xq_.device)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3).type_as(xq)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3).type_as(xk)
    return xq_out, xk_out


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, softcap=None):
    """llama/mistral/qwen*/phi3/olmo2/deepseek_v2/gpt_neox eager; softcap as in gemma2/gemma3."""
    with scope("core"):
        key_states = repeat_kv(key, module.num_key_value_groups)
        value_states = repeat_kv(value, module.num_key_value_groups)
        attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
        if softcap is not None:
            attn_weights = attn_weights / softcap
            attn_weights = torch.tanh(attn_weights)
            attn_weights = attn_weights * softcap
        if attention_mask is not None:
            causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
            attn_weights = attn_weights + causal_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
        attn_weights = F.dropout(attn_weights, p=dropout, training=module.training)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


def causal_mask_4d(b, s, dtype, sliding_window=None):
    """Additive (b, 1, s, s) mask as HF eager builds it (min_dtype above the diagonal / outside window).
    It does not require grad, so autograd never saves it (the add saves nothing)."""
    min_dtype = torch.finfo(dtype).min
    i = torch.arange(s)
    allowed = i[None, :] <= i[:, None]
    if sliding_window is not None:
        allowed = allowed & (i[:, None] - i[None, :] < sliding_window)
    mask = torch.zeros(s, s, dtype=dtype).masked_fill(~allowed, min_dtype)
    return mask[None, None, :, :].expand(b, 1, -1, -1)


# --------------------------------------------------------------------------------------------
# Llama-like families: llama, mistral, qwen2, qwen3, mixtral, qwen2_moe, qwen3_moe, gemma2,
# gemma3_text, phi3, olmo2, deepseek_v2.
# --------------------------------------------------------------------------------------------


class MLP(nn.Module):  # LlamaMLP (gate_proj/up_proj/down_proj)
    def __init__(self, c, intermediate_size=None, act_name=None):
        super().__init__()
        i = intermediate_size or c.intermediate_size
        self.gate_proj = nn.Linear(c.hidden_size, i, bias=bool(c.mlp_bias))
        self.up_proj = nn.Linear(c.hidden_size, i, bias=bool(c.mlp_bias))
        self.down_proj = nn.Linear(i, c.hidden_size, bias=bool(c.mlp_bias))
        self.act_fn = act(act_name or c.hidden_act)

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Phi3MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_up_proj = nn.Linear(c.hidden_size, 2 * c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)
        self.activation_fn = act(c.hidden_act)

    def forward(self, hidden_states):
        up_states = self.gate_up_proj(hidden_states)
        gate, up_states = up_states.chunk(2, dim=-1)
        up_states = up_states * self.activation_fn(gate)
        return self.down_proj(up_states)


class MixtralExpert(nn.Module):  # MixtralBlockSparseTop2MLP
    def __init__(self, c):
        super().__init__()
        self.w1 = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.w2 = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)
        self.w3 = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.act_fn = act(c.hidden_act)

    def forward(self, hidden_states):
        current_hidden_states = self.act_fn(self.w1(hidden_states)) * self.w3(hidden_states)
        return self.w2(current_hidden_states)


ROUTING_LOG = []  # per MoE layer: tokens routed to each expert


class SparseMoeBlock(nn.Module):
    """MixtralSparseMoeBlock / Qwen2MoeSparseMoeBlock / Qwen3MoeSparseMoeBlock (loop over hit experts)."""

    def __init__(self, c, kind):
        super().__init__()
        self.kind = kind
        if kind == "mixtral":
            self.num_experts, self.norm_topk_prob = c.num_local_experts, True
            self.jitter_noise = c.router_jitter_noise
        else:
            self.num_experts, self.norm_topk_prob = c.num_experts, bool(c.norm_topk_prob)
            self.jitter_noise = 0.0
        self.top_k = c.num_experts_per_tok
        self.gate = nn.Linear(c.hidden_size, self.num_experts, bias=False)
        if kind == "mixtral":
            self.experts = nn.ModuleList([MixtralExpert(c) for _ in range(self.num_experts)])
        else:
            self.experts = nn.ModuleList(
                [MLP(c, intermediate_size=c.moe_intermediate_size) for _ in range(self.num_experts)]
            )
        if kind == "qwen2_moe":
            self.shared_expert = MLP(c, intermediate_size=c.shared_expert_intermediate_size)
            self.shared_expert_gate = nn.Linear(c.hidden_size, 1, bias=False)

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        if self.training and self.jitter_noise > 0:
            hidden_states = hidden_states * torch.empty_like(hidden_states).uniform_(
                1.0 - self.jitter_noise, 1.0 + self.jitter_noise
            )
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        with scope("router"):
            routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
            routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
            if self.norm_topk_prob:
                routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
            routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros(
            (batch_size * sequence_length, hidden_dim), dtype=hidden_states.dtype, device=hidden_states.device
        )
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        counts = [0] * self.num_experts
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            e = int(expert_idx)
            expert_layer = self.experts[e]
            with scope(f"dispatch.{e}"):
                idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
                counts[e] = int(top_x.shape[0])
                current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state)
            with scope(f"combine.{e}"):
                current_hidden_states = current_hidden_states * routing_weights[top_x, idx, None]
                final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        ROUTING_LOG.append(counts)
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        if self.kind == "qwen2_moe":
            shared_expert_output = self.shared_expert(hidden_states)
            with scope("shared_gate"):
                shared_expert_output = F.sigmoid(self.shared_expert_gate(hidden_states)) * shared_expert_output
            final_hidden_states = final_hidden_states + shared_expert_output.view(
                batch_size, sequence_length, hidden_dim
            )
        return final_hidden_states, router_logits


class DeepseekV2Experts(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_experts = c.n_routed_experts
        self.gate_up_proj = nn.Parameter(torch.empty(self.num_experts, 2 * c.moe_intermediate_size, c.hidden_size))
        self.down_proj = nn.Parameter(torch.empty(self.num_experts, c.hidden_size, c.moe_intermediate_size))
        nn.init.normal_(self.gate_up_proj, std=c.initializer_range)
        nn.init.normal_(self.down_proj, std=c.initializer_range)
        self.act_fn = act(c.hidden_act)

    def forward(self, hidden_states, top_k_index, top_k_weights):
        final_hidden_states = torch.zeros_like(hidden_states)
        with torch.no_grad():
            expert_mask = F.one_hot(top_k_index, num_classes=self.num_experts)
            expert_mask = expert_mask.permute(2, 1, 0)
            expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        counts = [0] * self.num_experts
        for expert_idx in expert_hit:
            expert_idx = expert_idx[0]
            if expert_idx == self.num_experts:
                continue
            e = int(expert_idx)
            with scope(str(e)):
                top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
                counts[e] = int(token_idx.shape[0])
                current_state = hidden_states[token_idx]
                gate, up = F.linear(current_state, self.gate_up_proj[expert_idx]).chunk(2, dim=-1)
                current_hidden_states = self.act_fn(gate) * up
                current_hidden_states = F.linear(current_hidden_states, self.down_proj[expert_idx])
                current_hidden_states = current_hidden_states * top_k_weights[token_idx, top_k_pos, None]
                final_hidden_states.index_add_(0, token_idx, current_hidden_states.to(final_hidden_states.dtype))
        ROUTING_LOG.append(counts)
        return final_hidden_states


class DeepseekV2Moe(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.experts = DeepseekV2Experts(c)
        self.gate = nn.Linear(c.hidden_size, c.n_routed_experts, bias=False)
        if c.n_shared_experts is not None:
            self.shared_experts = MLP(c, intermediate_size=c.moe_intermediate_size * c.n_shared_experts)
        self.routed_scaling_factor = c.routed_scaling_factor
        self.topk_method = c.topk_method
        self.num_group = c.n_group
        self.top_k = c.num_experts_per_tok
        self.topk_group = c.topk_group
        self.num_experts = c.n_routed_experts

    def route_tokens_to_experts(self, router_logits):
        batch_size, seq_len, hidden_dim = router_logits.shape
        router_logits = router_logits.view(-1, hidden_dim)
        router_logits = router_logits.softmax(dim=-1, dtype=torch.float32)
        if self.topk_method == "greedy":
            topk_weight, topk_idx = torch.topk(router_logits, k=self.top_k, dim=-1, sorted=False)
        elif self.topk_method == "group_limited_greedy":
            group_scores = router_logits.view(batch_size * seq_len, self.num_group, -1).max(dim=-1).values
            group_idx = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
            group_mask = torch.zeros_like(group_scores)
            group_mask.scatter_(1, group_idx, 1)
            score_mask = (
                group_mask.unsqueeze(-1)
                .expand(batch_size * seq_len, self.num_group, self.num_experts // self.num_group)
                .reshape(batch_size * seq_len, -1)
            )
            tmp_scores = router_logits.masked_fill(~score_mask.bool(), 0.0)
            topk_weight, topk_idx = torch.topk(tmp_scores, k=self.top_k, dim=-1, sorted=False)
        topk_weight = topk_weight * self.routed_scaling_factor
        return topk_idx, topk_weight

    def forward(self, hidden_states):
        residuals = hidden_states
        orig_shape = hidden_states.shape
        with scope("router"):
            router_logits = F.linear(hidden_states.type(torch.float32), self.gate.weight.type(torch.float32))
            topk_indices, topk_weights = self.route_tokens_to_experts(router_logits)
        hidden_states = hidden_states.view(-1, hidden_states.shape[-1])
        hidden_states = self.experts(hidden_states, topk_indices, topk_weights).view(*orig_shape)
        hidden_states = hidden_states + self.shared_experts(residuals)
        return hidden_states


class Attention(nn.Module):
    """LlamaAttention and its variants (mistral, qwen2 bias, qwen3/gemma3 per-head q/k norm, olmo2
    full-width q/k norm, gemma2/3 scaling + softcap, phi3 fused qkv)."""

    def __init__(self, c, layer_idx, mt):
        super().__init__()
        self.mt = mt
        self.layer_idx = layer_idx
        self.head_dim = c.head_dim
        self.num_heads, self.num_kv = c.num_attention_heads, c.num_key_value_heads
        self.num_key_value_groups = self.num_heads // self.num_kv
        self.scaling = self.head_dim ** -0.5
        if mt in ("gemma2", "gemma3_text"):
            self.scaling = c.query_pre_attn_scalar ** -0.5
        self.attention_dropout = c.attention_dropout
        self.softcap = c.attn_logit_softcapping if mt == "gemma2" else None
        h, qd, kvd = c.hidden_size, self.num_heads * self.head_dim, self.num_kv * self.head_dim
        if mt == "phi3":
            self.qkv_proj = nn.Linear(h, qd + 2 * kvd, bias=False)
        else:
            qkv_bias = True if mt in ("qwen2", "qwen2_moe") else bool(c.attention_bias)
            self.q_proj = nn.Linear(h, qd, bias=qkv_bias)
            self.k_proj = nn.Linear(h, kvd, bias=qkv_bias)
            self.v_proj = nn.Linear(h, kvd, bias=qkv_bias)
        o_bias = False if mt in ("qwen2", "qwen2_moe", "phi3") else bool(c.attention_bias)
        self.o_proj = nn.Linear(qd, h, bias=o_bias)
        if mt in ("qwen3", "qwen3_moe"):
            self.q_norm = RMSNorm(self.head_dim, c.rms_norm_eps)
            self.k_norm = RMSNorm(self.head_dim, c.rms_norm_eps)
        elif mt == "gemma3_text":
            self.q_norm = RMSNorm(self.head_dim, c.rms_norm_eps, "gemma")
            self.k_norm = RMSNorm(self.head_dim, c.rms_norm_eps, "gemma")
        elif mt == "olmo2":
            self.q_norm = RMSNorm(qd, c.rms_norm_eps, "olmo2")
            self.k_norm = RMSNorm(kvd, c.rms_norm_eps, "olmo2")

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        mt = self.mt
        if mt == "phi3":
            qkv = self.qkv_proj(hidden_states)
            query_pos = self.num_heads * self.head_dim
            query_states = qkv[..., :query_pos]
            key_states = qkv[..., query_pos: query_pos + self.num_kv * self.head_dim]
            value_states = qkv[..., query_pos + self.num_kv * self.head_dim:]
            query_states = query_states.view(hidden_shape).transpose(1, 2)
            key_states = key_states.view(hidden_shape).transpose(1, 2)
            value_states = value_states.view(hidden_shape).transpose(1, 2)
        elif mt in ("qwen3", "qwen3_moe"):
            query_states = self.q_norm(self.q_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
            key_states = self.k_norm(self.k_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
            value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        elif mt == "olmo2":
            query_states = self.q_norm(self.q_proj(hidden_states))
            key_states = self.k_norm(self.k_proj(hidden_states))
            value_states = self.v_proj(hidden_states)
            query_states = query_states.view(hidden_shape).transpose(1, 2)
            key_states = key_states.view(hidden_shape).transpose(1, 2)
            value_states = value_states.view(hidden_shape).transpose(1, 2)
        else:
            query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
            key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
            value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
            if mt == "gemma3_text":
                query_states = self.q_norm(query_states)
                key_states = self.k_norm(key_states)
        cos, sin = position_embeddings
        with scope("rope"):
            if mt == "phi3":
                query_states, key_states = apply_rotary_pos_emb_partial(query_states, key_states, cos, sin)
            elif mt == "olmo2":
                query_states, key_states = apply_rotary_pos_emb_olmo2(query_states, key_states, cos, sin)
            else:
                query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        attn_output, attn_weights = eager_attention_forward(
            self, query_states, key_states, value_states, attention_mask,
            scaling=self.scaling, dropout=0.0 if not self.training else self.attention_dropout,
            softcap=self.softcap,
        )
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return attn_output, attn_weights


class DeepseekV2Attention(nn.Module):
    def __init__(self, c, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.attention_dropout = c.attention_dropout
        self.num_heads = c.num_attention_heads
        self.q_lora_rank = c.q_lora_rank
        self.qk_rope_head_dim = c.qk_rope_head_dim
        self.kv_lora_rank = c.kv_lora_rank
        self.v_head_dim = c.v_head_dim
        self.qk_nope_head_dim = c.qk_nope_head_dim
        self.qk_head_dim = c.qk_nope_head_dim + c.qk_rope_head_dim
        self.num_key_value_groups = c.num_attention_heads // c.num_key_value_heads
        h = c.hidden_size
        if self.q_lora_rank is None:
            self.q_proj = nn.Linear(h, self.num_heads * self.qk_head_dim, bias=False)
        else:
            self.q_a_proj = nn.Linear(h, c.q_lora_rank, bias=bool(c.attention_bias))
            self.q_a_layernorm = RMSNorm(c.q_lora_rank, 1e-6)
            self.q_b_proj = nn.Linear(c.q_lora_rank, self.num_heads * self.qk_head_dim, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(h, c.kv_lora_rank + c.qk_rope_head_dim, bias=bool(c.attention_bias))
        self.kv_a_layernorm = RMSNorm(c.kv_lora_rank, 1e-6)
        self.kv_b_proj = nn.Linear(
            c.kv_lora_rank, self.num_heads * (self.qk_head_dim - self.qk_rope_head_dim + self.v_head_dim), bias=False
        )
        self.o_proj = nn.Linear(self.num_heads * self.v_head_dim, h, bias=bool(c.attention_bias))
        self.scaling = self.qk_head_dim ** (-0.5)

    def forward(self, hidden_states, position_embeddings, attention_mask):
        batch_size, seq_length = hidden_states.shape[:-1]
        query_shape = (batch_size, seq_length, -1, self.qk_head_dim)
        key_shape = (batch_size, seq_length, -1, self.qk_nope_head_dim + self.v_head_dim)
        if self.q_lora_rank is None:
            q = self.q_proj(hidden_states)
        else:
            q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
        q = q.view(query_shape).transpose(1, 2)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        compressed_kv = self.kv_a_proj_with_mqa(hidden_states)
        k_nope, k_pe = torch.split(compressed_kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_nope = self.kv_b_proj(self.kv_a_layernorm(k_nope)).view(key_shape).transpose(1, 2)
        k_nope, value_states = torch.split(k_nope, [self.qk_nope_head_dim, self.v_head_dim], dim=-1)
        k_pe = k_pe.view(batch_size, 1, seq_length, self.qk_rope_head_dim)
        with scope("rope"):
            q_pe, k_pe = apply_rotary_emb_complex(q_pe, k_pe, position_embeddings.to(q_pe.device))
            k_pe = k_pe.expand(*k_nope.shape[:-1], -1)
            query_states = torch.cat((q_nope, q_pe), dim=-1)
            key_states = torch.cat((k_nope, k_pe), dim=-1)
        attn_output, attn_weights = eager_attention_forward(
            self, query_states, key_states, value_states, attention_mask,
            scaling=self.scaling, dropout=0.0 if not self.training else self.attention_dropout,
        )
        attn_output = attn_output.reshape(batch_size, seq_length, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return attn_output, attn_weights


class DecoderLayer(nn.Module):
    def __init__(self, c, layer_idx, mt):
        super().__init__()
        self.mt = mt
        eps = c.rms_norm_eps
        gemma = mt in ("gemma2", "gemma3_text")
        style = "gemma" if gemma else ("olmo2" if mt == "olmo2" else "llama")
        self.self_attn = DeepseekV2Attention(c, layer_idx) if mt == "deepseek_v2" else Attention(c, layer_idx, mt)
        if mt == "mixtral":
            self.block_sparse_moe = SparseMoeBlock(c, "mixtral")
        elif mt in ("qwen2_moe", "qwen3_moe"):
            if (layer_idx not in (c.mlp_only_layers or [])) and (
                c.num_experts > 0 and (layer_idx + 1) % c.decoder_sparse_step == 0
            ):
                self.mlp = SparseMoeBlock(c, mt)
            else:
                self.mlp = MLP(c)
        elif mt == "deepseek_v2":
            self.mlp = DeepseekV2Moe(c) if layer_idx >= c.first_k_dense_replace else MLP(c)
        elif mt == "phi3":
            self.mlp = Phi3MLP(c)
        else:
            self.mlp = MLP(c, act_name=c.hidden_activation if gemma else None)
        if mt != "olmo2":
            self.input_layernorm = RMSNorm(c.hidden_size, eps, style)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, eps, style)
        if gemma:
            self.pre_feedforward_layernorm = RMSNorm(c.hidden_size, eps, style)
        if gemma or mt == "olmo2":
            self.post_feedforward_layernorm = RMSNorm(c.hidden_size, eps, style)
        if mt == "phi3":
            self.resid_attn_dropout = nn.Dropout(c.resid_pdrop)
            self.resid_mlp_dropout = nn.Dropout(c.resid_pdrop)
        if mt == "gemma3_text":
            self.attention_type = c.layer_types[layer_idx]
        elif mt == "gemma2":
            self.attention_type = "sliding_attention" if not bool(layer_idx % 2) else "full_attention"
        elif mt == "mistral" and c.sliding_window is not None:
            self.attention_type = "sliding_attention"
        else:
            self.attention_type = "full_attention"

    def _ff(self, x):
        mlp = self.block_sparse_moe if self.mt == "mixtral" else self.mlp
        out = mlp(x)
        if isinstance(out, tuple):
            out = out[0]
        return out

    def forward(self, hidden_states, attention_mask, position_embeddings):
        mt = self.mt
        if mt in ("gemma2", "gemma3_text"):
            residual = hidden_states
            hidden_states = self.input_layernorm(hidden_states)
            hidden_states, _ = self.self_attn(hidden_states, position_embeddings, attention_mask)
            hidden_states = self.post_attention_layernorm(hidden_states)
            hidden_states = residual + hidden_states
            residual = hidden_states
            hidden_states = self.pre_feedforward_layernorm(hidden_states)
            hidden_states = self._ff(hidden_states)
            hidden_states = self.post_feedforward_layernorm(hidden_states)
            return residual + hidden_states
        if mt == "olmo2":
            residual = hidden_states
            hidden_states, _ = self.self_attn(hidden_states, position_embeddings, attention_mask)
            hidden_states = self.post_attention_layernorm(hidden_states)
            hidden_states = residual + hidden_states
            residual = hidden_states
            hidden_states = self._ff(hidden_states)
            hidden_states = self.post_feedforward_layernorm(hidden_states)
            return residual + hidden_states
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, _ = self.self_attn(hidden_states, position_embeddings, attention_mask)
        if mt == "phi3":
            hidden_states = residual + self.resid_attn_dropout(hidden_states)
        else:
            hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self._ff(hidden_states)
        if mt == "phi3":
            return residual + self.resid_mlp_dropout(hidden_states)
        return residual + hidden_states


class ScaledWordEmbedding(nn.Embedding):  # Gemma3TextScaledWordEmbedding
    def __init__(self, num_embeddings, embedding_dim, embed_scale):
        super().__init__(num_embeddings, embedding_dim)
        self.register_buffer("embed_scale", torch.tensor(embed_scale), persistent=False)

    def forward(self, input_ids):
        return super().forward(input_ids) * self.embed_scale.to(self.weight.dtype)


class DecoderModel(nn.Module):  # LlamaModel & co.
    def __init__(self, c, mt):
        super().__init__()
        self.c, self.mt = c, mt
        if mt == "gemma3_text":
            self.embed_tokens = ScaledWordEmbedding(c.vocab_size, c.hidden_size, c.hidden_size ** 0.5)
        else:
            self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList([DecoderLayer(c, i, mt) for i in range(c.num_hidden_layers)])
        style = "gemma" if mt in ("gemma2", "gemma3_text") else ("olmo2" if mt == "olmo2" else "llama")
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps, style)
        if mt == "deepseek_v2":
            self.rotary_emb = RotaryEmbedding(c.qk_rope_head_dim, c.rope_theta, complex_freqs=True)
        elif mt == "gemma3_text":
            self.rotary_emb = RotaryEmbedding(c.head_dim, c.rope_theta)
            self.rotary_emb_local = RotaryEmbedding(c.head_dim, c.rope_local_base_freq)
        else:
            dim = int(c.head_dim * (c.partial_rotary_factor or 1.0)) if mt == "phi3" else c.head_dim
            self.rotary_emb = RotaryEmbedding(dim, c.rope_theta, cast_to_input_dtype=(mt != "olmo2"))

    def forward(self, input_ids):
        c, mt = self.c, self.mt
        inputs_embeds = self.embed_tokens(input_ids)
        b, s = input_ids.shape
        position_ids = torch.arange(s).unsqueeze(0)
        hidden_states = inputs_embeds
        if mt == "gemma2":
            with scope("model.embed_scale"):
                normalizer = torch.tensor(c.hidden_size ** 0.5, dtype=hidden_states.dtype)
                hidden_states = hidden_states * normalizer
        masks = {"full_attention": causal_mask_4d(b, s, hidden_states.dtype)}
        if mt in ("gemma2", "gemma3_text", "mistral", "phi3", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "mixtral"):
            sw = c.sliding_window
            if mt in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe") and not c.use_sliding_window:
                sw = None
            if sw is not None:
                masks["sliding_attention"] = causal_mask_4d(b, s, hidden_states.dtype, sw)
                if mt in ("phi3", "mixtral"):
                    masks["full_attention"] = masks["sliding_attention"]
        if mt == "gemma3_text":
            pos = {"full_attention": self.rotary_emb(hidden_states, position_ids),
                   "sliding_attention": self.rotary_emb_local(hidden_states, position_ids)}
        else:
            pe = self.rotary_emb(hidden_states, position_ids)
            pos = {"full_attention": pe, "sliding_attention": pe}
        for layer in self.layers:
            at = layer.attention_type
            hidden_states = layer(hidden_states, masks.get(at, masks["full_attention"]), pos[at])
        return self.norm(hidden_states)


# --------------------------------------------------------------------------------------------
# GPT-2 (GPT2LMHeadModel, transformers v4.48-style eager_attention_forward with the bool `bias`
# causal buffer and torch.where) and GPT-NeoX (v4.48+ with position_embeddings).
# --------------------------------------------------------------------------------------------


class GPT2Attention(nn.Module):
    def __init__(self, c, layer_idx):
        super().__init__()
        n = c.max_position_embeddings
        self.register_buffer("bias", torch.tril(torch.ones((n, n), dtype=torch.bool)).view(1, 1, n, n),
                             persistent=False)
        self.embed_dim, self.num_heads = c.hidden_size, c.num_attention_heads
        self.head_dim = self.embed_dim // self.num_heads
        self.split_size = self.embed_dim
        self.scale_attn_weights = c.scale_attn_weights
        self.scale_attn_by_inverse_layer_idx = c.scale_attn_by_inverse_layer_idx
        self.layer_idx = layer_idx
        self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)
        self.attn_dropout = nn.Dropout(c.attn_pdrop)
        self.resid_dropout = nn.Dropout(c.resid_pdrop)

    def _core(self, query, key, value):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        if self.scale_attn_weights:
            attn_weights = attn_weights / torch.full(
                [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device
            )
        if self.scale_attn_by_inverse_layer_idx:
            attn_weights = attn_weights / float(self.layer_idx + 1)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)
        attn_output = torch.matmul(attn_weights, value)
        return attn_output.transpose(1, 2)

    def forward(self, hidden_states):
        query_states, key_states, value_states = self.c_attn(hidden_states).split(self.split_size, dim=2)
        shape_q = (*query_states.shape[:-1], -1, self.head_dim)
        shape_kv = (*key_states.shape[:-1], -1, self.head_dim)
        query_states = query_states.view(shape_q).transpose(1, 2)
        key_states = key_states.view(shape_kv).transpose(1, 2)
        value_states = value_states.view(shape_kv).transpose(1, 2)
        with scope("core"):
            attn_output = self._core(query_states, key_states, value_states)
        attn_output = attn_output.reshape(*attn_output.shape[:-2], -1).contiguous()
        attn_output = self.c_proj(attn_output)
        return self.resid_dropout(attn_output)


class GPT2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = Conv1D(c.intermediate_size, c.hidden_size)
        self.c_proj = Conv1D(c.hidden_size, c.intermediate_size)
        self.act = act(c.activation_function)
        self.dropout = nn.Dropout(c.resid_pdrop)

    def forward(self, hidden_states):
        return self.dropout(self.c_proj(self.act(self.c_fc(hidden_states))))


class GPT2Block(nn.Module):
    def __init__(self, c, layer_idx):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_epsilon)
        self.attn = GPT2Attention(c, layer_idx)
        self.ln_2 = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_epsilon)
        self.mlp = GPT2MLP(c)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.attn(self.ln_1(hidden_states))
        hidden_states = hidden_states + residual
        residual = hidden_states
        return residual + self.mlp(self.ln_2(hidden_states))


class GPT2Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c.vocab_size, c.hidden_size)
        self.wpe = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.drop = nn.Dropout(c.embd_pdrop)
        self.h = nn.ModuleList([GPT2Block(c, i) for i in range(c.num_hidden_layers)])
        self.ln_f = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_epsilon)

    def forward(self, input_ids):
        position_ids = torch.arange(input_ids.shape[-1]).unsqueeze(0)
        hidden_states = self.wte(input_ids) + self.wpe(position_ids)
        hidden_states = self.drop(hidden_states)
        for block in self.h:
            hidden_states = block(hidden_states)
        return self.ln_f(hidden_states)


class GPTNeoXAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.head_size = c.hidden_size // c.num_attention_heads
        self.num_key_value_groups = 1
        self.scaling = self.head_size ** -0.5
        self.attention_dropout = c.attention_dropout
        self.query_key_value = nn.Linear(c.hidden_size, 3 * c.hidden_size, bias=bool(c.attention_bias))
        self.dense = nn.Linear(c.hidden_size, c.hidden_size, bias=bool(c.attention_bias))

    def forward(self, hidden_states, attention_mask, position_embeddings):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, 3 * self.head_size)
        qkv = self.query_key_value(hidden_states).view(hidden_shape).transpose(1, 2)
        query_states, key_states, value_states = qkv.chunk(3, dim=-1)
        cos, sin = position_embeddings
        with scope("rope"):
            query_states, key_states = apply_rotary_pos_emb_partial(query_states, key_states, cos, sin)
        attn_output, _ = eager_attention_forward(
            self, query_states, key_states, value_states, attention_mask, scaling=self.scaling,
            dropout=0.0 if not self.training else self.attention_dropout,
        )
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.dense(attn_output)


class GPTNeoXMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(c.hidden_size, c.intermediate_size)
        self.dense_4h_to_h = nn.Linear(c.intermediate_size, c.hidden_size)
        self.act = act(c.hidden_act)

    def forward(self, hidden_states):
        return self.dense_4h_to_h(self.act(self.dense_h_to_4h(hidden_states)))


class GPTNeoXLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.use_parallel_residual = c.use_parallel_residual
        self.input_layernorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.post_attention_layernorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.post_attention_dropout = nn.Dropout(c.hidden_dropout)
        self.post_mlp_dropout = nn.Dropout(c.hidden_dropout)
        self.attention = GPTNeoXAttention(c)
        self.mlp = GPTNeoXMLP(c)

    def forward(self, hidden_states, attention_mask, position_embeddings):
        attn_output = self.attention(self.input_layernorm(hidden_states), attention_mask, position_embeddings)
        attn_output = self.post_attention_dropout(attn_output)
        if self.use_parallel_residual:
            mlp_output = self.mlp(self.post_attention_layernorm(hidden_states))
            mlp_output = self.post_mlp_dropout(mlp_output)
            return mlp_output + attn_output + hidden_states
        attn_output = attn_output + hidden_states
        mlp_output = self.mlp(self.post_attention_layernorm(attn_output))
        mlp_output = self.post_mlp_dropout(mlp_output)
        return mlp_output + attn_output


class GPTNeoXModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_in = nn.Embedding(c.vocab_size, c.hidden_size)
        self.emb_dropout = nn.Dropout(c.hidden_dropout)
        self.layers = nn.ModuleList([GPTNeoXLayer(c) for _ in range(c.num_hidden_layers)])
        self.final_layer_norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        head = c.hidden_size // c.num_attention_heads
        self.rotary_emb = RotaryEmbedding(int(head * c.rotary_pct), c.rotary_emb_base)

    def forward(self, input_ids):
        b, s = input_ids.shape
        hidden_states = self.emb_dropout(self.embed_in(input_ids))
        position_ids = torch.arange(s).unsqueeze(0)
        mask = causal_mask_4d(b, s, hidden_states.dtype)
        pe = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states, mask, pe)
        return self.final_layer_norm(hidden_states)


# --------------------------------------------------------------------------------------------
# ...ForCausalLM: lm_head, optional final soft-capping, ForCausalLMLoss.
# --------------------------------------------------------------------------------------------


def for_causal_lm_loss(logits, labels, vocab_size, ignore_index=-100):
    logits = logits.float()
    labels = F.pad(labels, (0, 1), value=ignore_index)
    shift_labels = labels[..., 1:].contiguous()
    logits = logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1).to(logits.device)
    return F.cross_entropy(logits, shift_labels, ignore_index=ignore_index, reduction="mean")


class ForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        mt = c.model_type
        if mt == "gpt2":
            self.transformer = GPT2Model(c)
            emb = self.transformer.wte
        elif mt == "gpt_neox":
            self.gpt_neox = GPTNeoXModel(c)
            emb = self.gpt_neox.embed_in
        else:
            self.model = DecoderModel(c, mt)
            emb = self.model.embed_tokens
        head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        if c.tie_word_embeddings:
            head.weight = emb.weight
        if mt == "gpt_neox":
            self.embed_out = head
        else:
            self.lm_head = head
        for name, m in self.named_modules():  # HF _init_weights: normal(0, initializer_range)
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=c.initializer_range)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, input_ids, labels):
        mt = self.c.model_type
        body = self.transformer if mt == "gpt2" else (self.gpt_neox if mt == "gpt_neox" else self.model)
        hidden_states = body(input_ids)
        head = self.embed_out if mt == "gpt_neox" else self.lm_head
        logits = head(hidden_states[:, slice(0, None), :])  # logits_to_keep=0
        cap = self.c.final_logit_softcapping if mt in ("gemma2", "gemma3_text") else None
        if cap is not None:
            with scope("final_logit_softcap"):
                logits = logits / cap
                logits = torch.tanh(logits)
                logits = logits * cap
        with scope("loss"):
            loss = for_causal_lm_loss(logits, labels, self.c.vocab_size)
        return loss


# --------------------------------------------------------------------------------------------
# LoRA, as PEFT's lora.Linear runs it (peft/tuners/lora/layer.py, Linear.forward): the base layer
# frozen, then result + lora_B(lora_A(lora_dropout(x))) * scaling, with the input cast to the
# adapters' dtype (the same here: no copy). Every base parameter is frozen (get_peft_model).
# --------------------------------------------------------------------------------------------


class LoraLinear(nn.Module):
    def __init__(self, base, rank, dropout, alpha=16.0):
        super().__init__()
        self.base_layer = base
        if isinstance(base, Conv1D):  # fan_in_fan_out: weight is (in, out)
            fan_in, fan_out = base.weight.shape
        else:
            fan_out, fan_in = base.weight.shape
        self.lora_dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.lora_A = nn.Linear(fan_in, rank, bias=False)
        self.lora_B = nn.Linear(rank, fan_out, bias=False)
        nn.init.normal_(self.lora_A.weight, std=0.02)
        nn.init.normal_(self.lora_B.weight, std=0.02)  # PEFT starts B at 0; any value saves alike
        self.scaling = alpha / rank

    def forward(self, x):
        result = self.base_layer(x)
        return result + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling


class MatMul4BitSaves(torch.autograd.Function):
    """What bitsandbytes' MatMul4Bit (bitsandbytes/autograd/_functions.py) keeps for backward: its
    input A and the weight whenever A or the weight needs a gradient (`ctx.tensors = (A, B)`), though
    only the weight is used there. The weight stays 16-bit here (the codes are a parameter either way,
    not counted); what is saved is bitsandbytes' choice, kept with save_for_backward so that the
    saved-tensor hooks see it as they see every other saved tensor."""

    @staticmethod
    def forward(ctx, a, weight, bias):
        out = F.linear(a, weight, bias)
        if ctx.needs_input_grad[0] or ctx.needs_input_grad[1]:
            ctx.save_for_backward(a, weight)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        _, weight = ctx.saved_tensors
        return grad_output @ weight, None, None


class Linear4bit(nn.Module):
    """bitsandbytes' Linear4bit as transformers loads a 4-bit model: the input cast to the compute
    dtype (the same here: no copy), MatMul4Bit, the output cast back."""

    def __init__(self, base):
        super().__init__()
        self.base = base
        self.transposed = isinstance(base, Conv1D)  # GPT-2's weight is (in, out)

    def forward(self, x):
        w = self.base.weight.t() if self.transposed else self.base.weight
        return MatMul4BitSaves.apply(x, w, self.base.bias)


def quantize_4bit(model):
    """Every linear but the output layer (transformers' get_keys_to_not_convert) as Linear4bit,
    the base layers inside LoRA's wrappers included."""
    chosen = [name for name, m in model.named_modules()
              if isinstance(m, (nn.Linear, Conv1D)) and name not in ("lm_head", "embed_out")
              and ".lora_A" not in name and ".lora_B" not in name]
    for name in chosen:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, Linear4bit(getattr(parent, child)))


def apply_lora(model, rank, targets, dropout):
    """Freezes every parameter and wraps each linear a target names (PEFT's match: the name, or
    its suffix after a dot; "all-linear": every linear but the output layer) with LoraLinear."""
    for p in model.parameters():
        p.requires_grad_(False)
    chosen = []
    for name, m in model.named_modules():
        if not isinstance(m, (nn.Linear, Conv1D)):
            continue
        if targets == ["all-linear"]:
            if name not in ("lm_head", "embed_out"):
                chosen.append(name)
        elif any(name == t or name.endswith("." + t) for t in targets):
            chosen.append(name)
    for name in chosen:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        base = getattr(parent, child)
        setattr(parent, child, LoraLinear(base, rank, dropout).to(base.weight.dtype))
    return chosen


# --------------------------------------------------------------------------------------------
# Measurement.
# --------------------------------------------------------------------------------------------

LAYER_RE = re.compile(r"^(?:model\.layers|transformer\.h|gpt_neox\.layers)\.(\d+)(?:\.(.*))?$")


def classify(scope_name):
    """-> ('layer', idx, subkey) or ('outside', bucket, None)."""
    m = LAYER_RE.match(scope_name)
    if m:
        sub = m.group(2) or "(layer)"
        sub = re.sub(r"\.(\d+)(?=\.|$)", ".*", sub)  # experts.3.w1 -> experts.*.w1
        return "layer", int(m.group(1)), sub
    if re.search(r"(embed_tokens|embed_in|wte|wpe|\.drop|emb_dropout|embed_scale)", scope_name):
        return "outside", "embedding", None
    if re.search(r"(model\.norm|ln_f|final_layer_norm)$", scope_name):
        return "outside", "final_norm", None
    if re.search(r"^(lm_head|embed_out)$", scope_name):
        return "outside", "lm_head", None
    if scope_name == "final_logit_softcap":
        return "outside", "final_logit_softcap", None
    if scope_name.startswith("loss"):
        return "outside", "loss", None
    return "outside", "other:" + scope_name, None


def run(cfg, seq_len, micro_batch, seed=0, verbose=False, lora=None):
    torch.manual_seed(seed)
    ROUTING_LOG.clear()
    model = ForCausalLM(cfg).to(BF16)
    if lora:
        apply_lora(model, lora["rank"], lora["targets"], lora["dropout"])
        if lora.get("quantize"):
            quantize_4bit(model)
    model.train()
    params = list(model.parameters())
    param_ptrs = {storage_of(p)[0] for p in params}
    buffer_ptrs = {storage_of(bf)[0] for bf in model.buffers()}
    input_ids = torch.randint(0, cfg.vocab_size, (micro_batch, seq_len), dtype=torch.long)
    labels = input_ids.clone()
    handles = install_scope_hooks(model)
    tracker = LiveTracker(param_ptrs | buffer_ptrs | {storage_of(input_ids)[0], storage_of(labels)[0]})
    rec = SavedRecorder(param_ptrs, buffer_ptrs, tracker)
    with tracker:
        with torch.autograd.graph.saved_tensors_hooks(rec.pack, rec.unpack):
            loss = model(input_ids, labels)
        forward_peak = tracker.peak
        live_after_forward = tracker.cur
        saved = rec.alive()
        tracker.reset_peak()
        loss.backward()
        backward_peak = tracker.peak
        live_after_backward = tracker.cur
    for h in handles:
        h.remove()
    del loss
    grad_bytes = sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None)

    nl = cfg.num_hidden_layers
    layers = [0] * nl
    per_layer = {}
    outside = {"embedding": 0, "final_norm": 0, "lm_head": 0, "loss": 0}
    shared = 0
    shared_items, buffers_bytes, details = [], 0, []
    for r in saved:
        savers = {classify(sc)[1] for sc in r["savers"] if classify(sc)[0] == "layer"}
        kind, where, sub = classify(r["scope"])
        created = r["created"]
        created_in_layer = created is not None and classify(created)[0] == "layer"
        entry = {k: r[k] for k in ("nbytes", "dtype", "shape", "after_op", "scope", "created", "requires_grad")}
        entry["savers"] = sorted(set(r["savers"]))
        if r["buffer"]:
            buffers_bytes += r["nbytes"]
            entry["bucket"] = "buffer"
        elif kind == "layer" and (
            len(savers) > 1 or (not r["requires_grad"] and created is not None and not created_in_layer)
        ):
            shared += r["nbytes"]
            entry["bucket"] = "shared"
            shared_items.append(entry)
        elif kind == "layer":
            layers[where] += r["nbytes"]
            per_layer.setdefault(sub, [0] * nl)[where] += r["nbytes"]
            entry["bucket"] = f"layer{where}:{sub}"
        else:
            outside[where] = outside.get(where, 0) + r["nbytes"]
            entry["bucket"] = where
        details.append(entry)
    total = sum(layers) + sum(outside.values()) + shared
    out = {
        "torch": torch.__version__,
        "family": cfg.model_type,
        "seq_len": seq_len,
        "micro_batch": micro_batch,
        "layers": layers,
        "per_layer": dict(sorted(per_layer.items())),
        "outside": outside,
        "shared": shared,
        "total_saved": total,
        "saved_buffers": buffers_bytes,
        "forward_peak": forward_peak,
        "live_after_forward": live_after_forward,
        "backward_peak": backward_peak,
        "live_after_backward": live_after_backward,
        "param_grad_bytes": grad_bytes,
    }
    if ROUTING_LOG:
        out["tokens_per_expert"] = [list(x) for x in ROUTING_LOG]
    if verbose:
        out["saved"] = details
    return out


def optimizer_step_peak(S, foreach):
    torch.manual_seed(0)
    p = torch.zeros(S, dtype=F32, requires_grad=True)
    p.grad = torch.randn(S, dtype=F32)
    opt = torch.optim.AdamW([p], lr=1e-3, foreach=foreach)
    opt.step()
    excluded = {storage_of(p)[0], storage_of(p.grad)[0]}
    for st in opt.state[p].values():
        if isinstance(st, torch.Tensor):
            excluded.add(storage_of(st)[0])
    tracker = LiveTracker(excluded)
    with tracker:
        opt.step()
    return tracker.peak


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", action="append", help="tests/plan/torch_reference/FAMILY.json; with --shapes, "
                    "may be given several times (one interpreter and one torch import for them all)")
    ap.add_argument("--seq-len", type=int, default=32)
    ap.add_argument("--micro-batch", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--verbose", action="store_true", help="list every saved storage (dtype, shape, scope)")
    ap.add_argument("--shapes", metavar="SxB,...",
                    help="several shapes in one run (8x2,12x3): one JSON object a line")
    ap.add_argument("--optimizer-step", type=int, metavar="S", help="AdamW step temporaries on S fp32 elements")
    ap.add_argument("--lora-rank", type=int, help="freeze the model and add LoRA adapters of this rank")
    ap.add_argument("--lora-targets", default="all-linear", help="comma-separated names, or all-linear")
    ap.add_argument("--lora-dropout", type=float, default=0.0)
    ap.add_argument("--quantize", choices=["nf4"], help="with --lora-rank: the base's linears as bitsandbytes' Linear4bit")
    a = ap.parse_args()
    lora = None
    if a.lora_rank:
        lora = {"rank": a.lora_rank, "targets": a.lora_targets.split(","), "dropout": a.lora_dropout,
                "quantize": a.quantize}
    torch.set_num_threads(2)
    if a.optimizer_step:
        S = a.optimizer_step
        fe = optimizer_step_peak(S, True)
        si = optimizer_step_peak(S, False)
        print(json.dumps({"torch": torch.__version__, "adamw_foreach_peak_bytes": fe, "adamw_single_peak_bytes": si,
                          "elements": S, "adamw_foreach_bytes_per_element": fe / S,
                          "adamw_single_bytes_per_element": si / S}))
        return 0
    if not a.config:
        ap.error("--config or --optimizer-step is required")
    if a.shapes:
        for path in a.config:
            cfg = load_config(path)
            for shape in a.shapes.split(","):
                s, b = (int(n) for n in shape.split("x"))
                print(json.dumps(run(cfg, s, b, a.seed, lora=lora)))
        return 0
    if len(a.config) > 1:
        ap.error("several --config need --shapes")
    cfg = load_config(a.config[0])
    print(json.dumps(run(cfg, a.seq_len, a.micro_batch, a.seed, a.verbose, lora),
                     indent=None if not a.verbose else 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
