"""to_verl_batch: toolrl records -> verl DataProto-style batch dict.

Names follow verl (github.com/volcengine/verl): prompts/responses/input_ids/
attention_mask/position_ids as the vLLM rollout builds them
(verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py: prompts left-padded,
responses right-padded, input_ids = cat(prompts, responses), position_ids =
clip(cumsum(attention_mask) - 1, 0)); response_mask, old_log_probs,
ref_log_prob, advantages, token_level_rewards as verl/trainer/ppo/ray_trainer.py
and verl/trainer/ppo/core_algos.py use them; rollout_log_probs as the rollout
returns them; uid in non_tensor_batch as GRPO groups by it (core_algos.py).
"""
import numpy as np

from .records import record_id


def to_verl_batch(records, pad_token_id=0, require_ref=True, return_tensors="np",
                  old_log_probs=None):
    """Build a verl-named batch from normalised records.

    Returns {"batch": {name: array}, "non_tensor_batch": {name: object array}}.
    Shapes: prompts (B, P), responses/response_mask/... (B, R), input_ids,
    attention_mask, position_ids (B, P + R). int64 ids and masks, float32 floats.
    old_log_probs defaults to rollout_log_probs (no recompute by the caller).
    require_ref=False leaves ref_log_prob out when records lack it; otherwise a
    record without it raises ValueError naming the record.
    return_tensors="pt" returns torch tensors.
    """
    if return_tensors not in ("np", "pt"):
        raise ValueError(f"to_verl_batch: return_tensors={return_tensors!r}: want 'np' (numpy) or 'pt' (torch)")
    recs = list(records)
    if not recs:
        raise ValueError("to_verl_batch: no records")
    for r in recs:
        missing = [k for k in ("input_ids", "prompt_len", "response_mask", "rollout_log_probs", "advantages") if k not in r]
        if missing:
            what = " (a trajectory, not an advantage record: run toolrl advantage first)" if "advantages" in missing and "id" in r else ""
            raise ValueError(f"record {record_id(r)}: no {', '.join(missing)}{what}; "
                             f"to_verl_batch takes advantage records normalised by normalize_record")
    B = len(recs)
    P = max(int(r["prompt_len"]) for r in recs)
    R = max(len(r["input_ids"]) - int(r["prompt_len"]) for r in recs)
    has_ref = all("ref_log_prob" in r for r in recs)
    if require_ref and not has_ref:
        miss = next(record_id(r) for r in recs if "ref_log_prob" not in r)
        raise ValueError(f"record {miss}: no ref_log_prob (run the advantage stage with a reference, "
                         f"or pass require_ref=False)")
    prompts = np.full((B, P), pad_token_id, np.int64)
    responses = np.full((B, R), pad_token_id, np.int64)
    pmask = np.zeros((B, P), np.int64)
    rmask_att = np.zeros((B, R), np.int64)
    response_mask = np.zeros((B, R), np.int64)
    f32 = {k: np.zeros((B, R), np.float32) for k in ("rollout_log_probs", "advantages", "token_level_rewards")}
    if has_ref:
        f32["ref_log_prob"] = np.zeros((B, R), np.float32)
    for i, r in enumerate(recs):
        ids = np.asarray(r["input_ids"], np.int64)
        pl = int(r["prompt_len"])
        n = len(ids) - pl
        prompts[i, P - pl:] = ids[:pl]
        pmask[i, P - pl:] = 1
        responses[i, :n] = ids[pl:]
        rmask_att[i, :n] = 1
        response_mask[i, :n] = r["response_mask"]
        f32["rollout_log_probs"][i, :n] = r["rollout_log_probs"]
        f32["advantages"][i, :n] = r["advantages"]
        if has_ref:
            f32["ref_log_prob"][i, :n] = r["ref_log_prob"]
        if n:
            # verl puts the sequence's score on its last response token.
            f32["token_level_rewards"][i, n - 1] = float(r.get("reward", 0.0))
    attention_mask = np.concatenate([pmask, rmask_att], 1)
    batch = {
        "prompts": prompts, "responses": responses,
        "input_ids": np.concatenate([prompts, responses], 1),
        "attention_mask": attention_mask,
        "position_ids": np.clip(np.cumsum(attention_mask, 1) - 1, 0, None).astype(np.int64),
        "response_mask": response_mask,
        **f32,
    }
    batch["old_log_probs"] = batch["rollout_log_probs"].copy() if old_log_probs is None else np.asarray(old_log_probs, np.float32)
    ntb = {
        "uid": np.array([r.get("group_id", "") for r in recs], dtype=object),
        "trajectory_id": np.array([r.get("trajectory_id", r.get("id", "")) for r in recs], dtype=object),
        "entry_id": np.array([r.get("entry_id") for r in recs], dtype=object),
    }
    if return_tensors == "pt":
        import torch
        batch = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in batch.items()}
    return {"batch": batch, "non_tensor_batch": ntb}
