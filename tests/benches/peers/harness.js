// Helpers of tests/benches/peers.sh that are easier in JavaScript than in bash.
//
//   node harness.js canon                      # stdin JSON -> canonical JSON (sorted keys)
//   node harness.js expect HANDLERS BODY NAME  # the answer NAME must give to BODY ("" for {})
//   node harness.js firsts URL KEYS.json KEY   # first invokes: KEY once, then every other key
//   node harness.js report RESULTS.tsv MEMORY.tsv
"use strict";
const fs = require("node:fs");
const http = require("node:http");
const vm = require("node:vm");

/** JSON with object keys sorted, so that answers compare whatever order a server wrote. */
function canon(value) {
  if (Array.isArray(value)) return "[" + value.map(canon).join(",") + "]";
  if (value !== null && typeof value === "object") {
    return "{" + Object.keys(value).sort().map((k) => JSON.stringify(k) + ":" + canon(value[k])).join(",") + "}";
  }
  return JSON.stringify(value);
}

/** POST `body` to `url` with the key over `agent`; resolves to [status, text, microseconds]. */
function post(agent, url, key, body) {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const req = http.request(
      url,
      {
        method: "POST",
        agent,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (text += c));
        res.on("end", () => resolve([res.statusCode, text, Number(process.hrtime.bigint() - start) / 1000]));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * The first invoke of `noop` by each tenant, one after the other on one kept-alive connection,
 * so that neither connection set-up nor queueing is in the figure. `warm` goes first and alone
 * (the process's own first request); with `only` nothing else does.
 */
async function firsts(url, keysFile, warm, only) {
  const keys = Object.keys(JSON.parse(fs.readFileSync(keysFile, "utf8"))).filter((k) => k !== warm);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const target = `${url}/v1/invoke/noop`;
  const [status, text] = await post(agent, target, warm, "{}");
  if (status !== 200) throw new Error(`the warm-up invoke answered ${status}: ${text}`);
  if (only) return agent.destroy();
  const micros = [];
  for (const key of keys) {
    const [s, t, us] = await post(agent, target, key, "{}");
    if (s !== 200) throw new Error(`the first invoke of tenant ${key.slice(0, 6)}... answered ${s}: ${t}`);
    micros.push(us);
  }
  agent.destroy();
  const sorted = micros.sort((a, b) => a - b);
  console.log([sorted.length, median(sorted), quantile(sorted, 0.9), sorted[sorted.length - 1]].map((x) => Math.round(x)).join("\t"));
}

// ---- the report ------------------------------------------------------------------------------

const fmtInt = (x) => Math.round(x).toLocaleString("en-US").replace(/,/g, " ");
const fmtUs = (us) => (us >= 1000 ? `${(us / 1000).toFixed(us >= 10000 ? 0 : 1)} ms` : `${Math.round(us)} µs`);
const fmtRatio = (x) => `${x.toFixed(2)}x`;
const range = (xs, f) => {
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  return xs.length === 1 || f(lo) === f(hi) ? f(lo) : `${f(lo)} to ${f(hi)}`;
};

function readTsv(file) {
  if (!file || !fs.existsSync(file)) return [];
  const [head, ...lines] = fs.readFileSync(file, "utf8").trim().split("\n");
  const cols = head.split("\t");
  return lines.filter(Boolean).map((l) => Object.fromEntries(l.split("\t").map((v, i) => [cols[i], /^-?[0-9.]+$/.test(v) ? Number(v) : v])));
}

function report(resultsFile, memoryFile) {
  const rows = readTsv(resultsFile);
  const contestants = [...new Set(rows.map((r) => r.contestant))];
  const peers = contestants.filter((c) => c !== "native");
  const cells = [...new Set(rows.map((r) => `${r.handler}\t${r.conns}`))];
  const rounds = [...new Set(rows.map((r) => r.round))];
  const errors = rows.reduce((n, r) => n + r.errors, 0);

  if (rows.length) console.log(`\n## Throughput: median of ${rounds.length} alternating round(s) (range in brackets)\n`);
  if (rows.length) console.log("| handler | conns | contestant | req/s | p50 | p99 | server CPU / req |");
  if (rows.length) console.log("| --- | ---: | --- | ---: | ---: | ---: | ---: |");
  for (const cell of cells) {
    const [handler, conns] = cell.split("\t");
    for (const c of contestants) {
      const rs = rows.filter((r) => r.handler === handler && String(r.conns) === conns && r.contestant === c);
      if (!rs.length) continue;
      const rps = rs.map((r) => r.rps);
      const cpu = rs.map((r) => r.cpu_us_per_req);
      console.log(
        `| ${handler} | ${conns} | ${c} | ${fmtInt(median(rps))} (${range(rps, fmtInt)}) | ${fmtUs(median(rs.map((r) => r.p50_us)))} | ${fmtUs(median(rs.map((r) => r.p99_us)))} | ${Math.round(median(cpu))} µs (${range(cpu, Math.round)}) |`,
      );
    }
  }
  if (peers.length && contestants.includes("native")) {
    console.log("\n## Ratios, native against each peer, per round (median, range in brackets)\n");
    console.log("req/s: native / peer (above 1: native serves more). CPU: peer's CPU per request / native's (above 1: native spends less).\n");
    console.log(`| handler | conns | ${peers.map((p) => `req/s vs ${p} | CPU vs ${p}`).join(" | ")} |`);
    console.log(`| --- | ---: | ${peers.map(() => "---: | ---:").join(" | ")} |`);
    for (const cell of cells) {
      const [handler, conns] = cell.split("\t");
      const of = (c, round) => rows.find((r) => r.handler === handler && String(r.conns) === conns && r.contestant === c && r.round === round);
      const parts = peers.map((p) => {
        const pairs = rounds.map((round) => [of("native", round), of(p, round)]).filter(([a, b]) => a && b);
        const rq = pairs.map(([a, b]) => a.rps / b.rps);
        const cpu = pairs.map(([a, b]) => b.cpu_us_per_req / a.cpu_us_per_req);
        return pairs.length ? `${fmtRatio(median(rq))} (${range(rq, fmtRatio)}) | ${fmtRatio(median(cpu))} (${range(cpu, fmtRatio)})` : "– | –";
      });
      console.log(`| ${handler} | ${conns} | ${parts.join(" | ")} |`);
    }
  }
  if (errors) console.log(`\nWARNING: ${errors} request(s) failed or answered non-2xx (column errors of ${resultsFile}).`);

  const mem = readTsv(memoryFile);
  if (mem.length) {
    console.log("\n## Tenants: memory and first request\n");
    console.log("| contestant | tenants | RSS, 1 tenant | RSS, all | per tenant (all - 1 tenant) | per tenant (growth over the first invokes) | first invoke: median | p90 | max | start with all |");
    console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (const m of mem) {
      const kb = (x) => `${fmtInt(x)} KB`;
      console.log(
        `| ${m.contestant} | ${m.tenants} | ${kb(m.rss_base_kb)} | ${kb(m.rss_full_kb)} | **${kb((m.rss_full_kb - m.rss_base_kb) / m.tenants)}** | ${kb((m.rss_full_kb - m.rss_warm_kb) / m.tenants)} | **${fmtUs(m.first_p50_us)}** | ${fmtUs(m.first_p90_us)} | ${fmtUs(m.first_max_us)} | ${(m.start_ms / 1000).toFixed(1)} s |`,
      );
    }
  }
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === "canon") {
  process.stdout.write(canon(JSON.parse(fs.readFileSync(0, "utf8"))) + "\n");
} else if (cmd === "expect") {
  const [handlersFile, bodyFile, name] = args;
  const handlers = vm.runInThisContext(fs.readFileSync(handlersFile, "utf8") + ";handlers");
  const event = bodyFile ? JSON.parse(fs.readFileSync(bodyFile, "utf8")) : {};
  process.stdout.write(canon(handlers[name](event)) + "\n");
} else if (cmd === "firsts") {
  firsts(args[0], args[1], args[2], args[3] === "--only").catch((e) => {
    console.error(String(e && e.message));
    process.exit(1);
  });
} else if (cmd === "report") {
  report(args[0], args[1]);
} else {
  console.error("usage: node harness.js canon | expect HANDLERS BODY NAME | firsts URL KEYS.json KEY [--only] | report RESULTS.tsv [MEMORY.tsv]");
  process.exit(2);
}
