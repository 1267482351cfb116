-- wrk script of tests/benches/peers.sh: POST the body file with the caller's key, then one
-- machine-readable line for the harness:
--   RESULT <requests> <duration_us> <p50_us> <p99_us> <errors>
-- errors counts non-2xx/3xx answers, connect, read and write errors and timeouts.
-- Environment: BENCH_KEY (the API key), BENCH_BODY (the path of the body; empty for "{}").
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. assert(os.getenv("BENCH_KEY"), "BENCH_KEY is not set")
local path = os.getenv("BENCH_BODY") or ""
if path == "" then
    wrk.body = "{}"
else
    local f = assert(io.open(path, "rb"))
    wrk.body = f:read("*a")
    f:close()
end

function done(summary, latency, requests)
    local e = summary.errors
    io.write(string.format("RESULT %d %d %d %d %d\n", summary.requests, summary.duration,
        latency:percentile(50), latency:percentile(99),
        e.connect + e.read + e.write + e.status + e.timeout))
end
