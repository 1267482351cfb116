// Writes a workerd configuration for tests/benches/peers.sh into OUTDIR (config.capnp and the
// modules it embeds).
//
//   node workerd-config.js OUTDIR direct KEY          # one worker on the socket, checking KEY
//   node workerd-config.js OUTDIR dispatch KEYS.json  # a dispatcher and a worker per tenant
//
// KEYS.json: { KEY: TENANT }. Each tenant's worker is its own service, hence its own V8
// isolate, with its own copy of the handlers (handlers.js + workerd-tenant.js). The socket
// listens on 127.0.0.1:0; peers.sh reads the port workerd got from the kernel.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const [outdir, mode, arg] = process.argv.slice(2);
if (!outdir || !["direct", "dispatch"].includes(mode) || !arg) {
  console.error("usage: node workerd-config.js OUTDIR direct KEY | OUTDIR dispatch KEYS.json");
  process.exit(2);
}
// A date the pinned workerd (package.json) supports: its defaults as of late 2026.
const DATE = "2026-11-01";
const here = __dirname;
fs.mkdirSync(outdir, { recursive: true });
fs.writeFileSync(
  path.join(outdir, "tenant.js"),
  fs.readFileSync(path.join(here, "handlers.js"), "utf8") + fs.readFileSync(path.join(here, "workerd-tenant.js"), "utf8"),
);
// Cap'n Proto text literals take JSON's string escapes for what JSON.stringify emits here.
const text = (s) => JSON.stringify(s);

function tenantWorker(bindings) {
  return `(modules = [(name = "tenant.js", esModule = embed "tenant.js")], compatibilityDate = ${text(DATE)}, bindings = [${bindings}])`;
}

const services = [];
let front;
if (mode === "direct") {
  services.push(`(name = "tenant", worker = ${tenantWorker(`(name = "KEY", text = ${text(arg)})`)})`);
  front = "tenant";
} else {
  fs.copyFileSync(path.join(here, "workerd-dispatch.js"), path.join(outdir, "dispatch.js"));
  const keys = JSON.parse(fs.readFileSync(arg, "utf8"));
  const tenants = [...new Set(Object.values(keys))];
  const bindings = [`(name = "KEYS", json = ${text(JSON.stringify(keys))})`].concat(
    tenants.map((t) => `(name = ${text("tenant_" + t)}, service = ${text("tenant_" + t)})`),
  );
  services.push(
    `(name = "dispatch", worker = (modules = [(name = "dispatch.js", esModule = embed "dispatch.js")], compatibilityDate = ${text(DATE)}, bindings = [${bindings.join(", ")}]))`,
  );
  for (const t of tenants) services.push(`(name = ${text("tenant_" + t)}, worker = ${tenantWorker("")})`);
  front = "dispatch";
}
fs.writeFileSync(
  path.join(outdir, "config.capnp"),
  `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    ${services.join(",\n    ")}
  ],
  sockets = [(name = "http", address = "127.0.0.1:0", http = (), service = ${text(front)})],
);
`,
);
