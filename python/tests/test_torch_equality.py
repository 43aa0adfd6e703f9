"""python/examples/torch_grpo.py against `toolrl learn` on the same records.

A real pipeline: `toolrl rollout` of models/calc into Redis, `toolrl advantage
serve` twice over the same groups (db 0 JSON records, db 1 --record-format
binary), `toolrl learn --max-updates 2` on db 0; the example reads db 1 with
its own consumer group (the same records, in the same stream order) and
computes the same two updates in float64. Update 1 starts from models/calc
(ratios ≈ 1); update 2 from the version learn published (ratios far from 1:
clipped, dual-clipped and KL tokens).

Every config's learn runs with --precision float64 (forward, backward,
logprobs and AdamW in float64), so the float64 example equals it to far below
the issue's bound, relative 1e-6 on loss and grad_norm, asserted on every
config and both updates. One more learn run of "tis-seq-mean" in the default
float32 shows (printed, loosely bounded) how far float32 rounding alone takes
learn from the float64 example. docs/python.md has the numbers this test
measured.
"""
import importlib.util, json, os, signal, subprocess, sys, time
import numpy as np
import pytest
import redis
import torch
import toolrl
from conftest import redis_server

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.join(ROOT, "bin", "toolrl")
EXAMPLE = os.path.join(ROOT, "python", "examples", "torch_grpo.py")
JOB, LR, BATCH = "eq", 1e-3, 8
# toolrl learn flags and the example's settings for them: each config is its
# own learn run (consumer group and store) over the same stream, with
# --precision float64, held to the bound, relative 1e-6 on loss and
# grad_norm, on both updates.
CONFIGS = {
    "kl": (["--kl-beta", "0.05"], dict(kl_beta=0.05), dict()),
    "tis-seq-mean": (["--tis-cap", "2", "--loss-agg", "seq-mean-token-mean"],
                     dict(tis_cap=2, agg="seq-mean-token-mean"), dict()),
    "drgrpo-clipped": (["--loss-agg", "seq-mean-token-sum-norm", "--loss-norm-length", "64", "--dual-clip", "0",
                        "--clip-high", "0.2", "--clip-grad", "0.1", "--weight-decay", "0.5"],
                       dict(agg="seq-mean-token-sum-norm", norm_length=64, dual_clip=0, clip_high=0.2),
                       dict(clip_grad=0.1, weight_decay=0.5)),
}
TOL64 = dict(loss=1e-6, grad_norm=1e-6)
# The float32 run (learn's default precision) of one config: its distance from
# the float64 example is float32 rounding, as large as torch float32's own
# distance from float64 on the same update (printed with -s). Earlier runs
# measured up to 8.0e-6 (loss) and 5.1e-6 (grad_norm) relative over the
# three configs; it is held to 1e-5 of the loss's scale Σ|w·ℓ| (tis-seq-mean's
# update-1 loss cancels to ≈ 1e-7, where a relative difference means nothing)
# and 1e-4 on grad_norm.
FLOAT32_RUN, FLOAT32_CONFIG = "tis-seq-mean-float32", "tis-seq-mean"
TOL32 = dict(loss_scale=1e-5, grad_norm=1e-4)
RUNS = {name: (name, "float64") for name in CONFIGS}
RUNS[FLOAT32_RUN] = (FLOAT32_CONFIG, "float32")


def load_example():
    spec = importlib.util.spec_from_file_location("torch_grpo", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


tg = load_example()


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


def serve(d, runs, n, job=JOB):
    """Run `toolrl advantage serve` once per (url, extra flags) until each has
    written n records, then stop them (SIGTERM)."""
    key = toolrl.advantages_key(job)
    clients = [redis.Redis.from_url(u) for u, _ in runs]
    procs = [subprocess.Popen([BIN, "advantage", "serve", "--redis", u, "--job", job, "--listen", ""] + extra,
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=open(d / f"serve{i}.log", "w"))
             for i, (u, extra) in enumerate(runs)]
    try:
        deadline = time.monotonic() + 60
        while any(c.xlen(key) < n for c in clients):
            assert all(p.poll() is None for p in procs), f"advantage serve exited; logs in {d}"
            assert time.monotonic() < deadline, f"advantage serve wrote {[c.xlen(key) for c in clients]} of {n} records"
            time.sleep(0.05)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=30)


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    assert os.path.exists(BIN), "run make build first (make python-test does)"
    d = tmp_path_factory.mktemp("equality")
    with redis_server() as url0:
        url1 = url0[:-1] + "1"
        subprocess.run([BIN, "rollout", "--model", "models/calc", "--prompts", "data/calc/prompts.jsonl",
                        "--limit", "4", "--group-size", "4", "--seed", "2", "--temperature", "1.5",
                        "--max-new-tokens", "32", "--job", JOB, "--out", url0],
                       check=True, capture_output=True, cwd=ROOT)
        r0, r1 = redis.Redis.from_url(url0), redis.Redis.from_url(url1)
        groups = "toolrl:{%s}:groups" % JOB
        assert r0.copy(groups, groups, destination_db=1), "copy the groups stream to db 1"
        serve(d, [(url0, []), (url1, ["--record-format", "binary"])], 16)
        metrics = {}
        for name, (config, precision) in RUNS.items():
            flags = CONFIGS[config][0]
            learn = subprocess.run([BIN, "learn", "--model", "models/calc", "--redis", url0, "--job", JOB,
                                    "--group", f"learn-{name}", "--store", str(d / name), "--batch", str(BATCH),
                                    "--max-updates", "2", "--lr", str(LR), "--metrics", str(d / f"{name}.jsonl"),
                                    "--precision", precision, "--listen", ""] + flags,
                                   cwd=ROOT, capture_output=True, text=True)
            assert learn.returncode == 0, learn.stderr
            metrics[name] = [json.loads(l) for l in open(d / f"{name}.jsonl")]
            assert len(metrics[name]) == 2
        yield {"url_json": url0, "url_binary": url1, "metrics": metrics, "dir": d, "r0": r0, "r1": r1}


def read_all(url, group):
    rd = toolrl.StreamReader(url, JOB, group=group)
    out = []
    while True:
        got = rd.read(count=100, block_ms=100)
        if not got:
            return out
        out += got


def test_binary_records_equal_json(pipeline):
    key = toolrl.advantages_key(JOB)
    # the services really wrote the two formats
    assert all(b"format" not in f for _, f in pipeline["r0"].xrange(key))
    assert all(f[b"format"] == b"binary-le/v1" and b"input_ids" in f for _, f in pipeline["r1"].xrange(key))
    js, bs = read_all(pipeline["url_json"], "cmp"), read_all(pipeline["url_binary"], "cmp")
    assert len(js) == len(bs) == 16
    for a, b in zip(js, bs):
        assert set(a) == set(b), (a["trajectory_id"], set(a) ^ set(b))
        for k in a:
            if k == "entry_id":
                continue
            if isinstance(a[k], np.ndarray):
                assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), (a["trajectory_id"], k)
            else:
                assert a[k] == b[k], (a["trajectory_id"], k, a[k], b[k])
    # what the batch needs is there, and tool tokens are masked somewhere
    assert all({"input_ids", "response_mask", "rollout_log_probs", "advantages", "temperature"} <= set(a) for a in js)
    assert any(((a["response_mask"] == 0)).any() for a in js)


COMPARED = ("loss", "pg_loss", "kl", "entropy", "ratio_mean", "ratio_max", "adv_abs_mean",
            "clip_frac_high", "clip_frac_low", "clip_frac_dual")


def check_update(st, m, label, tol):
    """Assert the example's metrics st against toolrl learn's line m within tol
    (relative: loss, loss_scale (|Δloss| / Σ|w·ℓ|), grad_norm); return the differences."""
    assert st["records"] == m["records"] and st["tokens"] == m["tokens"]
    assert st["tokens_trained"] == m["tokens_trained"]
    for k in ("clip_frac_high", "clip_frac_low", "clip_frac_dual"):
        assert st[k] == m[k], (label, k, st[k], m[k])  # the same tokens are clipped
    diffs = {k: rel(st[k], m[k]) for k in COMPARED + ("grad_norm",) if m[k] != 0}
    diffs["loss_scale"] = abs(st["loss"] - m["loss"]) / st["loss_scale"]
    print(f"\n{label}: " + ", ".join(f"{k} {st[k]:.12g} vs {m[k]:.12g} (rel {diffs[k]:.2e})" for k in diffs
                                    if k != "loss_scale") + f"; |Δloss|/Σ|w·ℓ| {diffs['loss_scale']:.2e}")
    for k, t in tol.items():
        assert diffs[k] <= t, (label, k, diffs[k], t, st[k.replace("_scale", "")], m[k.replace("_scale", "")])
    return diffs


@pytest.fixture(scope="module")
def binary_records(pipeline):
    recs = read_all(pipeline["url_binary"], "torch")
    assert len(recs) == 2 * BATCH
    return recs


def float32_distance(folder, records, cfg, clip, st64):
    """For the record: how far torch float32 is from float64 on the same update
    (the size float32 rounding alone gives), printed next to learn's distance."""
    m32 = tg.Llama.from_folder(folder, torch.float32)
    ref = tg.Llama.from_folder(os.path.join(ROOT, "models/calc"), torch.float32) if cfg.kl_beta > 0 else None
    st = tg.train_step(m32, records, cfg, None, ref_model=ref, clip_grad=clip)
    print(f"  torch float32 vs float64: loss rel {rel(st['loss'], st64['loss']):.2e}, "
          f"|Δloss|/Σ|w·ℓ| {abs(st['loss'] - st64['loss']) / st64['loss_scale']:.2e}, "
          f"grad_norm rel {rel(st['grad_norm'], st64['grad_norm']):.2e}")


@pytest.mark.parametrize("name", RUNS)
def test_loss_and_grad_norm_equal_learn(pipeline, binary_records, name):
    config, precision = RUNS[name]
    _, loss_kw, step_kw = CONFIGS[config]
    tol = TOL64 if precision == "float64" else TOL32
    m1, m2 = pipeline["metrics"][name]
    cfg = tg.LossConfig(**loss_kw)
    clip = step_kw.get("clip_grad", 1.0)
    calc = os.path.join(ROOT, "models/calc")
    ref = tg.Llama.from_folder(calc, torch.float64) if cfg.kl_beta > 0 else None
    # update 1: version 0, then one AdamW step, compared with the version learn published
    model = tg.Llama.from_folder(calc, torch.float64)
    opt = tg.adamw(model, lr=LR, weight_decay=step_kw.get("weight_decay", 0.01))
    st1 = tg.train_step(model, binary_records[:BATCH], cfg, opt, ref_model=ref, clip_grad=clip)
    check_update(st1, m1, f"{name} update 1", tol)
    if precision == "float32":
        float32_distance(calc, binary_records[:BATCH], cfg, clip, st1)
    v1 = str(pipeline["dir"] / name / "v000001")
    pub, base = tg.load_weights(v1), tg.load_weights(calc)
    worst, off, n = 0.0, 0, 0
    for pname, p in model.named_parameters():
        ours = p.detach().numpy() - base[pname]
        theirs = pub[pname].astype(np.float64) - base[pname]
        d = np.abs(ours - theirs) / LR  # in units of the learning rate (Adam's first step is about ±lr)
        worst, off, n = max(worst, float(d.max())), off + int((d > 1e-3).sum()), n + d.size
    print(f"\n{name} AdamW step: {off} of {n} weights differ from learn's by more than 0.001·lr; max {worst:.3g}·lr")
    if precision == "float64":
        # what is left is the float32 rounding of the published weights
        assert off == 0, f"the AdamW step differs from float64 learn's by up to {worst:.3g}·lr"
    else:
        assert off <= n * 1e-3, "the AdamW step differs from toolrl learn's on more than 0.1% of the weights"
    # update 2: from the published version 1, ratios against version 0's behaviour logprobs
    model = tg.Llama.from_folder(v1, torch.float64)
    st2 = tg.train_step(model, binary_records[BATCH:], cfg, tg.adamw(model, lr=LR), ref_model=ref, clip_grad=clip)
    check_update(st2, m2, f"{name} update 2", tol)
    if precision == "float32":
        float32_distance(v1, binary_records[BATCH:], cfg, clip, st2)
    if name == "kl":
        assert st2["clip_frac_high"] + st2["clip_frac_low"] > 0 and st2["clip_frac_dual"] > 0 and st2["kl"] > 0, \
            "update 2 should exercise the clipped, dual-clipped and KL branches"
    if name == "drgrpo-clipped":
        assert st1["grad_norm"] > clip, "update 1 should clip the gradient"


def test_example_cli(pipeline):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    out = subprocess.run([sys.executable, EXAMPLE, "--model", os.path.join(ROOT, "models/calc"),
                          "--redis", pipeline["url_binary"], "--job", JOB, "--group", "cli", "--batch", str(BATCH),
                          "--dtype", "float64", "--lr", str(LR), "--kl-beta", "0.05"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    st = json.loads(out.stdout.strip().splitlines()[-1])
    check_update(st, pipeline["metrics"]["kl"][0], "torch_grpo.py", TOL64)
    key = toolrl.advantages_key(JOB)
    g = {x["name"].decode() if isinstance(x["name"], bytes) else x["name"]: x
         for x in pipeline["r1"].xinfo_groups(key)}["cli"]
    assert g["pending"] == 0 and g["entries-read"] == BATCH  # read exactly one batch, acknowledged


# Other architectures: random models of toolrl's shapes, so that grouped-query
# attention, llama3 rope_scaling, an untied head, bf16/f16 checkpoints and a
# sharded index go through the example's loader and forward. Rewards of a
# random policy are all 0, so the advantage service folds a k3 KL to a second
# random model into them (--kl-coef): the advantages are non-zero and the
# records carry ref_log_prob, which both sides use for the KL term.
SHAPES = {
    "tiny-llama3.2": ["--dtype", "bf16", "--max-shard-size", "200KB"],  # GQA, llama3 rope, tied, 2 shards
    "tiny": ["--dtype", "f16"],  # GQA, untied lm_head
}


@pytest.mark.parametrize("shape", SHAPES)
def test_other_shapes_equal_learn(tmp_path, shape):
    pol, ref = tmp_path / "policy", tmp_path / "ref"
    for out, seed, extra in ((pol, "3", SHAPES[shape]), (ref, "4", [])):
        subprocess.run([BIN, "model", "build", "--random", "--shape", shape, "--seed", seed, "--safetensors",
                        "--out", str(out)] + extra, check=True, capture_output=True, cwd=ROOT)
    cfg = json.load(open(pol / "config.json"))
    assert cfg["num_key_value_heads"] < cfg["num_attention_heads"]
    if shape == "tiny-llama3.2":
        assert cfg["rope_scaling"]["rope_type"] == "llama3" and (pol / "model.safetensors.index.json").exists()
    else:
        assert cfg["tie_word_embeddings"] is False
    with redis_server() as url:
        subprocess.run([BIN, "rollout", "--model", str(pol), "--prompts", "data/calc/prompts.jsonl",
                        "--limit", "4", "--group-size", "4", "--seed", "2", "--temperature", "1.5",
                        "--max-new-tokens", "32", "--job", JOB, "--out", url], check=True, capture_output=True, cwd=ROOT)
        serve(tmp_path, [(url, ["--ref-model", str(ref), "--ref-temperature", "1.5", "--kl", "k3",
                                "--kl-coef", "0.1"])], 16)
        learn = subprocess.run([BIN, "learn", "--model", str(pol), "--redis", url, "--job", JOB,
                                "--store", str(tmp_path / "store"), "--batch", str(BATCH), "--max-updates", "1",
                                "--kl-beta", "0.05", "--precision", "float64", "--metrics", str(tmp_path / "learn.jsonl"),
                                "--listen", ""],
                               cwd=ROOT, capture_output=True, text=True)
        assert learn.returncode == 0, learn.stderr
        (m,) = [json.loads(l) for l in open(tmp_path / "learn.jsonl")]
        recs = toolrl.StreamReader(url, JOB, group="torch").read(count=BATCH, block_ms=100)
    assert len(recs) == BATCH and all("ref_log_prob" in r for r in recs)
    model = tg.Llama.from_folder(str(pol), torch.float64)
    st = tg.train_step(model, recs, tg.LossConfig(kl_beta=0.05), None)
    assert st["kl"] > 0 and st["adv_abs_mean"] > 0
    check_update(st, m, shape, TOL64)
