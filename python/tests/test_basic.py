import json, os, sys, time
import numpy as np
import pytest
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import toolrl

V2 = {"schema": "toolrl.advantage/v2", "trajectory_id": "j/p/0", "group_id": "j/p", "sample_index": 0,
      "policy_version": 0, "input_ids": [5, 6, 7, 10, 11, 20, 21, 30], "prompt_len": 3,
      "loss_mask": [1, 1, 0, 0, 1], "old_logprobs": [-0.5, -0.25, 0, 0, -1.0],
      "advantages": [1, 1, 0, 0, 1], "reward": {"total": 1.0, "parts": {"outcome": 1.0}}}


def test_normalize_v2():
    r = toolrl.normalize_record(V2)
    assert r["response_mask"].tolist() == [1, 1, 0, 0, 1]
    assert r["rollout_log_probs"].dtype == np.float32 and r["reward"] == 1.0
    assert r["reward_parts"] == {"outcome": 1.0}


def test_bad_inputs():
    with pytest.raises(toolrl.RecordError, match="toolrl.advantage/v9.*|j/p/0"):
        toolrl.normalize_record(dict(V2, schema="toolrl.advantage/v9"))
    with pytest.raises(toolrl.RecordError, match="advantages.*j/p/0|j/p/0.*advantages"):
        toolrl.normalize_record(dict(V2, advantages=[1, 2]))


def test_verl_batch():
    a = toolrl.normalize_record(V2)
    b = toolrl.normalize_record(dict(V2, trajectory_id="j/p/1", input_ids=[1, 2, 3, 4], prompt_len=2,
                                     loss_mask=[1, 0], old_logprobs=[-1, 0], advantages=[2, 0]))
    with pytest.raises(ValueError, match="ref_log_prob"):
        toolrl.to_verl_batch([a, b])
    out = toolrl.to_verl_batch([a, b], pad_token_id=0, require_ref=False)
    t = out["batch"]
    assert t["prompts"].shape == (2, 3) and t["responses"].shape == (2, 5)
    assert t["prompts"][1].tolist() == [0, 1, 2]  # left-padded
    assert t["responses"][1].tolist() == [3, 4, 0, 0, 0]  # right-padded
    assert t["response_mask"][0].tolist() == [1, 1, 0, 0, 1]  # tool tokens masked
    assert t["attention_mask"][1].tolist() == [0, 1, 1, 1, 1, 0, 0, 0]
    assert t["position_ids"][1].tolist() == [0, 0, 1, 2, 3, 3, 3, 3]
    assert t["input_ids"].dtype == np.int64 and t["advantages"].dtype == np.float32
    assert (t["old_log_probs"] == t["rollout_log_probs"]).all()
    assert out["non_tensor_batch"]["uid"].tolist() == ["j/p", "j/p"]


def test_verl_batch_torch():
    # make python-test installs python3-torch: the torch form is tested, not skipped.
    import torch
    a = toolrl.normalize_record(V2)
    out = toolrl.to_verl_batch([a], require_ref=False, return_tensors="pt")
    t = out["batch"]
    assert isinstance(t["input_ids"], torch.Tensor) and t["input_ids"].dtype == torch.int64
    assert t["rollout_log_probs"].dtype == torch.float32 and t["response_mask"].dtype == torch.int64
    assert t["response_mask"][0].tolist() == [1, 1, 0, 0, 1]
    np_out = toolrl.to_verl_batch([a], require_ref=False)
    for k, v in np_out["batch"].items():
        assert (t[k].numpy() == v).all(), k
    with pytest.raises(ValueError, match="return_tensors='tf'"):
        toolrl.to_verl_batch([a], require_ref=False, return_tensors="tf")


def test_stream_json_binary_redelivery(redis_url):
    import redis
    r = redis.Redis.from_url(redis_url)
    with pytest.raises(toolrl.StreamMissingError, match=r"toolrl:\{j\}:advantages"):
        toolrl.StreamReader(r, "j")
    key = toolrl.advantages_key("j")
    r.xadd(key, {"trajectory_id": "j/p/0", "record": json.dumps(V2)})
    hdr = {k: v for k, v in V2.items() if k not in ("input_ids", "loss_mask", "old_logprobs", "advantages")}
    hdr["trajectory_id"] = "j/p/1"
    r.xadd(key, {"trajectory_id": "j/p/1", "record": json.dumps(hdr), "format": "binary-le/v1",
                 "input_ids": np.array(V2["input_ids"], "<i4").tobytes(),
                 "loss_mask": np.array(V2["loss_mask"], "u1").tobytes(),
                 "old_logprobs": np.array(V2["old_logprobs"], "<f4").tobytes(),
                 "ref_logprobs": b"", "advantages": np.array(V2["advantages"], "<f4").tobytes(), "kl": b""})
    a = toolrl.StreamReader(r, "j", consumer="a", claim_idle_ms=100)
    got = a.read(count=10, block_ms=100)
    assert [g["trajectory_id"] for g in got] == ["j/p/0", "j/p/1"]
    for k in ("input_ids", "response_mask", "rollout_log_probs", "advantages"):
        assert got[0][k].tolist() == got[1][k].tolist()
    # a dies without ack: b reclaims after the idle time
    b = toolrl.StreamReader(r, "j", consumer="b", claim_idle_ms=100)
    time.sleep(0.2)
    again = b.read(count=10, block_ms=100)
    assert sorted(g["trajectory_id"] for g in again) == ["j/p/0", "j/p/1"]
    assert b.ack(again) == 2
    assert b.read(count=10, block_ms=100) == []


def test_v3_names_pass_through():
    v3 = {k: v for k, v in V2.items() if k not in ("loss_mask", "old_logprobs", "reward")}
    v3.update(schema="toolrl.advantage/v3", response_mask=V2["loss_mask"],
              rollout_log_probs=V2["old_logprobs"], reward=1.0, reward_parts={"outcome": 1.0})
    a, b = toolrl.normalize_record(v3), toolrl.normalize_record(V2)
    for k in ("input_ids", "response_mask", "rollout_log_probs", "advantages"):
        assert a[k].tolist() == b[k].tolist()
    assert a["reward"] == b["reward"] and a["reward_parts"] == b["reward_parts"]


def test_tool_result_fault_passes_through():
    # A tool segment's result may carry "fault" (an injected failure, docs/tools.md);
    # normalize_record keeps segments as they are, with or without it.
    segs = [{"kind": "model", "turn": 0, "start": 0, "end": 2, "call": {"name": "calculator", "raw": "[CALC: 1+1]"}},
            {"kind": "tool", "turn": 0, "start": 2, "end": 3,
             "result": {"ok": True, "content": "3", "fault": "implicit"}},
            {"kind": "tool", "turn": 0, "start": 3, "end": 5,
             "result": {"ok": False, "error_class": "timeout", "content": "error: timeout: x", "fault": "timeout"}}]
    v3 = {k: v for k, v in V2.items() if k not in ("loss_mask", "old_logprobs", "reward")}
    v3.update(schema="toolrl.advantage/v3", response_mask=V2["loss_mask"],
              rollout_log_probs=V2["old_logprobs"], reward=1.0, reward_parts={"outcome": 1.0}, segments=segs)
    a = toolrl.normalize_record(v3)
    assert a["segments"] == segs
    assert [s.get("result", {}).get("fault") for s in a["segments"]] == [None, "implicit", "timeout"]


def test_v3_with_old_names_is_refused():
    # As the Go decoder does: a v3 record must use v3's names.
    v3 = {k: v for k, v in V2.items() if k not in ("loss_mask", "reward")}
    v3.update(schema="toolrl.advantage/v3", response_mask=V2["loss_mask"], reward=1.0)
    with pytest.raises(toolrl.RecordError, match="j/p/0.*'old_logprobs'.*'rollout_log_probs'"):
        toolrl.normalize_record(v3)
    v3 = dict(v3, rollout_log_probs=v3.pop("old_logprobs"), reward={"total": 1.0})
    with pytest.raises(toolrl.RecordError, match="j/p/0.*'reward' is an object"):
        toolrl.normalize_record(v3)


def test_verl_batch_of_a_trajectory_names_it():
    # A trajectory has no advantages: a clear error, not a KeyError.
    t = {"schema": "toolrl.trajectory/v3", "id": "j/p/0", "group_id": "j/p", "input_ids": [1, 2, 3],
         "prompt_len": 2, "response_mask": [1], "rollout_log_probs": [-0.5], "reward": 1.0}
    with pytest.raises(ValueError, match="record j/p/0: no advantages.*run toolrl advantage first"):
        toolrl.to_verl_batch([toolrl.normalize_record(t)], require_ref=False)
