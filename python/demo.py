"""make python-demo: a small rollout of models/calc, the offline advantage pass,
then the records as a verl batch (shapes and dtypes). Run from the repo root."""
import os, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import toolrl

d = tempfile.mkdtemp(prefix="toolrl-demo-")
subprocess.run(["bin/toolrl", "rollout", "--model", "models/calc", "--prompts", "data/calc/prompts.jsonl",
                "--out", f"{d}/roll.jsonl", "--resume=false", "--limit", "2", "--group-size", "4",
                "--seed", "1"], check=True, capture_output=True)
subprocess.run(["bin/toolrl", "advantage", "--in", f"{d}/roll.jsonl", "--out", f"{d}/adv.jsonl"],
               check=True, capture_output=True)
recs = list(toolrl.read_jsonl(f"{d}/adv.jsonl"))
out = toolrl.to_verl_batch(recs, pad_token_id=0, require_ref=False)
print(f"{len(recs)} records from {d}/adv.jsonl")
for k, v in out["batch"].items():
    print(f"  {k:20s} {tuple(v.shape)} {v.dtype}")
print("  uid", sorted(set(out["non_tensor_batch"]["uid"])))
