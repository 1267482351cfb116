#!/usr/bin/env python3
"""Stands up what template.yaml deploys in moto, on 127.0.0.1, and prints the environment the
functions read, so that `cargo lambda watch` / `cargo lambda invoke` run them locally:

    eval "$(python3 infra/local_stack.py)"      # moto (started if needed), the stack, the variables
    cargo lambda watch &                          # then: cargo lambda invoke native-invoke --data-file events/invoke.json

With AWS_ENDPOINT_URL set to a running moto it uses that one; otherwise it starts
`python3 -m moto.server` on a free port in the background (its log and pid in
`target/local-stack/`; `python3 infra/local_stack.py --stop` stops it). Needs `pip install
'moto[server]' boto3`.

What it makes, named as the stack `native` in moto's account 123456789012 (so the sample events
in events/ apply unchanged): the In, Out, batch and scripts buckets; the events and work queues
with their dead-letter queues (maxReceiveCount 5, visibility 360 s, as the template sets them);
the In and Out buckets' object notifications to the events queue; the table with its TTL; and
the `hello` example tenant uploaded to the scripts bucket as `native deploy` does, with the two
documents its sample events point at. Running it again resets the table and the queues.
Everything is printed as `export NAME='value'` lines on stdout; progress goes to stderr.
"""

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ACCOUNT, REGION, PREFIX = "123456789012", "us-east-1", "native"
STATE = ROOT / "target" / "local-stack"


def name(role):
    """A bucket's name as the template makes it (`native-<role>-<account>-<region>`)."""
    return f"{PREFIX}-{role}-{ACCOUNT}-{REGION}"


def say(text):
    print(f"local_stack: {text}", file=sys.stderr)


def up(endpoint):
    try:
        urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1)
        return True
    except OSError:
        return False


def start_moto():
    """Starts moto on a free 127.0.0.1 port in the background; returns its endpoint."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    STATE.mkdir(parents=True, exist_ok=True)
    log = open(STATE / "moto.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    (STATE / "moto.pid").write_text(str(proc.pid))
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(150):
        if up(endpoint):
            say(f"moto started at {endpoint} (pid {proc.pid}, log {STATE / 'moto.log'})")
            return endpoint
        if proc.poll() is not None:
            sys.exit(f"local_stack: moto exited at start (is moto[server] installed?); see {STATE / 'moto.log'}")
        time.sleep(0.1)
    sys.exit(f"local_stack: moto did not answer within 15 s; see {STATE / 'moto.log'}")


def stop_moto():
    pid_file = STATE / "moto.pid"
    if not pid_file.exists():
        say("no moto started by this script")
        return
    pid = int(pid_file.read_text())
    try:
        os.killpg(pid, signal.SIGTERM)
        say(f"moto (pid {pid}) stopped")
    except ProcessLookupError:
        say(f"moto (pid {pid}) was not running")
    pid_file.unlink()


def provision(endpoint):
    """Makes the stack's resources in moto at `endpoint` and uploads the hello tenant. Returns
    (s3 client, sqs client, queue URLs, the functions' NATIVE_* variables)."""
    import boto3

    kw = dict(endpoint_url=endpoint, region_name=REGION,
              aws_access_key_id="testing", aws_secret_access_key="testing")
    s3, sqs, ddb = (boto3.client(s, **kw) for s in ("s3", "sqs", "dynamodb"))
    # Idempotent, so that a second run against the same moto works.
    existing = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
    for role in ("in", "out", "batch", "scripts"):
        if name(role) not in existing:
            s3.create_bucket(Bucket=name(role))
    urls = {}
    for q in ("events", "work"):
        dlq = sqs.create_queue(QueueName=f"{PREFIX}-{q}-dlq")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 5})
        urls[q] = sqs.create_queue(
            QueueName=f"{PREFIX}-{q}",
            Attributes={"RedrivePolicy": policy, "VisibilityTimeout": "360"},
        )["QueueUrl"]
        urls[q + "_dlq"] = dlq
        sqs.purge_queue(QueueUrl=urls[q])
    # Objects landing in the tenants' buckets notify the events queue, as in the template; in
    # the batch bucket, only partners' `/done.json`.
    events_arn = sqs.get_queue_attributes(
        QueueUrl=urls["events"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    done_only = {"Key": {"FilterRules": [{"Name": "suffix", "Value": "/done.json"}]}}
    for role, extra in (("in", {}), ("out", {}), ("batch", {"Filter": done_only})):
        s3.put_bucket_notification_configuration(
            Bucket=name(role),
            NotificationConfiguration={
                "QueueConfigurations": [
                    {"QueueArn": events_arn, "Events": ["s3:ObjectCreated:*"], **extra}
                ]
            },
        )
    table = f"{PREFIX}-table"
    if table in ddb.list_tables()["TableNames"]:
        ddb.delete_table(TableName=table)
    ddb.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
    )
    ddb.update_time_to_live(
        TableName=table, TimeToLiveSpecification={"AttributeName": "ttl", "Enabled": True}
    )
    # The hello tenant, as `native deploy hello --bucket <scripts>` uploads it.
    tenant = ROOT / "examples/hello/tenants/hello"
    for f in sorted(tenant.rglob("*")):
        if f.is_file():
            s3.put_object(Bucket=name("scripts"), Key=f"hello/{f.relative_to(tenant)}", Body=f.read_bytes())
    # What the sample events point at: the documents the start script would have written.
    for who in ("Ada", "Grace"):
        s3.put_object(
            Bucket=name("in"),
            Key=f"hello/greetings/{who}.json",
            Body=json.dumps({"name": who, "requested_by": "local_stack"}).encode(),
        )
    sqs.purge_queue(QueueUrl=urls["events"])  # the notifications of those two puts
    env = {
        "NATIVE_TABLE": table,
        "NATIVE_EVENTS_QUEUE_URL": urls["events"],
        "NATIVE_WORK_QUEUE_URL": urls["work"],
        "NATIVE_EVENTS_DLQ_URL": urls["events_dlq"],
        "NATIVE_WORK_DLQ_URL": urls["work_dlq"],
        "NATIVE_SCRIPTS_BUCKET": name("scripts"),
        "NATIVE_BUCKETS": json.dumps({"In": name("in"), "Out": name("out")}),
        "NATIVE_BATCH_BUCKET": name("batch"),
        "NATIVE_BATCH_PREFIX": "tenants/",
        # Scripts' data calls through the tenant role, as the template sets it (moto's STS).
        "NATIVE_TENANT_ROLE_ARN": f"arn:aws:iam::{ACCOUNT}:role/native-TenantRole-LOCAL",
    }
    return s3, sqs, urls, env


def main():
    if "--stop" in sys.argv[1:]:
        stop_moto()
        return
    if sys.argv[1:]:
        print(__doc__, file=sys.stderr)
        sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)
    try:
        import boto3  # noqa: F401
    except ImportError:
        sys.exit("local_stack: boto3 is missing: pip install 'moto[server]' boto3")
    endpoint = os.environ.get("AWS_ENDPOINT_URL", "")
    if endpoint and not up(endpoint):
        sys.exit(f"local_stack: AWS_ENDPOINT_URL is {endpoint}, where no moto answers; unset it to have one started")
    if not endpoint:
        endpoint = start_moto()
    _, _, _, env = provision(endpoint)
    env = {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
        **env,
    }
    for k, v in env.items():
        print(f"export {k}={shlex.quote(v)}")
    say(f"the stack is up in moto at {endpoint}, with the hello tenant; variables printed")


if __name__ == "__main__":
    main()
