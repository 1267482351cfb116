#!/usr/bin/env python3
"""Checks of template.yaml that cfn-lint and checkov cannot know to make (run by tests/run.sh):

- every function that runs scripts knows the public address of the HTTP API, so that the
  callback URLs its scripts make (native.barrier.callback_url) are absolute: NATIVE_PUBLIC_URL
  is the HTTP function's URL on each of them, except on the HTTP function itself (whose URL
  resource depends on it: it takes the domain of each request instead) and on the tick (which
  runs no script); the Globals do not set it (the HTTP function would then depend on its own
  URL); the Fargate server has it too;
- the callback-signing key (NATIVE_CALLBACK_SECRET) is given to the functions that run scripts
  (which sign callback URLs; the HTTP function also checks them) and to no other: not in the
  Globals, not to the tick;
- every function runs under a role of this template with explicit statements (`Role`), never
  SAM's policy templates (`Policies`: DynamoDBCrudPolicy and the like grant Scan, UpdateItem
  and more on a whole table), so that infra/iam and parliament see everything it may do.

    python3 tests/template.py
"""

import sys
from pathlib import Path

from cfnlint.decode import decode

ROOT = Path(__file__).resolve().parents[1]
# Binaries that run no script, with why.
NO_SCRIPTS = {"native-tick": "fires timers onto the work queue; runs no script"}
# The one that runs scripts without the variable, with why.
FROM_REQUEST = {"native-http": "its URL depends on it; takes each request's domain"}
HTTP_URL = {"Fn::GetAtt": ["HttpFunctionUrl", "FunctionUrl"]}


def main():
    template, matches = decode(str(ROOT / "template.yaml"))
    if matches:
        sys.exit(f"template.yaml does not parse: {matches}")
    problems = []
    globals_env = template.get("Globals", {}).get("Function", {}).get("Environment", {})
    if "NATIVE_PUBLIC_URL" in globals_env.get("Variables", {}):
        problems.append("Globals sets NATIVE_PUBLIC_URL: the HTTP function would depend on its own URL")
    if "NATIVE_CALLBACK_SECRET" in globals_env.get("Variables", {}):
        problems.append("Globals sets NATIVE_CALLBACK_SECRET: every function, the tick included, would hold the key")
    functions = 0
    for name, res in template["Resources"].items():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        functions += 1
        binary = res.get("Metadata", {}).get("BuildProperties", {}).get("Binary", name)
        props = res.get("Properties", {})
        if "Policies" in props:
            problems.append(f"{name} uses SAM policy templates (Policies); give it a Role with explicit statements")
        role = props.get("Role")
        if not (isinstance(role, dict) and role.get("Fn::GetAtt", [None])[0] in template["Resources"]):
            problems.append(f"{name} has no Role of this template (Role: !GetAtt <Role>.Arn)")
        env = props.get("Environment", {}).get("Variables", {})
        has_key = "NATIVE_CALLBACK_SECRET" in env
        if binary in NO_SCRIPTS and has_key:
            problems.append(f"{name} ({binary}) holds NATIVE_CALLBACK_SECRET, but {NO_SCRIPTS[binary]}")
        if binary not in NO_SCRIPTS and not has_key:
            problems.append(f"{name} ({binary}) runs scripts but has no NATIVE_CALLBACK_SECRET: its callback URLs cannot be signed")
        url = env.get("NATIVE_PUBLIC_URL")
        if binary in NO_SCRIPTS or binary in FROM_REQUEST:
            if url is not None:
                why = NO_SCRIPTS.get(binary) or FROM_REQUEST[binary]
                problems.append(f"{name} ({binary}) sets NATIVE_PUBLIC_URL, but {why}")
        elif url != HTTP_URL:
            problems.append(
                f"{name} ({binary}) runs scripts but its NATIVE_PUBLIC_URL is {url!r}, not "
                "!GetAtt HttpFunctionUrl.FunctionUrl: its callback URLs would be relative"
            )
    if functions < 5:
        problems.append(f"only {functions} functions found in template.yaml")
    task = template["Resources"].get("ServerTaskDefinition", {}).get("Properties", {})
    containers = task.get("ContainerDefinitions", [])
    for c in containers:
        names = [e.get("Name") for e in c.get("Environment", [])]
        if "NATIVE_PUBLIC_URL" not in names:
            problems.append(f"the server's container {c.get('Name')!r} has no NATIVE_PUBLIC_URL")
    if not containers:
        problems.append("no ServerTaskDefinition container found")
    if problems:
        sys.exit("template.yaml:\n  " + "\n  ".join(problems))
    print(
        f"template.yaml: {functions} functions, each with its own explicit role; NATIVE_PUBLIC_URL "
        "on every one that runs scripts and on the server; the callback key only where scripts run"
    )


if __name__ == "__main__":
    main()
