"""A consumer SIGKILLed after reading, before ack: another reclaims; every
record is processed (acked after its step) exactly once, counted by trajectory_id."""
import json, os, signal, subprocess, sys, time
import redis
import toolrl
from test_basic import V2

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = """
import sys, time, toolrl
rd = toolrl.StreamReader(sys.argv[1], "j", consumer="victim", claim_idle_ms=200)
got = rd.read(count=5, block_ms=1000)
print(len(got), flush=True)
time.sleep(60)  # killed here, before ack
"""


def test_killed_consumer_redelivers_exactly_once(redis_url):
    r = redis.Redis.from_url(redis_url)
    key = toolrl.advantages_key("j")
    for i in range(12):
        rec = dict(V2, trajectory_id=f"j/p/{i}", sample_index=i)
        r.xadd(key, {"trajectory_id": rec["trajectory_id"], "record": json.dumps(rec)})
    toolrl.StreamReader(r, "j", consumer="setup")  # creates the group
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, ".."))
    p = subprocess.Popen([sys.executable, "-c", CHILD, redis_url], stdout=subprocess.PIPE, env=env)
    assert p.stdout.readline().strip() == b"5"
    os.kill(p.pid, signal.SIGKILL); p.wait()
    time.sleep(0.3)
    rd = toolrl.StreamReader(r, "j", consumer="survivor", claim_idle_ms=200)
    done = []
    while True:
        batch = rd.read(count=4, block_ms=200)
        if not batch:
            break
        done += [b["trajectory_id"] for b in batch]  # "the step"
        rd.ack(batch)
    assert sorted(done) == sorted(f"j/p/{i}" for i in range(12))
    assert r.xpending(key, "trainer")["pending"] == 0
