"""moto's server for the AWS tests, with DynamoDB's writes atomic as DynamoDB's are.

    python3 tests/moto_server.py HOST PORT

`python3 -m moto.server` serves each request on a thread of its own, and moto's DynamoDB
tables take no lock: two conditional writes to one item that arrive together can both pass
their condition, and one is lost. Real DynamoDB applies each write (and each transaction)
atomically, so the product's optimistic writes are right there and wrong here. Seen: four
shards arriving at one rendezvous barrier at once left it at three arrivals in 1 to 2 runs of
20 (tests/tests/rendezvous.rs, `the_guide_s_scripts_...`, aws), none of 20 with this server.

Here DynamoDB's requests (`X-Amz-Target: DynamoDB_...`) are served one at a time; the other
services stay concurrent, so an SQS long poll holds up nobody.
"""
import sys
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple

app = DomainDispatcherApplication(create_backend_app)
dynamodb = threading.Lock()


def serve(environ, start_response):
    if environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
        with dynamodb:
            # The answer is made whole inside the lock.
            return list(app(environ, start_response))
    return app(environ, start_response)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: moto_server.py HOST PORT")
    run_simple(sys.argv[1], int(sys.argv[2]), serve, threaded=True)
