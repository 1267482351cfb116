#!/usr/bin/env bash
# Installs the real, generated clients that cli/tests/clients.rs drives `native serve` with, into
# target/clients/ (kept between runs), and generates their code from the shipped proto
# (shared/proto/grackle-v1beta.proto) every time:
# - Python grpcio + grpcio-tools from PyPI, in a virtual environment of its own
#   (target/clients/venv), never the system interpreter; code by grpc_tools.protoc;
# - Connect-ES from npm (@connectrpc/connect, @connectrpc/connect-node, @bufbuild/protobuf),
#   at the versions of tests/clients/connect/package-lock.json (npm ci); code by
#   @bufbuild/protoc-gen-es through @bufbuild/buf.
# Prints nothing on success but what the installers print.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/target/clients"
src="$root/tests/clients"
mkdir -p "$out"

# Python gRPC client.
GRPCIO=1.85.1
if ! "$out/venv/bin/python" -c "import grpc, grpc_tools; assert grpc.__version__ == '$GRPCIO'" 2>/dev/null; then
    echo "tests/clients/setup.sh: installing grpcio $GRPCIO into $out/venv" >&2
    rm -rf "$out/venv"
    python3 -m venv "$out/venv"
    "$out/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "grpcio==$GRPCIO" "grpcio-tools==$GRPCIO"
fi
rm -rf "$out/py"
mkdir -p "$out/py"
"$out/venv/bin/python" -m grpc_tools.protoc -I "$root/shared/proto" \
    --python_out="$out/py" --grpc_python_out="$out/py" grackle-v1beta.proto
cp "$src/grpc_client.py" "$out/py/"

# Connect-ES client.
c="$out/connect"
mkdir -p "$c"
cp "$src/connect/package.json" "$src/connect/package-lock.json" "$src/connect/buf.gen.yaml" \
    "$src/connect/cases.mjs" "$src/connect/run.mjs" "$c/"
if ! cmp -s "$c/package-lock.json" "$c/node_modules/.installed-lock.json" 2>/dev/null; then
    echo "tests/clients/setup.sh: npm ci (Connect-ES) in $c" >&2
    (cd "$c" && npm ci --no-audit --no-fund --loglevel=error)
    cp "$c/package-lock.json" "$c/node_modules/.installed-lock.json"
fi
rm -rf "$c/gen"
(cd "$c" && PATH="$c/node_modules/.bin:$PATH" buf generate "$root/shared/proto" --template buf.gen.yaml)
