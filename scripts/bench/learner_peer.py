"""The PyTorch peer of the learner's update step (make bench-learner-peer).

    /usr/bin/python3 scripts/bench/learner_peer.py run DIR [--updates 10] [--threads 1,2]
    /usr/bin/python3 scripts/bench/learner_peer.py probe OUT.json [--threads 2]
    /usr/bin/python3 scripts/bench/learner_peer.py report ROOT

`run` reads what BenchmarkLearnerUpdate wrote with -peer-dir DIR, one folder
per float32 shape (DIR/calc, DIR/tiny): the model before its first update
(config.json, model.safetensors), the batch (records.jsonl) and the Go run's
figures (go.json). For each shape it loads the model with
python/examples/torch_grpo.py's Llama and takes that example's train_step
(GRPO PPO-clip loss of learner/loss.go with toolrl learn's defaults, backward,
float64 gradient norm, clip at 1, AdamW with toolrl's parameter groups, lr
1e-4), as Learner.Update does with default options: one minibatch, one epoch.
The logprobs are computed as the Go trainer computes them (model/train):
every projection and MLP on the packed tokens only (no padding rows),
attention per sequence (a padded (B, T, T) batch), the final norm on every
token and the LM head only at the rows that predict a trained token. For
each thread count of --threads in turn it times one warm-up update on a
copy, then --updates updates from the written weights, each from the
records (the batch tensors built inside the timing, as Learner.Update
prepares its sequences inside its own), and writes DIR/<shape>/torch.json
with the best thread count's figures (and each count's under by_threads):
on 2 vCPUs shared with other work one thread can beat two, OpenMP workers
spinning on the core the other needs. The first timed update's loss and
gradient norm are compared with the Go run's first update (same weights,
same batch).

`probe` measures this machine's limits with the same threads: the float32
GEMM rate of torch.mm (2048², OpenBLAS) and a STREAM triad a = b + s·c over
arrays far larger than the caches (bytes counted as STREAM counts them,
3 × 4 per element), and writes them to OUT.json.

`report` prints, for ROOT/round-*/<shape>, each side's tokens/s (min and
median over rounds), the ratio of medians, the update's FLOPs and each
side's GFLOP/s and share of the FMA peak (ROOT/fma.txt: model/train's
BenchmarkFMAPeak runs, the best taken) and of the probe's GEMM rate.

FLOP accounting (per update, forward × 3 for forward and backward): 2 FLOP
per weight per token for every projection and the MLP on the N packed
tokens; 2 · 2 · T² · heads·head_dim per layer and sequence of T tokens for
QKᵀ and PV (the full square, not the causal half); 2 · hidden · vocab per
trained row for the head. Norms, RoPE, softmax, the loss and AdamW are left
out (O(N·hidden) or O(parameters)).
"""
import argparse
import copy
import ctypes
import ctypes.util
import glob
import json
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "examples"))
import toolrl  # noqa: E402
import torch_grpo as tg  # noqa: E402


# ---------------------------------------------------------------- the update

def packed_logprobs(model, batch, temperature):
    """(logp, entropy) (B, R) of the response tokens, as response_logprobs returns
    them, computed as model/train computes them: linear layers on the packed
    tokens, attention per sequence, the head only at trained rows. Entries off
    the response mask are 0."""
    ids, am, pos = batch["input_ids"], batch["attention_mask"], batch["position_ids"]
    B, T = ids.shape
    P = batch["prompts"].shape[1]
    valid = am.reshape(-1).bool()
    idx = valid.nonzero().squeeze(1)  # packed token k sits at padded flat index idx[k]
    packed_of = am.reshape(-1).cumsum(0) - 1  # padded flat index -> packed index (at valid ones)
    x = model.model.embed_tokens(ids.reshape(-1)[idx])  # (N, hidden)
    cos, sin = model.rope(pos, x.dtype)
    mask = model.attention_bias(am, x.dtype)

    def pad(t):  # (N, C) -> (B, T, C), zeros at padding
        return t.new_zeros(B * T, t.shape[1]).index_copy(0, idx, t).view(B, T, -1)

    for layer in model.model.layers:
        a = layer.self_attn
        h = layer.input_layernorm(x)
        o = a.attend(pad(a.q_proj(h)), pad(a.k_proj(h)), pad(a.v_proj(h)), cos, sin, mask)
        x = x + a.o_proj(o.reshape(B * T, -1)[idx])
        x = x + layer.mlp(layer.post_attention_layernorm(x))
    x = model.model.norm(x)
    rb, rj = batch["response_mask"].bool().nonzero(as_tuple=True)  # trained tokens (row, response index)
    rows = packed_of[rb * T + P + rj - 1]  # the packed positions that predict them
    z = (x[rows] @ model.head_weight().t()) / temperature[rb, None]
    logp_all = z.log_softmax(-1)
    target = batch["responses"][rb, rj]
    logp_rows = logp_all.gather(-1, target[:, None]).squeeze(-1)
    shape = batch["response_mask"].shape
    logp = torch.zeros(shape, dtype=x.dtype).index_put((rb, rj), logp_rows)
    with torch.no_grad():
        ent = torch.zeros(shape, dtype=x.dtype).index_put((rb, rj), -(logp_all.exp() * logp_all).sum(-1))
    return logp, ent


def run_shape(folder, updates, threads):
    records = list(toolrl.read_jsonl(os.path.join(folder, "records.jsonl")))
    go = json.load(open(os.path.join(folder, "go.json")))
    cfg = tg.LossConfig()  # learner.DefaultOptions' loss

    def fresh():
        m = tg.Llama.from_folder(folder, torch.float32)
        return m, tg.adamw(m)  # lr 1e-4, weight decay 0.01, as DefaultOptions

    # Each thread count in turn: a warm-up update on a copy, then the timed
    # updates from the written weights. The peer's figure is its best count
    # (on 2 vCPUs shared with other work, 1 thread can beat 2: OpenMP
    # workers spin on a core the other thread needs).
    by_threads = {}
    for t in threads:
        torch.set_num_threads(t)
        warm, warm_opt = fresh()
        tg.train_step(warm, records, cfg, warm_opt, clip_grad=1.0, logprobs=packed_logprobs)
        model, opt = fresh()
        seconds, first = [], None
        for i in range(updates):
            t0 = time.perf_counter()
            st = tg.train_step(model, records, cfg, opt, clip_grad=1.0, logprobs=packed_logprobs)
            seconds.append(time.perf_counter() - t0)
            if i == 0:
                first = st
        by_threads[t] = {"tokens_per_s": st["tokens"] * updates / sum(seconds), "seconds": sum(seconds),
                         "update_seconds": seconds, "first": first}
    best = max(threads, key=lambda t: by_threads[t]["tokens_per_s"])
    seconds, first = by_threads[best]["update_seconds"], by_threads[best]["first"]
    tokens = st["tokens"]
    gf = go["first"]
    out = {
        "shape": os.path.basename(folder), "updates": updates, "tokens_per_update": tokens,
        "tokens_trained_per_update": st["tokens_trained"], "seconds": sum(seconds),
        "tokens_per_s": tokens * updates / sum(seconds), "update_seconds": seconds,
        "threads": best, "by_threads": {str(t): {k: v for k, v in r.items() if k != "first"} for t, r in by_threads.items()},
        "openblas": openblas_core(),
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", ""),
        "first": {k: first[k] for k in ("loss", "grad_norm", "entropy", "tokens", "tokens_trained")},
        # the same weights and batch through both: float32 rounding apart, equal
        "vs_go_first": {
            "loss_rel": abs(first["loss"] - gf["loss"]) / max(first["loss_scale"], 1e-30),
            "grad_norm_rel": abs(first["grad_norm"] - gf["grad_norm"]) / gf["grad_norm"],
            "entropy_rel": abs(first["entropy"] - gf["entropy"]) / gf["entropy"],
        },
    }
    if tokens != go["tokens_per_update"] or st["tokens_trained"] != go["tokens_trained_per_update"]:
        raise SystemExit(f"{folder}: torch saw {tokens} tokens, {st['tokens_trained']} trained; "
                         f"go.json says {go['tokens_per_update']}, {go['tokens_trained_per_update']}")
    with open(os.path.join(folder, "torch.json"), "w") as fh:
        json.dump(out, fh, indent=2)
    v = out["vs_go_first"]
    each = ", ".join(f"{t} threads {r['tokens_per_s']:.0f}" for t, r in by_threads.items())
    print(f"torch {out['shape']}: {out['tokens_per_s']:.0f} tokens/s at {best} threads ({each}; {updates} updates of {tokens} tokens); "
          f"Go {go['tokens_per_s']:.0f}; first update vs Go: loss {v['loss_rel']:.1e} of Σ|w·ℓ|, "
          f"grad_norm {v['grad_norm_rel']:.1e}, entropy {v['entropy_rel']:.1e} relative")


# ---------------------------------------------------------------- the probe

def openblas_core():
    """OpenBLAS's core name and config, read from the library torch links ('' if not OpenBLAS)."""
    for name in ("libblas.so.3", ctypes.util.find_library("openblas") or ""):
        try:
            lib = ctypes.CDLL(name)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            lib.openblas_get_config.restype = ctypes.c_char_p
            return f"{lib.openblas_get_corename().decode()} ({lib.openblas_get_config().decode()})"
        except (OSError, AttributeError):
            continue
    return ""


def best_of(fn, reps, inner):
    """The shortest of reps timings of inner calls of fn, in seconds per call."""
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - t0) / inner)
    return best


def probe(out):
    n = 2048
    a, b, c = torch.randn(n, n), torch.randn(n, n), torch.empty(n, n)
    gemm = 2 * n ** 3 / best_of(lambda: torch.mm(a, b, out=c), 5, 4) / 1e9
    m = 32 * 2 ** 20  # 128 MiB per array
    x, y, z = torch.rand(m), torch.rand(m), torch.empty(m)
    triad = 3 * 4 * m / best_of(lambda: torch.add(x, y, alpha=3.0, out=z), 5, 4) / 1e9
    res = {"gemm_gflops": gemm, "gemm_n": n, "triad_gbs": triad, "triad_elements": m,
           "threads": torch.get_num_threads(), "openblas": openblas_core(),
           "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", ""), "torch": torch.__version__}
    with open(out, "w") as fh:
        json.dump(res, fh, indent=2)
    print(f"probe: sgemm {n}² {gemm:.1f} GFLOP/s, STREAM triad {triad:.1f} GB/s, {res['threads']} threads, "
          f"OpenBLAS {res['openblas'] or '?'}, OPENBLAS_CORETYPE={res['OPENBLAS_CORETYPE'] or '(unset)'}")


# ---------------------------------------------------------------- the report

def update_gflop(folder):
    """Forward-and-backward GFLOP of one update of the folder's model on its batch (module doc)."""
    c = json.load(open(os.path.join(folder, "config.json")))
    d, ff, L, V = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    h = c["num_attention_heads"]
    hd = c.get("head_dim") or d // h
    kvh = c.get("num_key_value_heads") or h
    aw, kv = h * hd, kvh * hd
    per_token = 2 * L * (d * aw + 2 * d * kv + aw * d + 3 * d * ff)
    n = rows = attn = 0
    for r in toolrl.read_jsonl(os.path.join(folder, "records.jsonl")):
        T = len(r["input_ids"])
        n += T
        rows += sum(1 for m in r["response_mask"] if m)
        attn += L * 2 * 2 * T * T * aw
    return 3 * (per_token * n + attn + 2 * d * V * rows) / 1e9


def report(root):
    rounds = sorted(glob.glob(os.path.join(root, "round-*")))
    peak = json.load(open(os.path.join(root, "peak.json")))
    shapes = sorted({os.path.basename(p) for r in rounds for p in glob.glob(os.path.join(r, "*")) if os.path.isdir(p)})
    cores = sorted({json.load(open(p)).get("openblas", "?") for p in glob.glob(os.path.join(root, "round-*", "*", "torch.json"))})
    fma_runs = [float(x) for x in open(os.path.join(root, "fma.txt")).read().split()]
    fma = max(fma_runs)
    print(f"{len(rounds)} rounds (Go, torch interleaved); torch on OpenBLAS {', '.join(cores)}; probe: FMA peak "
          f"{fma:.1f} GFLOP/s (best of {', '.join(f'{x:.1f}' for x in fma_runs)}), sgemm "
          f"{peak['gemm_gflops']:.1f} GFLOP/s, triad {peak['triad_gbs']:.1f} GB/s ({peak['threads']} threads, OpenBLAS {peak['openblas']})")
    print("| shape | Go tokens/s (min / median) | torch tokens/s, its best thread count (min / median) | Go / torch | GFLOP per update | "
          "Go GFLOP/s | torch GFLOP/s | Go / torch share of the FMA peak | Go / torch share of the sgemm rate | "
          "first update Go vs torch (grad_norm rel.) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in shapes:
        go = [json.load(open(os.path.join(r, s, "go.json")))["tokens_per_s"] for r in rounds]
        tj = [json.load(open(os.path.join(r, s, "torch.json"))) for r in rounds]
        pt = [t["tokens_per_s"] for t in tj]
        for t in sorted({k for x in tj for k in x.get("by_threads", {})}, key=int):
            each = [x["by_threads"][t]["tokens_per_s"] for x in tj if t in x.get("by_threads", {})]
            print(f"torch {s} at {t} threads: {', '.join(f'{v:,.0f}' for v in each)} tokens/s by round", file=sys.stderr)
        gflop = update_gflop(os.path.join(rounds[0], s))
        tokens = tj[0]["tokens_per_update"]
        gm, tm = statistics.median(go), statistics.median(pt)
        gfs, tfs = gflop * gm / tokens, gflop * tm / tokens
        rel = max(t["vs_go_first"]["grad_norm_rel"] for t in tj)
        print(f"| {s} | {min(go):,.0f} / {gm:,.0f} | {min(pt):,.0f} / {tm:,.0f} | {gm / tm:.2f} | {gflop:.2f} | "
              f"{gfs:.1f} | {tfs:.1f} | {100 * gfs / fma:.0f}% / {100 * tfs / fma:.0f}% | "
              f"{100 * gfs / peak['gemm_gflops']:.0f}% / {100 * tfs / peak['gemm_gflops']:.0f}% | "
              f"≤ {rel:.1e} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="time the torch update on each shape BenchmarkLearnerUpdate -peer-dir wrote")
    r.add_argument("dir")
    r.add_argument("--updates", type=int, default=10, help="timed updates per shape (make bench-learner: 10x)")
    r.add_argument("--threads", default="1,2", help="thread counts to time, best taken (comma-separated)")
    p = sub.add_parser("probe", help="sgemm GFLOP/s and STREAM triad GB/s")
    p.add_argument("out")
    p.add_argument("--threads", type=int, default=2)
    t = sub.add_parser("report", help="the table over ROOT/round-*")
    t.add_argument("root")
    a = ap.parse_args(argv)
    if a.cmd == "probe":
        torch.set_num_threads(a.threads)
    if a.cmd == "run":
        threads = [int(t) for t in a.threads.split(",")]
        for folder in sorted(glob.glob(os.path.join(a.dir, "*", "go.json"))):
            run_shape(os.path.dirname(folder), a.updates, threads)
    elif a.cmd == "probe":
        probe(a.out)
    else:
        report(a.root)


if __name__ == "__main__":
    main()
