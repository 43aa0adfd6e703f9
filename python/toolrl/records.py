"""Record decoding: JSON and binary-le/v1 entries, JSONL files, v1/v2 -> v3 names."""
import json
import numpy as np

SCHEMAS_ACCEPTED = {
    "toolrl.advantage/v1", "toolrl.advantage/v2", "toolrl.advantage/v3",
    "toolrl.trajectory/v1", "toolrl.trajectory/v2", "toolrl.trajectory/v3",
}


class RecordError(ValueError):
    """A record that cannot be used; the message names the field and record id."""


# v1/v2 name -> v3 name (docs/schema.md, generated from traj's Go types).
# Trajectories: tokens, logprobs; records: old_logprobs.
_RENAMES = {
    "tokens": "input_ids",
    "loss_mask": "response_mask",
    "logprobs": "rollout_log_probs",
    "old_logprobs": "rollout_log_probs",
    "ref_logprobs": "ref_log_prob",
}
_INT_ARRAYS = {"input_ids": np.int64, "response_mask": np.int64}
_FLOAT_ARRAYS = ("rollout_log_probs", "ref_log_prob", "advantages", "kl")
PER_RESPONSE = ("response_mask", "rollout_log_probs", "ref_log_prob", "advantages", "kl")


def record_id(rec):
    """The record's id for messages: trajectory_id (advantage records) or id."""
    return rec.get("trajectory_id") or rec.get("id") or "?"


def normalize_record(rec, entry_id=None):
    """Return rec with v3 names, numpy arrays (int64 ids/mask, float32 floats),
    reward a number and reward_parts a dict, and "entry_id" when given.
    Raises RecordError on an unknown schema or a per-response array whose
    length is not len(input_ids) - prompt_len."""
    out = dict(rec)
    schema = out.get("schema")
    rid = record_id(out)
    where = f"record {rid}" + (f" (entry {entry_id})" if entry_id else "")
    if schema not in SCHEMAS_ACCEPTED:
        raise RecordError(f"{where}: unknown schema {schema!r}, want one of {sorted(SCHEMAS_ACCEPTED)}")
    if schema.endswith("/v3"):
        for old, new in _RENAMES.items():
            if old in out:
                raise RecordError(f"{where}: field {old!r} is the v1/v2 name of {new!r}; a {schema} record spells it {new!r}")
        if isinstance(out.get("reward"), dict):
            raise RecordError(f"{where}: field 'reward' is an object (v1/v2's reward.total and reward.parts); a {schema} record has a number and reward_parts")
    for old, new in _RENAMES.items():
        if old in out:
            v = out.pop(old)
            if new not in out:
                out[new] = v
    r = out.get("reward")
    if isinstance(r, dict):
        out["reward"] = float(r.get("total", 0.0))
        out.setdefault("reward_parts", dict(r.get("parts") or {}))
    for k, dt in _INT_ARRAYS.items():
        if out.get(k) is not None:
            out[k] = np.asarray(out[k], dtype=dt)
    for k in _FLOAT_ARRAYS:
        if out.get(k) is not None:
            out[k] = np.asarray(out[k], dtype=np.float32)
            if out[k].size == 0 and k in ("ref_log_prob", "kl"):
                del out[k]  # binary records carry an empty array for "none"
    if "input_ids" not in out:
        raise RecordError(f"{where}: no input_ids field")
    n = len(out["input_ids"]) - int(out.get("prompt_len", 0))
    for k in PER_RESPONSE:
        if k in out and len(out[k]) != n:
            raise RecordError(f"{where}: field {k} has {len(out[k])} entries, want "
                              f"len(input_ids) - prompt_len = {n}")
    if entry_id is not None:
        out["entry_id"] = entry_id
    return out


def _s(v):
    return v.decode() if isinstance(v, (bytes, bytearray)) else v


# Binary record fields (stream/records.go RecordFormatBinary): v2 names, then v3.
_BIN_FIELDS = {
    "input_ids": "<i4", "tokens": "<i4", "loss_mask": "u1", "response_mask": "u1",
    "old_logprobs": "<f4", "rollout_log_probs": "<f4", "ref_logprobs": "<f4",
    "ref_log_prob": "<f4", "advantages": "<f4", "kl": "<f4",
}
RECORD_FORMAT_BINARY = "binary-le/v1"


def decode_entry(entry_id, fields):
    """Decode an advantages-stream entry (JSON, or format binary-le/v1) into a
    normalised record dict."""
    entry_id = _s(entry_id)
    f = {_s(k): v for k, v in fields.items()}
    if "record" not in f:
        raise RecordError(f"entry {entry_id}: no 'record' field")
    try:
        rec = json.loads(f["record"])
    except ValueError as e:
        raise RecordError(f"entry {entry_id}: record is not JSON: {e}") from None
    fmt = _s(f.get("format"))
    if fmt:
        if fmt != RECORD_FORMAT_BINARY:
            raise RecordError(f"entry {entry_id}: field format is {fmt!r}, want none (JSON) or {RECORD_FORMAT_BINARY!r}")
        for name, dt in _BIN_FIELDS.items():
            if name in f:
                b = f[name]
                size = np.dtype(dt).itemsize
                if len(b) % size:
                    raise RecordError(f"entry {entry_id}: record {record_id(rec)}: field {name} has {len(b)} bytes, not a multiple of {size}")
                rec[name] = np.frombuffer(b, dt)
    return normalize_record(rec, entry_id)


def read_jsonl(path, normalize=True):
    """Yield each line of a JSONL export (toolrl export / toolrl advantage
    output) as a dict, normalised to v3 names unless normalize=False. Group
    lines ({"trajectories": [...]}) yield their trajectories."""
    with open(path, "rb") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as e:
                raise RecordError(f"{path} line {n}: not JSON: {e}") from None
            items = obj["trajectories"] if "trajectories" in obj and "input_ids" not in obj else [obj]
            for it in items:
                yield normalize_record(it) if normalize else it
