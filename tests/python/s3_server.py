"""A local S3-compatible server (moto) for the object-storage lake tests.

Binds 127.0.0.1 only, creates the buckets named on the command line, prints
`endpoint=http://127.0.0.1:<port>` once it serves, and stops by itself: when its
standard input closes (the test process that started it has exited, however it
exited), or after --max-seconds.

    python s3_server.py [--port 0] [--max-seconds 5400] [--bucket NAME]...
"""

import argparse
import os
import sys
import threading
import time

# moto's server signs nothing and checks nothing: fixed test credentials.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

from moto.server import ThreadedMotoServer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=5400)
    parser.add_argument("--bucket", action="append", default=[])
    parser.add_argument(
        "--no-stdin-watch",
        action="store_true",
        help="keep serving when stdin closes (for a server started in the background by CI)",
    )
    args = parser.parse_args()

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=args.port, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"

    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    for bucket in args.bucket:
        s3.create_bucket(Bucket=bucket)

    print(f"endpoint={endpoint}", flush=True)

    done = threading.Event()
    if not args.no_stdin_watch:

        def watch_stdin() -> None:
            # EOF when the parent exits: nobody is left to use the server.
            sys.stdin.read()
            done.set()

        threading.Thread(target=watch_stdin, daemon=True).start()
    deadline = time.monotonic() + args.max_seconds
    while not done.is_set() and time.monotonic() < deadline:
        done.wait(1.0)
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
