"""Records made by the real bin/toolrl (make build): rollout + offline advantage,
through JSONL and through the stream (JSON and binary), equal; tool tokens masked."""
import json, os, subprocess, sys
import numpy as np
import redis
import toolrl

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_offline_jsonl_to_stream(tmp_path, redis_url):
    binp = os.path.join(ROOT, "bin", "toolrl")
    assert os.path.exists(binp), "run make build first (make python-test does)"
    subprocess.run([binp, "rollout", "--model", "models/calc", "--prompts", "data/calc/prompts.jsonl",
                    "--out", f"{tmp_path}/roll.jsonl", "--resume=false", "--limit", "2", "--group-size", "4",
                    "--seed", "1"], check=True, capture_output=True, cwd=ROOT)
    subprocess.run([binp, "advantage", "--in", f"{tmp_path}/roll.jsonl", "--out", f"{tmp_path}/adv.jsonl"],
                   check=True, capture_output=True, cwd=ROOT)
    recs = list(toolrl.read_jsonl(f"{tmp_path}/adv.jsonl"))
    assert len(recs) == 8
    raw = [json.loads(l) for l in open(f"{tmp_path}/adv.jsonl")]
    r = redis.Redis.from_url(redis_url)
    key = toolrl.advantages_key("demo")
    for x in raw:  # the stream's JSON format: the record as the service writes it
        r.xadd(key, {"trajectory_id": x["trajectory_id"], "record": json.dumps(x)})
    got = toolrl.StreamReader(r, "demo").read(count=100, block_ms=100)
    for a, b in zip(recs, got):
        for k in ("input_ids", "response_mask", "rollout_log_probs", "advantages"):
            assert np.array_equal(a[k], b[k]), k
    b = toolrl.to_verl_batch(recs, require_ref=False)["batch"]
    P = b["prompts"].shape[1]
    assert ((b["response_mask"] == 0) & (b["attention_mask"][:, P:] == 1)).any(), "no masked tool tokens"
