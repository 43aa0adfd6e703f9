"""Shared test support: a real redis-server on a free loopback port."""
import contextlib, socket, subprocess, time
import pytest


@contextlib.contextmanager
def redis_server():
    """A redis-server on a free loopback port for the block's duration; yields its URL (db 0)."""
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                          "--appendonly", "no"], stdout=subprocess.DEVNULL)
    import redis
    r = redis.Redis(port=port)
    try:
        for _ in range(100):
            try:
                r.ping(); break
            except redis.ConnectionError:
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        p.kill(); p.wait()


@pytest.fixture
def redis_url():
    with redis_server() as url:
        yield url
