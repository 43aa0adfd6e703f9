"""Consumer-group reader of toolrl:{JOB}:advantages (docs/redis.md)."""
import redis as _redis
from .records import decode_entry


class StreamMissingError(LookupError):
    """The advantages stream does not exist; the message names the key."""


def advantages_key(job):
    return "toolrl:{%s}:advantages" % job


class StreamReader:
    """Reads advantage records through a consumer group.

    read(count, block_ms) returns up to count records (dicts with "entry_id"),
    claiming entries idle longer than claim_idle_ms from dead consumers first
    (XAUTOCLAIM), then new ones (XREADGROUP >); [] on timeout. Nothing is
    acknowledged until ack(records) is called: a consumer that dies before
    ack leaves them pending, and another one reclaims them.
    """

    def __init__(self, url_or_client, job, group="trainer", consumer="rank0",
                 claim_idle_ms=30000, create=False):
        self.r = (_redis.Redis.from_url(url_or_client)
                  if isinstance(url_or_client, str) else url_or_client)
        self.key = advantages_key(job)
        self.group, self.consumer, self.claim_idle_ms = group, consumer, claim_idle_ms
        if not self.r.exists(self.key) and not create:
            raise StreamMissingError(f"stream {self.key} does not exist (no advantage records for job {job!r} yet?)")
        try:
            self.r.xgroup_create(self.key, group, id="0", mkstream=create)
        except _redis.ResponseError as e:
            if "BUSYGROUP" not in str(e):
                raise

    def _claim(self, count):
        res = self.r.xautoclaim(self.key, self.group, self.consumer,
                                min_idle_time=self.claim_idle_ms, start_id="0-0", count=count)
        return [(i, f) for i, f in res[1] if f]

    def read(self, count=64, block_ms=5000):
        entries = self._claim(count)
        if not entries:
            got = self.r.xreadgroup(self.group, self.consumer, {self.key: ">"},
                                    count=count, block=block_ms) or []
            entries = [e for _, es in got for e in es]
        return [decode_entry(i, f) for i, f in entries]

    def ack(self, records):
        ids = [r["entry_id"] if isinstance(r, dict) else r for r in records]
        return self.r.xack(self.key, self.group, *ids) if ids else 0
