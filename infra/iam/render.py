#!/usr/bin/env python3
"""Writes every IAM policy document of template.yaml to infra/iam/<resource>.<policy>.json, with
CloudFormation's intrinsic functions resolved to example values, so that `parliament` (which
reads plain policy JSON) can check them.

    python3 infra/iam/render.py           # (re)write the files
    python3 infra/iam/render.py --check   # fail if a file is missing, stale or left over

The template is the source; these files are its rendering, checked in so that a review sees the
policies as AWS will. tests/run.sh runs --check and then parliament on each file.
"""

import json
import re
import sys
from pathlib import Path

from cfnlint.decode import decode

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "infra" / "iam"
ACCOUNT, REGION, STACK, PARTITION = "123456789012", "us-east-1", "native", "aws"


def example_params(params):
    """Each parameter's default, or an example for those without one."""
    values = {k: str(v.get("Default", "")) for k, v in params.items()}
    values["PartnerExternalId"] = "example-external-id"
    return values


def main():
    template, matches = decode(str(ROOT / "template.yaml"))
    if matches:
        sys.exit(f"template.yaml does not parse: {matches}")
    params = example_params(template.get("Parameters", {}))
    resources = template["Resources"]
    pseudo = {
        "AWS::AccountId": ACCOUNT,
        "AWS::Region": REGION,
        "AWS::StackName": STACK,
        "AWS::Partition": PARTITION,
        "AWS::NoValue": None,
    }

    def ref(name):
        if name in pseudo:
            return pseudo[name]
        if name in params:
            return params[name]
        kind = resources[name]["Type"]
        if kind == "AWS::S3::Bucket":
            role = re.sub(r"Bucket$", "", name).lower()
            return f"{params['NamePrefix']}-{role}-{ACCOUNT}-{REGION}"
        if kind == "AWS::SQS::Queue":
            return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{STACK}-{name}"
        if kind == "AWS::SecretsManager::Secret":  # Ref gives a secret's ARN
            return f"arn:{PARTITION}:secretsmanager:{REGION}:{ACCOUNT}:secret:{STACK}-{name}-AbCdEf"
        if kind == "AWS::IAM::ManagedPolicy":
            return f"arn:{PARTITION}:iam::{ACCOUNT}:policy/{STACK}-{name}"
        return f"{STACK}-{name}"

    def getatt(name, attr):
        kind = resources[name]["Type"]
        if attr == "Arn":
            if kind == "AWS::S3::Bucket":
                return f"arn:{PARTITION}:s3:::{ref(name)}"
            if kind == "AWS::SQS::Queue":
                return f"arn:{PARTITION}:sqs:{REGION}:{ACCOUNT}:{STACK}-{name}"
            if kind == "AWS::DynamoDB::Table":
                return f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/{STACK}-{name}"
            if kind == "AWS::IAM::Role":
                return f"arn:{PARTITION}:iam::{ACCOUNT}:role/{STACK}-{name}"
            if kind == "AWS::Logs::LogGroup":
                group = resolve(resources[name]["Properties"]["LogGroupName"])
                return f"arn:{PARTITION}:logs:{REGION}:{ACCOUNT}:log-group:{group}:*"
        if attr == "QueueName":
            return f"{STACK}-{name}"
        raise ValueError(f"no example for !GetAtt {name}.{attr}")

    def sub(text, extra):
        def one(m):
            inner = m.group(1)
            if inner.startswith("!"):
                return "${" + inner[1:] + "}"
            if inner in extra:
                return str(resolve(extra[inner]))
            if "." in inner:
                return getatt(*inner.split(".", 1))
            return str(ref(inner))

        return re.sub(r"\$\{([^}]+)\}", one, text)

    def resolve(v):
        if isinstance(v, dict) and len(v) == 1:
            (k, arg), = v.items()
            if k == "Ref":
                return ref(arg)
            if k == "Fn::GetAtt":
                return getatt(*(arg if isinstance(arg, list) else arg.split(".", 1)))
            if k == "Fn::Sub":
                return sub(arg, {}) if isinstance(arg, str) else sub(arg[0], arg[1])
            if k == "Fn::If":
                # The branch the defaults choose is not known here: take the first (the
                # narrower one in this template: a named partner tenant, this account).
                return resolve(arg[1])
        if isinstance(v, dict):
            out = {k: resolve(x) for k, x in v.items()}
            return {k: x for k, x in out.items() if x is not None}
        if isinstance(v, list):
            return [x for x in (resolve(i) for i in v) if x is not None]
        return v

    docs = {}
    for name, res in resources.items():
        props = res.get("Properties", {})
        if res["Type"] == "AWS::IAM::Role":
            for p in props.get("Policies", []):
                docs[f"{name}.{p['PolicyName']}"] = p["PolicyDocument"]
        elif res["Type"] == "AWS::IAM::ManagedPolicy":
            docs[f"{name}.policy"] = props["PolicyDocument"]
    rendered = {
        OUT / f"{key}.json": json.dumps(resolve(doc), indent=2, sort_keys=False) + "\n"
        for key, doc in docs.items()
    }

    if "--check" in sys.argv[1:]:
        stale = [p.name for p, text in rendered.items() if not p.exists() or p.read_text() != text]
        extra = [p.name for p in OUT.glob("*.json") if p not in rendered]
        if stale or extra:
            sys.exit(
                f"infra/iam is not template.yaml's rendering (stale: {stale}, left over: {extra}); "
                "run python3 infra/iam/render.py"
            )
        print(f"infra/iam: {len(rendered)} policy documents match template.yaml")
        return
    for p in OUT.glob("*.json"):
        if p not in rendered:
            p.unlink()
    for p, text in rendered.items():
        p.write_text(text)
    print(f"wrote {len(rendered)} policy documents to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
