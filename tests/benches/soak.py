#!/usr/bin/env python3
"""RSS of `native serve` under a steady mixed load (issue 29's soak).

    python3 tests/benches/soak.py NATIVE_BINARY [MINUTES] [RATE] > soak.csv

Makes a project in a temporary folder (a tenant with a no-op invoke, a db.put, an object put,
a queue send that the server's drain handles, a barrier acked through its callback URLs), starts
`NATIVE_BINARY serve` on a free port and sends RATE requests a second (default 18, the figure of
issue 29) for MINUTES (default 10), one request at a time over a kept-alive connection, the
kinds in turn. Every 10 s it prints `seconds,rss_kb,anon_kb,file_kb,threads,fds,requests,errors`
(from /proc), and at the end the growth per minute over the second half of the run (the first
half includes warm-up: page caches and pools filling to their bounds)."""
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time

native = sys.argv[1]
minutes = float(sys.argv[2]) if len(sys.argv) > 2 else 10
rate = float(sys.argv[3]) if len(sys.argv) > 3 else 18

work = tempfile.mkdtemp(prefix="native-soak-")
os.makedirs(f"{work}/tenants/soak/scripts")
with open(f"{work}/deployment.json", "w") as f:
    f.write('{ "buckets": { "map": { "In": "soak-in" } } }')
with open(f"{work}/tenants/soak/config.json", "w") as f:
    f.write('{ "queue": true }')
scripts = {
    "noop": "function on_invoke(ctx, ev) return { ok = true } end",
    "put": "function on_invoke(ctx, ev) native.db.put('p', 'k' .. (ev.i % 5000), { i = ev.i }) return true end",
    "obj": "function on_invoke(ctx, ev) native.bucket.In.put('o/' .. (ev.i % 500), string.rep('x', 2000)) return true end",
    "send": "function on_invoke(ctx, ev) native.queue.send('work', { i = ev.i }) return true end",
    "work": "function on_queue(ctx, ev) native.db.put('w', 'k' .. (ev.i % 5000), { i = ev.i }) end",
    "bar": """function on_invoke(ctx, ev)
  local id = 'b' .. ev.i
  native.barrier.create({ id = id, members = { 'a' }, continue_with = 'fin' })
  return native.barrier.callback_url(id, 'a')
end""",
    "fin": "function on_queue(ctx, ev) end",
}
for name, src in scripts.items():
    with open(f"{work}/tenants/soak/scripts/{name}.luau", "w") as f:
        f.write(src)
key = subprocess.run([native, "--project", work, "keys", "create", "soak", "--name", "soak"],
                     capture_output=True, text=True, check=True).stdout.strip()
server = subprocess.Popen([native, "--project", work, "serve", "--listen", "127.0.0.1:0"],
                          stdout=subprocess.PIPE, stderr=open(f"{work}/serve.err", "w"), text=True)
addr = server.stdout.readline().strip().removeprefix("listening on http://")
host, port = addr.split(":")


def proc(pid):
    status = open(f"/proc/{pid}/status").read()
    field = lambda name: int(next(l.split()[1] for l in status.splitlines() if l.startswith(name + ":")))
    return (field("VmRSS"), field("RssAnon"), field("RssFile"), field("Threads"),
            len(os.listdir(f"/proc/{pid}/fd")))


conn = http.client.HTTPConnection(host, int(port), timeout=30)


def post(path, body, auth=True):
    global conn
    headers = {"Content-Type": "application/json"}
    if auth:
        headers["Authorization"] = f"Bearer {key}"
    try:
        conn.request("POST", path, json.dumps(body), headers)
        r = conn.getresponse()
        data = r.read()
        return r.status, data
    except (http.client.HTTPException, OSError):
        conn.close()
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        return 0, b""


kinds = ["noop", "put", "obj", "send", "bar"]
start = time.time()
samples = []
sent = errors = 0
next_sample = 0.0
i = 0
print("seconds,rss_kb,anon_kb,file_kb,threads,fds,requests,errors", flush=True)
try:
    while True:
        now = time.time() - start
        if now >= next_sample:
            s = (round(now),) + proc(server.pid) + (sent, errors)
            samples.append(s)
            print(",".join(map(str, s)), flush=True)
            next_sample += 10
        if now > minutes * 60:
            break
        kind = kinds[i % len(kinds)]
        status, data = post(f"/v1/invoke/{kind}", {"i": i})
        sent += 1
        if status != 200:
            errors += 1
        elif kind == "bar":
            url = json.loads(data)
            path = url[url.index("/v1/callback/"):]
            status, _ = post(path, {"ok": True}, auth=False)
            sent += 1
            errors += status != 200
        i += 1
        # Steady rate: the next request at its slot, whatever this one took.
        delay = i / rate - (time.time() - start)
        if delay > 0:
            time.sleep(delay)
finally:
    server.terminate()
    server.wait()
half = [s for s in samples if s[0] >= samples[-1][0] / 2]
if len(half) >= 2:
    (t0, r0), (t1, r1) = (half[0][0], half[0][1]), (half[-1][0], half[-1][1])
    print(f"# RSS {samples[0][1]} kB at start, {r0} kB at {t0} s, {r1} kB at {t1} s: "
          f"{(r1 - r0) / ((t1 - t0) / 60):+.1f} kB/min over the second half; "
          f"{sent} requests, {errors} errors; project {work}", flush=True)
