"""The CPython peer of `cargo bench --bench batch`: what a tenant would write in a Python Lambda
to read a partner's part. Reads the whole file, checks its sha256, gunzips it when asked, parses
every line with json.loads and sums `amount`. Prints {"rows":N,"seconds":S}, timing only the
work (not the interpreter's start), as a warm Lambda would see it.
Usage: python3 rows.py FILE SHA256 gzip|plain"""
import gzip
import hashlib
import json
import sys
import time

path, sha, kind = sys.argv[1:4]
t = time.perf_counter()
with open(path, "rb") as f:
    stored = f.read()
if hashlib.sha256(stored).hexdigest() != sha:
    raise SystemExit(f"{path}: sha256 mismatch")
data = gzip.decompress(stored) if kind == "gzip" else stored
rows = 0
total = 0
for line in data.split(b"\n"):
    if line:
        total += json.loads(line)["amount"]
        rows += 1
seconds = time.perf_counter() - t
print(json.dumps({"rows": rows, "sum": total, "seconds": seconds}))
