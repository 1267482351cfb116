// The Node.js peers of tests/benches/peers.sh: `POST /v1/invoke/{script}` with
// `Authorization: Bearer <key>`, the body as the event, the handler's answer as JSON, as on
// `native serve`.
//
//   node node-server.js CONFIG.json
//
// CONFIG: { "mode": "http" | "vm", "handlers": "path/to/handlers.js", "keys": { KEY: TENANT },
//           "deadline_ms": N (vm only; 0 or absent: none) }
//
// - "http": Node.js's `http` server running the handlers in its own realm, as a single-tenant
//   service would: the key is only checked.
// - "vm": one `node:vm` context per tenant, made on the tenant's first request (its own
//   globals, its own copy of the handlers, the body parsed by the context's own JSON so that no
//   object of the host's realm reaches tenant code).
//   With "deadline_ms", every invoke runs under that deadline, as native's do (a tenant's
//   `timeout_s`, 30 s by default): a multi-tenant server on node:vm must have one, or one
//   tenant's `while (true) {}` stops every tenant's requests. node:vm's only way is
//   `script.runInContext(context, { timeout })`, which runs a watchdog thread for the call, so
//   each invoke is a small script run in the context that calls the tenant's function. Without
//   it the tenant's function is called directly, as a single-tenant server calls its own.
//
// Prints `listening on http://127.0.0.1:PORT` (port 0: a free one), as `native serve` does.
"use strict";
const fs = require("node:fs");
const http = require("node:http");
const vm = require("node:vm");

const MAX_BODY_BYTES = 6 * 1024 * 1024; // native's cap (Lambda's payload limit)

const config = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const source = fs.readFileSync(config.handlers, "utf8");
const keys = new Map(Object.entries(config.keys));
// "vm" with "deadline_ms": each invoke is this script, run in the tenant's context under it.
const deadlineMs = config.mode === "vm" ? Number(config.deadline_ms || 0) : 0;
const CALL = new vm.Script("__invoke(__name, __body)", { filename: "call.js" });

// The wrapper each realm runs: parse the body, run the handler, encode the answer; `null`
// when there is no such handler.
const WRAPPER = `
;(function (name, body) {
  var handler = Object.prototype.hasOwnProperty.call(handlers, name) ? handlers[name] : null;
  if (handler === null) return null;
  var event = body.trim() === "" ? {} : JSON.parse(body);
  return JSON.stringify(handler(event));
})`;

/** The invoke function of a tenant: one per tenant in "vm" mode, one for all in "http". */
const invokers = new Map();
let shared = null;
function invokerOf(tenant) {
  if (config.mode === "http") {
    if (shared === null) shared = vm.runInThisContext(source + WRAPPER, { filename: config.handlers });
    return shared;
  }
  let f = invokers.get(tenant);
  if (f === undefined) {
    const context = vm.createContext({});
    const invoke = new vm.Script(source + WRAPPER, { filename: `${tenant}/handlers.js` }).runInContext(context);
    if (deadlineMs > 0) {
      // The arguments go through the context's global object, which the call script reads.
      context.__invoke = invoke;
      f = (name, body) => {
        context.__name = name;
        context.__body = body;
        return CALL.runInContext(context, { timeout: deadlineMs });
      };
    } else {
      f = invoke;
    }
    invokers.set(tenant, f);
  }
  return f;
}

function answer(res, status, body) {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function fail(res, status, message) {
  answer(res, status, JSON.stringify({ error: message }));
}

const server = http.createServer((req, res) => {
  if (req.method === "GET" && req.url === "/healthz") return answer(res, 200, '{"ok":true}');
  const prefix = "/v1/invoke/";
  if (req.method !== "POST" || !req.url.startsWith(prefix)) {
    req.resume();
    return fail(res, 404, "no endpoint: POST /v1/invoke/{script}");
  }
  const auth = req.headers.authorization || "";
  const tenant = auth.startsWith("Bearer ") ? keys.get(auth.slice(7)) : undefined;
  if (tenant === undefined) {
    req.resume();
    return fail(res, 401, "missing or unknown API key");
  }
  const script = req.url.slice(prefix.length);
  const chunks = [];
  let size = 0;
  let refused = false;
  req.on("data", (chunk) => {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      if (!refused) fail(res, 413, `request body is over ${MAX_BODY_BYTES} bytes`);
      refused = true;
      return;
    }
    chunks.push(chunk);
  });
  req.on("end", () => {
    if (refused) return;
    const body = chunks.length === 1 ? chunks[0].toString("utf8") : Buffer.concat(chunks).toString("utf8");
    let out;
    try {
      out = invokerOf(tenant)(script, body);
    } catch (e) {
      return fail(res, e && e.name === "SyntaxError" ? 400 : 500, String(e && e.message));
    }
    if (out === null) return fail(res, 404, `no script ${script}`);
    answer(res, 200, out);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`);
});
