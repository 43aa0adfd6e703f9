"""toolrl's trainer side in Python: read advantage records (Redis stream or
JSONL export), normalised to schema v3 names, and build verl-named batches.

Public API (kept stable):
    read_jsonl(path) -> iterator of dicts (trajectories or advantage records)
    normalize_record(rec, entry_id=None) -> dict with v3 names and numpy arrays
    decode_entry(entry_id, fields) -> record dict (JSON or binary-le/v1 entry)
    StreamReader(url_or_client, job, group, consumer, ...)   consumer-group reader
    to_verl_batch(records, pad_token_id=0, require_ref=True, ...) -> dict
    advantages_key(job) -> "toolrl:{JOB}:advantages"
    RecordError, StreamMissingError
"""
from .records import (RecordError, normalize_record, read_jsonl, decode_entry,
                      SCHEMAS_ACCEPTED)
from .stream import StreamReader, StreamMissingError, advantages_key
from .verl import to_verl_batch

__all__ = ["RecordError", "StreamMissingError", "normalize_record", "read_jsonl",
           "decode_entry", "StreamReader", "advantages_key", "to_verl_batch",
           "SCHEMAS_ACCEPTED"]
