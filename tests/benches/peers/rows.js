// The Node.js peer of `cargo bench --bench batch`: what a tenant would write in a Node.js Lambda
// to read a partner's part. Reads the whole file, checks its sha256, gunzips it when asked,
// parses every line with JSON.parse and sums `amount`. Prints `{"rows":N,"seconds":S}`, timing
// only the work (not the process start), as a warm Lambda would see it.
// Usage: node rows.js FILE SHA256 gzip|plain
const fs = require("fs");
const crypto = require("crypto");
const zlib = require("zlib");

const [file, sha, kind] = process.argv.slice(2);
const t = process.hrtime.bigint();
const stored = fs.readFileSync(file);
if (crypto.createHash("sha256").update(stored).digest("hex") !== sha) {
  throw new Error(`${file}: sha256 mismatch`);
}
const text = (kind === "gzip" ? zlib.gunzipSync(stored) : stored).toString("utf8");
let rows = 0;
let sum = 0;
let start = 0;
while (start < text.length) {
  let end = text.indexOf("\n", start);
  if (end < 0) end = text.length;
  if (end > start) {
    sum += JSON.parse(text.slice(start, end)).amount;
    rows += 1;
  }
  start = end + 1;
}
const seconds = Number(process.hrtime.bigint() - t) / 1e9;
console.log(JSON.stringify({ rows, sum, seconds }));
