#!/usr/bin/env python3
"""The JSON Schemas of the partner contract (docs/schemas/) against the manifest corpus
(tests/manifests/<kind>/{valid,invalid}/*.json): every manifest must get the verdict of its
folder. The Rust reader is held to the same corpus (shared/src/batch/contract.rs), so the two
agree. Uses the `jsonschema` package (a dependency of cfn-lint, which tests/run.sh installs).
Exits 1 naming every disagreement."""
import json
import pathlib
import sys

import jsonschema

root = pathlib.Path(__file__).resolve().parent.parent
wrong, n = [], 0
for kind in ("done", "request"):
    schema = json.loads((root / "docs/schemas" / f"{kind}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for verdict in ("valid", "invalid"):
        for path in sorted((root / "tests/manifests" / kind / verdict).glob("*.json")):
            n += 1
            errors = list(validator.iter_errors(json.loads(path.read_text())))
            if (not errors) != (verdict == "valid"):
                why = "; ".join(e.message[:200] for e in errors) or "the schema accepts it"
                wrong.append(f"{path.relative_to(root)}: {why}")
for w in wrong:
    print(f"tests/schemas.py: {w}", file=sys.stderr)
print(f"tests/schemas.py: {n - len(wrong)} of {n} manifests get their folder's verdict from the schemas", file=sys.stderr)
if n < 40:
    print("tests/schemas.py: the corpus must hold at least 40 manifests", file=sys.stderr)
    sys.exit(1)
sys.exit(1 if wrong else 0)
