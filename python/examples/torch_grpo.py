"""One GRPO step in plain PyTorch on toolrl's advantage stream, as `toolrl learn` takes it.

    PYTHONPATH=python /usr/bin/python3 python/examples/torch_grpo.py \\
        --model models/calc --redis redis://127.0.0.1:6379 --job calc-demo --batch 8 --dtype float64

It loads a toolrl policy folder (config.json + model.safetensors, a Hugging Face
Llama folder) into a small config-driven Llama module (no transformers needed),
reads one batch of advantage records through its own consumer group
(toolrl.StreamReader), builds a verl-named batch (toolrl.to_verl_batch),
recomputes the policy's logprobs at each record's sampling temperature, takes
the PPO-clip GRPO loss of learner/loss.go, backpropagates, measures the
gradient norm (before clipping), clips, takes one AdamW step with learner's
parameter groups, acknowledges the records and prints one JSON line with
metrics named as `toolrl learn --metrics` names them.

What it does not do (toolrl learn does): several minibatches or epochs per
batch, warmup, dropping stale records, publishing a version. The loss, the
ratio clamp, the dual clip, the k3 KL, TIS and the three aggregations are
those of learner/loss.go; python/tests/test_torch_equality.py checks that the
loss and gradient norm in float64 equal those of `toolrl learn --precision
float64` on the same records (docs/python.md has the numbers).
"""
import argparse
import json
import math
import os
import struct
import sys
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import toolrl  # noqa: E402

# ---------------------------------------------------------------- safetensors
# The format (github.com/huggingface/safetensors): an 8-byte little-endian
# header length N, N bytes of JSON {name: {dtype, shape, data_offsets}}, then
# the raw little-endian tensors, offsets relative to the end of the header.
_ST_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
              "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}


def load_safetensors(path):
    """{name: numpy array} of one .safetensors file (BF16 widened to float32)."""
    with open(path, "rb") as fh:
        buf = fh.read()
    if len(buf) < 8:
        raise ValueError(f"{path}: {len(buf)} bytes, too short for a safetensors header")
    (n,) = struct.unpack("<Q", buf[:8])
    if 8 + n > len(buf):
        raise ValueError(f"{path}: header of {n} bytes runs past the file's {len(buf)}")
    header = json.loads(buf[8:8 + n])
    data = memoryview(buf)[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        raw = data[b:e]
        if t["dtype"] == "BF16":  # the upper half of a float32
            arr = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        elif t["dtype"] in _ST_DTYPES:
            arr = np.frombuffer(raw, _ST_DTYPES[t["dtype"]])
        else:
            raise ValueError(f"{path}: tensor {name}: dtype {t['dtype']} not supported")
        out[name] = arr.reshape(t["shape"])
    return out


def load_weights(folder):
    """The folder's model.safetensors, or the shards its model.safetensors.index.json names."""
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        files = sorted(set(json.load(open(index))["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    w = {}
    for f in files:
        w.update(load_safetensors(os.path.join(folder, f)))
    return w


# ---------------------------------------------------------------- the model
# Hugging Face's LlamaForCausalLM math: RMSNorm, rotary embeddings with
# rotate_half, grouped-query attention, SwiGLU MLP, tied or untied head.

@dataclass
class LlamaConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    rope_scaling: dict
    max_position_embeddings: int
    tie_word_embeddings: bool
    attention_bias: bool
    pad_token_id: int

    @classmethod
    def from_folder(cls, folder):
        c = json.load(open(os.path.join(folder, "config.json")))
        if c.get("model_type", "llama") not in ("llama", "mistral"):
            raise ValueError(f"{folder}/config.json: model_type {c.get('model_type')!r}: this example builds llama (and mistral without a sliding window)")
        if c.get("model_type") == "mistral" and c.get("sliding_window"):
            raise ValueError(f"{folder}/config.json: sliding_window {c['sliding_window']}: not supported")
        if c.get("mlp_bias"):
            raise ValueError(f"{folder}/config.json: mlp_bias true: not supported")
        if c.get("hidden_act", "silu") != "silu":
            raise ValueError(f"{folder}/config.json: hidden_act {c['hidden_act']!r}: want silu")
        heads = c["num_attention_heads"]
        pad = c.get("pad_token_id")
        return cls(
            vocab_size=c["vocab_size"], hidden_size=c["hidden_size"], intermediate_size=c["intermediate_size"],
            num_hidden_layers=c["num_hidden_layers"], num_attention_heads=heads,
            num_key_value_heads=c.get("num_key_value_heads") or heads,
            head_dim=c.get("head_dim") or c["hidden_size"] // heads,
            rms_norm_eps=c.get("rms_norm_eps", 1e-6), rope_theta=c.get("rope_theta", 10000.0),
            rope_scaling=c.get("rope_scaling") or None,
            max_position_embeddings=c["max_position_embeddings"],
            tie_word_embeddings=c.get("tie_word_embeddings", True), attention_bias=c.get("attention_bias", False),
            pad_token_id=pad if isinstance(pad, int) else 0)


def rope_inv_freq(cfg):
    """Inverse frequencies [head_dim/2] in float32, as transformers computes them
    (1/theta^(2i/d), then rope_scaling "linear" or "llama3"; "dynamic" is plain
    RoPE up to max_position_embeddings, which the actor never passes)."""
    d = cfg.head_dim
    inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    rs = cfg.rope_scaling
    kind = (rs or {}).get("rope_type", (rs or {}).get("type", "default"))
    if kind in ("default", "dynamic"):
        return inv
    if kind == "linear":
        return inv / rs["factor"]
    if kind == "llama3":
        factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv
        out = torch.where(wavelen > old / low, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * out / factor + smooth * out
        medium = ~(wavelen < old / high) & ~(wavelen > old / low)
        return torch.where(medium, smoothed, out)
    raise ValueError(f"rope_scaling type {kind!r}: this example does default, linear, llama3 and dynamic")


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat([-b, a], dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.h, self.kvh, self.hd = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        bias = cfg.attention_bias
        self.q_proj = nn.Linear(cfg.hidden_size, self.h * self.hd, bias=bias)
        self.k_proj = nn.Linear(cfg.hidden_size, self.kvh * self.hd, bias=bias)
        self.v_proj = nn.Linear(cfg.hidden_size, self.kvh * self.hd, bias=bias)
        self.o_proj = nn.Linear(self.h * self.hd, cfg.hidden_size, bias=bias)

    def forward(self, x, cos, sin, mask):
        return self.o_proj(self.attend(self.q_proj(x), self.k_proj(x), self.v_proj(x), cos, sin, mask))

    def attend(self, q, k, v, cos, sin, mask):
        """Rotary embeddings and masked softmax attention of projected q (B, T, heads·hd),
        k and v (B, T, kv_heads·hd); the output (B, T, heads·hd) before o_proj."""
        B, T, _ = q.shape
        q = q.view(B, T, self.h, self.hd).transpose(1, 2)
        k = k.view(B, T, self.kvh, self.hd).transpose(1, 2)
        v = v.view(B, T, self.kvh, self.hd).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        rep = self.h // self.kvh  # grouped-query attention: each kv head serves rep query heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd) + mask
        out = att.softmax(-1) @ v
        return out.transpose(1, 2).reshape(B, T, self.h * self.hd)


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Inner(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(Layer(cfg) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class Llama(nn.Module):
    """LlamaForCausalLM; parameter names are the checkpoint's (model.layers.0.self_attn.q_proj.weight, ...)."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.model = Inner(cfg)
        if not cfg.tie_word_embeddings:
            self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        self.register_buffer("inv_freq", rope_inv_freq(cfg), persistent=False)

    @classmethod
    def from_folder(cls, folder, dtype=torch.float32):
        cfg = LlamaConfig.from_folder(folder)
        m = cls(cfg)
        w = load_weights(folder)
        own = dict(m.named_parameters())
        missing = sorted(set(own) - set(w))
        if missing:
            raise ValueError(f"{folder}: weights missing from the checkpoint: {missing[:5]}")
        with torch.no_grad():
            for name, p in own.items():
                if tuple(w[name].shape) != tuple(p.shape):
                    raise ValueError(f"{folder}: {name} has shape {w[name].shape}, config says {tuple(p.shape)}")
                p.copy_(torch.from_numpy(w[name].astype(np.float32)))
        return m.to(dtype)

    def rope(self, position_ids, dtype):
        """cos, sin (B, 1, T, head_dim) of position_ids (B, T), as transformers'
        LlamaRotaryEmbedding: angles in float32, then cos/sin in dtype."""
        ang = position_ids[:, None, :, None].float() * self.inv_freq.float()
        ang = torch.cat([ang, ang], dim=-1).to(dtype)
        return ang.cos(), ang.sin()

    @staticmethod
    def attention_bias(attention_mask, dtype):
        """The additive causal and padding mask (B, 1, T, T) of attention_mask (B, T)."""
        T = attention_mask.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=attention_mask.device).tril()
        ok = causal[None, None] & attention_mask[:, None, None, :].bool()
        # A finite minimum, not -inf: a left-pad query row sees no key and must not become NaN.
        return torch.zeros(ok.shape, dtype=dtype, device=attention_mask.device).masked_fill(~ok, torch.finfo(dtype).min)

    def head_weight(self):
        """The LM head (V, hidden): the embedding when tied."""
        return self.model.embed_tokens.weight if self.cfg.tie_word_embeddings else self.lm_head.weight

    def forward(self, input_ids, attention_mask, position_ids):
        """Logits (B, T, V) of a left/right-padded batch (verl's layout)."""
        x = self.model.embed_tokens(input_ids)
        cos, sin = self.rope(position_ids, x.dtype)
        mask = self.attention_bias(attention_mask, x.dtype)
        for layer in self.model.layers:
            x = layer(x, cos, sin, mask)
        x = self.model.norm(x)
        return x @ self.head_weight().t()


def response_logprobs(model, batch, temperature):
    """log softmax(z/T)[token] of every response token (B, R), and the entropy of
    softmax(z/T) there, over the full vocabulary (as the actor and toolrl learn score)."""
    P, R = batch["prompts"].shape[1], batch["responses"].shape[1]
    logits = model(batch["input_ids"], batch["attention_mask"], batch["position_ids"])
    z = logits[:, P - 1:P + R - 1, :] / temperature[:, None, None]
    logp_all = z.log_softmax(-1)
    logp = logp_all.gather(-1, batch["responses"][..., None]).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logp, entropy


# ---------------------------------------------------------------- the loss
LOG_RATIO_CLAMP = 20.0  # advantage.LogRatioClamp
K3_CLAMP = 10.0  # advantage.K3Clamp


@dataclass
class LossConfig:
    """learner.LossConfig's knobs, with toolrl learn's defaults."""
    clip_low: float = 0.2
    clip_high: float = 0.28
    dual_clip: float = 3.0  # 0: off
    tis_cap: float = 0.0  # 0: off
    kl_beta: float = 0.0
    agg: str = "token-mean"  # | seq-mean-token-mean | seq-mean-token-sum-norm
    norm_length: int = 256


def token_weights(mask, cfg):
    """Each token's weight in the aggregated loss (learner LossConfig.Weights); 0 off the mask."""
    m = mask.to(torch.float64)
    B = m.shape[0]
    if cfg.agg == "token-mean":
        return m / m.sum()
    if cfg.agg == "seq-mean-token-mean":
        per_seq = m.sum(1, keepdim=True)
        non_empty = (per_seq > 0).sum()
        return m / (per_seq.clamp(min=1) * non_empty)
    if cfg.agg == "seq-mean-token-sum-norm":  # Dr.GRPO: 1/(G·L), G every sequence of the batch
        return m / (B * cfg.norm_length)
    raise ValueError(f"loss aggregation {cfg.agg!r}: want token-mean, seq-mean-token-mean or seq-mean-token-sum-norm")


def _clamp_no_grad_outside(x, bound):
    """x where |x| < bound (gradient passes), else x clamped to ±bound with no gradient."""
    inside = (x > -bound) & (x < bound)
    return torch.where(inside, x, x.detach().clamp(-bound, bound))


def grpo_loss(logp, batch, cfg, ref_logp=None):
    """The PPO-clip GRPO loss of learner/loss.go, differentiable in logp (B, R).

    Per trained token, r = exp(clamp(logp − base, ±20)) with base the behaviour
    logprob (rollout_log_probs) or, with TIS, the policy's own logprob before
    the step:
        ℓ_pg = max(−A·r, −A·clip(r, 1−ε_low, 1+ε_high))   (the clipped branch passes no gradient)
        ℓ_pg = min(ℓ_pg, −c·A)                             for A < 0 with dual clip c
        ℓ    = w_tis·ℓ_pg + β·k3(logp, ref)                w_tis = min(π_old/π_behaviour, C)
    aggregated with token_weights. Returns (loss, stats) with stats named as toolrl learn's metrics.
    """
    mask = batch["response_mask"].bool()
    adv = batch["advantages"].to(logp.dtype)
    behaviour = batch["rollout_log_probs"].to(logp.dtype)
    w = token_weights(mask, cfg).to(logp.dtype)
    tis_w = None
    base = behaviour
    if cfg.tis_cap > 0:
        old = logp.detach()  # one step per batch: the policy before the step is the current one
        tis_w = torch.exp((old - behaviour).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)).clamp(max=cfg.tis_cap)
        base = old
    r = torch.exp(_clamp_no_grad_outside(logp - base, LOG_RATIO_CLAMP))
    loss1 = -adv * r
    loss2 = -adv * r.clamp(1 - cfg.clip_low, 1 + cfg.clip_high)
    clipped = loss2 > loss1
    pg = torch.where(clipped, loss2.detach(), loss1)
    dual = torch.zeros_like(mask)
    if cfg.dual_clip > 0:
        bound = -cfg.dual_clip * adv
        dual = (adv < 0) & (pg > bound)
        pg = torch.where(dual, bound, pg)
    if tis_w is not None:
        pg = tis_w * pg
    total = pg
    kl = torch.zeros((), dtype=torch.float64)
    kl_tokens = 0
    if ref_logp is not None:
        d = _clamp_no_grad_outside(logp - ref_logp.to(logp.dtype), LOG_RATIO_CLAMP)
        k3 = _clamp_no_grad_outside(torch.exp(-d) + d - 1, K3_CLAMP)
        kl_tokens = int(mask.sum())
        kl = k3.detach()[mask].double().sum() / max(kl_tokens, 1)
        if cfg.kl_beta > 0:
            total = total + cfg.kl_beta * k3
    loss = (w * total)[mask].sum()
    n = int(mask.sum())
    rm = r.detach()[mask].double()
    a = adv[mask].double()
    stats = {
        "loss": float(loss.detach()),
        # Σ|w·ℓ|: the size of the terms the loss sums (a GRPO loss can cancel to ≈ 0)
        "loss_scale": float((w * total).detach().abs()[mask].sum()), "pg_loss": float((w * pg).detach()[mask].sum()), "kl": float(kl),
        "clip_frac_high": float((clipped & (adv > 0))[mask].sum()) / n,
        "clip_frac_low": float((clipped & (adv < 0))[mask].sum()) / n,
        "clip_frac_dual": float(dual[mask].sum()) / n,
        "ratio_mean": float(rm.mean()), "ratio_max": float(rm.max()),
        "adv_abs_mean": float(a.abs().mean()), "tokens_trained": n, "kl_tokens": kl_tokens,
    }
    return loss, stats


# ---------------------------------------------------------------- the step

def grad_norm(model):
    """Global L2 norm of the gradients, summed in float64 (a tied embedding once)."""
    return math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in model.parameters() if p.grad is not None))


def adamw(model, lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    """AdamW with toolrl's groups: decay on matrices and embeddings (rank ≥ 2), none on norms and biases."""
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=betas, eps=eps)


def prepare(records, dtype, pad_token_id=0):
    """The verl batch (torch tensors) of normalised records, and each row's sampling temperature."""
    out = toolrl.to_verl_batch(records, pad_token_id=pad_token_id, require_ref=False, return_tensors="pt")
    temps = []
    for r in records:
        t = r.get("temperature")
        if t is None or not t > 0:
            raise ValueError(f"record {r.get('trajectory_id')}: temperature {t!r}: want the sampling temperature > 0 (a v2+ record)")
        temps.append(float(t))
    return out["batch"], torch.tensor(temps, dtype=dtype)


def train_step(model, records, cfg, optimizer=None, ref_model=None, clip_grad=1.0, logprobs=response_logprobs):
    """Loss, backward, gradient norm (before clipping), clip, optimiser step. Returns the metrics.
    logprobs(model, batch, temperatures) gives (logp, entropy) (B, R) of the response tokens
    (response_logprobs, or scripts/bench/learner_peer.py's packed one)."""
    dtype = next(model.parameters()).dtype
    batch, temps = prepare(records, dtype, model.cfg.pad_token_id)
    model.zero_grad(set_to_none=True)
    logp, entropy = logprobs(model, batch, temps)
    ref_logp = None
    if "ref_log_prob" in batch:
        ref_logp = batch["ref_log_prob"]  # the records' reference logprobs
    elif ref_model is not None:
        with torch.no_grad():
            ref_logp, _ = logprobs(ref_model, batch, temps)
    elif cfg.kl_beta > 0:
        raise ValueError("kl_beta > 0 needs records with ref_log_prob or a reference model")
    loss, st = grpo_loss(logp, batch, cfg, ref_logp)
    loss.backward()
    norm = grad_norm(model)
    if clip_grad > 0 and norm > clip_grad:
        with torch.no_grad():
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.mul_(clip_grad / norm)
    if optimizer is not None:
        optimizer.step()
    mask = batch["response_mask"].bool()
    st.update(grad_norm=norm, records=len(records), entropy=float(entropy.detach()[mask].double().mean()),
              tokens=int(batch["attention_mask"].sum()))
    return st


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="policy folder (config.json, model.safetensors)")
    ap.add_argument("--ref-model", default="", help="reference policy for the KL of records without ref_log_prob")
    ap.add_argument("--redis", required=True)
    ap.add_argument("--job", required=True)
    ap.add_argument("--group", default="torch", help="this trainer's consumer group (toolrl learn's is 'learner')")
    ap.add_argument("--consumer", default="rank0")
    ap.add_argument("--batch", type=int, default=256, help="records per step")
    ap.add_argument("--block-ms", type=int, default=10000, help="how long to wait for the batch to fill")
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--clip-grad", type=float, default=1.0)
    d = LossConfig()
    ap.add_argument("--clip-low", type=float, default=d.clip_low)
    ap.add_argument("--clip-high", type=float, default=d.clip_high)
    ap.add_argument("--dual-clip", type=float, default=d.dual_clip)
    ap.add_argument("--tis-cap", type=float, default=d.tis_cap)
    ap.add_argument("--kl-beta", type=float, default=d.kl_beta)
    ap.add_argument("--loss-agg", default=d.agg)
    ap.add_argument("--loss-norm-length", type=int, default=d.norm_length)
    ap.add_argument("--no-ack", action="store_true", help="leave the records pending (another run of the group re-reads them)")
    a = ap.parse_args(argv)
    dtype = getattr(torch, a.dtype)
    cfg = LossConfig(a.clip_low, a.clip_high, a.dual_clip, a.tis_cap, a.kl_beta, a.loss_agg, a.loss_norm_length)

    model = Llama.from_folder(a.model, dtype)
    ref = Llama.from_folder(a.ref_model or a.model, dtype) if (a.ref_model or a.kl_beta > 0) else None
    reader = toolrl.StreamReader(a.redis, a.job, group=a.group, consumer=a.consumer)
    records = []
    while len(records) < a.batch:  # one batch: the first --batch records of the group, in stream order
        got = reader.read(count=a.batch - len(records), block_ms=a.block_ms)
        if not got:
            break
        records += got
    if not records:
        sys.exit(f"torch_grpo: no records on {reader.key} within {a.block_ms} ms")
    opt = adamw(model, lr=a.lr, weight_decay=a.weight_decay)
    st = train_step(model, records, cfg, opt, ref_model=ref, clip_grad=a.clip_grad)
    if not a.no_ack:
        reader.ack(records)  # after the step: a crash before it leaves them pending, redelivered
    st["trajectory_ids"] = [r["trajectory_id"] for r in records]
    print(json.dumps(st))


if __name__ == "__main__":
    main()
