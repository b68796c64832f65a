#!/usr/bin/env python3
"""End-to-end latency and throughput of a running Executor: submit → start → result stored,
for `python3 -c`-sized jobs, sequentially (latency) and with concurrent clients (throughput),
next to a bare fork/exec of the same program measured in the same run.

    EXECUTOR_API_URL=http://127.0.0.1:8080 EXECUTOR_API_TOKEN=... python3 scripts/bench-e2e.py [N] [CLIENTS]
"""
import json, os, statistics, subprocess, sys, threading, time, urllib.request

API = os.environ.get("EXECUTOR_API_URL", "http://127.0.0.1:8080").rstrip("/")
TOKEN = os.environ["EXECUTOR_API_TOKEN"]
N = int(sys.argv[1]) if len(sys.argv) > 1 else 50
CLIENTS = int(sys.argv[2]) if len(sys.argv) > 2 else 4


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(API + path, data=data, method=method,
                                 headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read() or b"null")


def job():
    t0 = time.perf_counter()
    j = call("POST", "/v1/execute", {"language": "python", "collectOutput": True,
                                      "files": [{"name": "main.py", "content": "print('ok')"}]})
    call("POST", f"/v1/jobs/{j['jobId']}/start")
    while call("GET", f"/v1/jobs/{j['jobId']}")["state"] not in ("done", "killed", "error"):
        time.sleep(0.002)
    out = call("GET", f"/v1/jobs/{j['jobId']}/output")
    assert out["stdout"] == "ok\n", out
    return (time.perf_counter() - t0) * 1000


def bare():
    t0 = time.perf_counter()
    subprocess.run(["/usr/bin/python3", "-c", "print('ok')"], capture_output=True, check=True)
    return (time.perf_counter() - t0) * 1000


def summary(name, xs):
    xs = sorted(xs)
    p99 = xs[min(len(xs) - 1, int(len(xs) * 0.99))]
    print(f"{name:<28} median {statistics.median(xs):7.1f} ms  min {xs[0]:7.1f} ms  p99 {p99:7.1f} ms")


job()  # warm up
seq, base = [], []
for _ in range(N):
    base.append(bare())
    seq.append(job())
summary("bare fork/exec", base)
summary("through Executor (1 client)", seq)
print(f"added median: {statistics.median(seq) - statistics.median(base):.1f} ms")

done = []
lock = threading.Lock()


def worker():
    for _ in range(N // CLIENTS):
        t = job()
        with lock:
            done.append(t)


t0 = time.perf_counter()
threads = [threading.Thread(target=worker) for _ in range(CLIENTS)]
[t.start() for t in threads]
[t.join() for t in threads]
elapsed = time.perf_counter() - t0
summary(f"through Executor ({CLIENTS} clients)", done)
print(f"throughput: {len(done) / elapsed:.1f} jobs/s with {CLIENTS} concurrent clients")
