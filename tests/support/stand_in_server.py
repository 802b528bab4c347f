"""A stand-in for the real server, for the tests of `harness.server_process` and `harness.app_server`: a small
program found as ``interfaces.server_app`` (and as ``pipelines``, for ``serve`` through the command line) by way of
PYTHONPATH, which answers ``/status`` as the real server does and reports its command line and environment.

Usage::

    with ServerProcess({**stand_in_env(tmp_path), "FAKE_REPORT": "API_KEY"}) as server:
        httpx.get(f"{server.base_url}/status").json()["env"]    # {"API_KEY": None}
"""

import textwrap
from pathlib import Path

STAND_IN = textwrap.dedent('''
    """FAKE_MODE=ok deploys everything, partial only the chat pipeline, exit exits with 3 at once; /status reports
    the variables FAKE_REPORT names (comma-separated)."""
    import argparse, json, os, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer

    parser = argparse.ArgumentParser()
    parser.add_argument("serve", nargs="?")
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    args = parser.parse_args()
    mode = os.environ.get("FAKE_MODE", "ok")
    print(f"stand-in server ({mode}) on {args.host}:{args.port}", flush=True)
    if mode == "exit":
        print("error: the knowledge base is locked", flush=True)
        sys.exit(3)
    pipelines = ["agentic_rag", "index", "knowledge_bases"] if mode == "ok" else ["agentic_rag"]
    reported = [name for name in os.environ.get("FAKE_REPORT", "").split(",") if name]

    class Status(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            body = json.dumps({"pipelines": pipelines, "argv": sys.argv[1:], "module": __spec__.name,
                               "env": {name: os.environ.get(name) for name in reported}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    HTTPServer((args.host, args.port), Status).serve_forever()
''')


def stand_in_env(folder: Path) -> dict[str, str | None]:
    """Write the stand-in under ``folder``; the environment that makes `ServerProcess` start it."""
    root = folder / "stand_in"
    for package, module in (("interfaces", "server_app.py"), ("pipelines", "__main__.py")):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
        (root / package / module).write_text(STAND_IN)
    return {"PYTHONPATH": str(root), "PYTHONSAFEPATH": "1"}  # not the checkout's packages from the working folder
