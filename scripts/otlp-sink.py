#!/usr/bin/env python3
"""A minimal OTLP/HTTP receiver on 127.0.0.1 for measuring Latch's trace export (docs/operations.md, "Tracing").

    python3 scripts/otlp-sink.py --port 4318 [--dump FILE]

Accepts POST /v1/traces (protobuf or JSON), answers 200 with an empty body (an empty ExportTraceServiceResponse),
counts requests and bytes, and with --dump appends JSON bodies (OTEL_EXPORTER_OTLP_PROTOCOL=http/json) to FILE.
SIGTERM or Ctrl-C prints one JSON line of totals and stops.
"""

import argparse
import http.server
import json
import signal
import sys
import threading

totals = {"requests": 0, "bytes": 0}
lock = threading.Lock()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=4318)
    parser.add_argument("--dump")
    args = parser.parse_args()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(min(length, 64 * 1024 * 1024))
            with lock:
                totals["requests"] += 1
                totals["bytes"] += len(body)
                if args.dump and "json" in (self.headers.get("Content-Type") or ""):
                    with open(args.dump, "ab") as dump:
                        dump.write(body + b"\n")
            # An empty ExportTraceServiceResponse: no bytes in protobuf, `{}` in JSON.
            json_body = "json" in (self.headers.get("Content-Type") or "")
            answer = b"{}" if json_body else b""
            self.send_response(200)
            self.send_header("Content-Type", "application/json" if json_body else "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)

    def stop(*_):
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"listening on port {server.server_address[1]}", flush=True)
    server.serve_forever()
    print(json.dumps(totals), flush=True)


if __name__ == "__main__":
    sys.exit(main())
