"""Every ```python block of README.md and docs/*.md: the trainer blocks (those
using toolrl.StreamReader) run against a live redis-server with records; the
others are compiled (the Parquet ones need pyarrow/pandas, not in Debian bookworm)."""
import glob, json, os, re, subprocess, sys
import redis
import toolrl
from test_basic import V2

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def blocks():
    for path in [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        for m in re.finditer(r"```python\n(.*?)```", open(path).read(), re.S):
            yield os.path.relpath(path, ROOT), m.group(1)


def test_docs_blocks(redis_url):
    r = redis.Redis.from_url(redis_url)
    ran = 0
    for path, code in blocks():
        compile(code, path, "exec")
        if "toolrl.StreamReader" not in code:
            continue
        key = toolrl.advantages_key("calc-demo")
        r.delete(key)
        r.xadd(key, {"trajectory_id": "j/p/0", "record": json.dumps(V2)})
        env = dict(os.environ, REDIS_URL=redis_url, TOOLRL_JOB="calc-demo",
                   PYTHONPATH=os.path.join(ROOT, "python"))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, f"{path}: {out.stderr}"
        assert "'responses': (1, 5)" in out.stdout, f"{path}: {out.stdout}"
        ran += 1
    assert ran >= 2
