"""Every pipelab service of docker-compose.yml, started as its container
starts it: scripts/docker-entrypoint.sh with that service's environment and
the binary the image holds, without a Docker engine. The compose hosts are
replaced by real servers on free ports on 127.0.0.1 (`redis` by a
redis-server, `valkey` by Valkey 8.1 from scripts/lib/servers.sh,
`redis-node-1..3` by a 3-master cluster from scripts/lib/cluster.sh); `${VAR:-default}` takes its default and
`${VAR:?…}` and a variable passed through from the shell (`- VAR`) a
test value. Each service is then asked what it is: open or
behind a token, sandboxed or not, on which Redis; and the cluster service
spreads its keys over the masters (its keys not renamed into one slot).

Run by scripts/test-entrypoint.sh: python3 scripts/lib/compose_env.py BIN.
Needs PyYAML (scripts/setup.sh), redis-server, redis-cli.
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import yaml

BIN = sys.argv[1]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Values for `${VAR:?…}` and `- VAR`: what whoever runs the profile sets.
REQUIRED = {"PIPELAB_TOKENS": "compose-team-token"}


def environment(service):
    """A service's environment, a map or a list of `K=V` and `K` (taken from the shell)."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        pairs = [e.split("=", 1) for e in env]
        env = {p[0]: p[1] for p in pairs if len(p) == 2}
        env.update({p[0]: REQUIRED[p[0]] for p in pairs if len(p) == 1 and p[0] in REQUIRED})
    return {k: interpolate(v) for k, v in env.items()}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def interpolate(value):
    """Compose's `${VAR:-default}` and `${VAR:?message}`, as a shell without VAR set."""
    def one(m):
        name, op, arg = m.group(1), m.group(2), m.group(3)
        if op == ":-":
            return arg
        if op == ":?":
            return REQUIRED[name]
        raise SystemExit(f"compose_env: no test value for ${{{name}}}")
    return re.sub(r"\$\{(\w+)(:-|:\?)?([^}]*)\}", one, str(value))


class Server:
    """The entrypoint with `env` (plus the test's own listen address), until stop()."""

    def __init__(self, env):
        self.port = free_port()
        self.log = tempfile.TemporaryFile()
        full = {k: v for k, v in os.environ.items() if not k.startswith("PIPELAB_") and k != "REDIS_URL"}
        full.update(env)
        full.update(PIPELAB_BIN=BIN, PIPELAB_LISTEN=f"0.0.0.0:{self.port}", PIPELAB_WEB_DIR="/nonexistent")
        self.proc = subprocess.Popen([os.path.join(ROOT, "scripts/docker-entrypoint.sh"), "serve"], env=full, stdout=self.log, stderr=subprocess.STDOUT)
        self.host = env.get("PIPELAB_ALLOWED_HOSTS", "127.0.0.1").split(",")[0]
        for _ in range(150):
            if self.proc.poll() is not None:
                raise SystemExit(f"compose_env: the entrypoint exited {self.proc.returncode}: {self.output()}")
            try:
                if self.request("GET", "/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise SystemExit(f"compose_env: not ready after 15 s: {self.output()}")

    def output(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-2000:]

    def request(self, method, path, body=None, token=None):
        """(status, parsed JSON or text, headers); Host as the service's allowed host."""
        headers = {"host": f"{self.host}:{self.port}", "content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, headers=headers, method=method)
        try:
            res = urllib.request.urlopen(req, timeout=10)
            status, text, hdrs = res.status, res.read().decode(), res.headers
        except urllib.error.HTTPError as e:
            status, text, hdrs = e.code, e.read().decode(), e.headers
        try:
            return status, json.loads(text), hdrs
        except ValueError:
            return status, text, hdrs

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def redis_server(binary="redis-server"):
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
    for _ in range(100):
        if subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).stdout.strip() == b"PONG":
            return proc, port
        time.sleep(0.1)
    raise SystemExit("compose_env: redis-server did not start")


def cluster():
    """scripts/lib/cluster.sh: (process, ["127.0.0.1:P1", …]); it stops when its stdin closes."""
    proc = subprocess.Popen(["bash", os.path.join(ROOT, "scripts/lib/cluster.sh")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if line.startswith("ready "):
            return proc, line.split()[1:]
    raise SystemExit("compose_env: the cluster did not start")


def main():
    compose = yaml.safe_load(open(os.path.join(ROOT, "docker-compose.yml")))
    services = {name: s for name, s in compose["services"].items() if s.get("image") == "pipelab:latest"}
    assert sorted(services) == ["pipelab", "pipelab-cluster", "pipelab-valkey", "playground", "team-api"], sorted(services)
    single, single_port = redis_server()
    valkey_dir = subprocess.run([os.path.join(ROOT, "scripts/lib/servers.sh"), "path", "valkey-8.1"], capture_output=True, text=True, check=True).stdout.strip()
    valkey, valkey_port = redis_server(os.path.join(valkey_dir, "redis-server"))
    nodes_proc, nodes = cluster()
    hosts = {"redis:6379": f"127.0.0.1:{single_port}", "valkey:6379": f"127.0.0.1:{valkey_port}"}
    hosts.update({f"redis-node-{i + 1}:7000": addr for i, addr in enumerate(nodes)})
    seen = []
    try:
        for name, service in services.items():
            env = environment(service)
            if "REDIS_URL" in env:
                for host, real in hosts.items():
                    env["REDIS_URL"] = env["REDIS_URL"].replace(host, real)
            server = Server(env)
            try:
                check(name, env, server, nodes)
            except AssertionError as e:
                raise SystemExit(f"compose_env: service {name} ({', '.join(service.get('profiles', ['default']))}): {e}\n{server.output()}")
            finally:
                server.stop()
            seen.append(name)
    finally:
        nodes_proc.stdin.close()
        nodes_proc.wait(timeout=30)
        single.terminate()
        valkey.terminate()
    print(f"compose_env: every pipelab service of docker-compose.yml as its entrypoint starts it: {', '.join(seen)}")


def check(name, env, server, nodes):
    token = env.get("PIPELAB_TOKENS", "").split(",")[0] or None
    if token:
        status, _, _ = server.request("GET", "/api/v1/info")
        assert status == 401, f"no token: {status}, not 401"
    status, info, _ = server.request("GET", "/api/v1/info", token=token)
    assert status == 200, f"/api/v1/info: {status} {info}"
    sandboxed = "sandbox" in info
    expected = {"pipelab": False, "playground": True, "team-api": False, "pipelab-cluster": False, "pipelab-valkey": False}[name]
    assert sandboxed == expected, f"sandbox {'on' if sandboxed else 'off'}, expected {'on' if expected else 'off'}"
    source = "configured" if "REDIS_URL" in env else "sandbox" if sandboxed else "embedded"
    assert info["redis"]["source"] == source, f"Redis from {info['redis']['source']}, expected {source}: {info['redis']}"
    keys = [f"compose:{i}" for i in range(8)]
    status, out, _ = server.request("POST", "/api/v1/batch", {"commands": [["SET", k, "x"] for k in keys], "mode": "pipeline"}, token=token)
    assert status == 200 and out["summary"]["ok"] == 8, f"8 SETs: {status} {out}"
    if name == "pipelab-valkey":
        assert info["redis"]["server"] == "valkey" and info["redis"]["mode"] == "standalone", info["redis"]
    if name == "pipelab-cluster":
        assert info["redis"]["mode"] == "cluster", info["redis"]
        per_node, names = [], []
        for addr in nodes:
            host, port = addr.split(":")
            found = subprocess.run(["redis-cli", "-h", host, "-p", port, "--raw", "keys", "*compose:*"], capture_output=True, text=True).stdout.split()
            per_node.append(len(found))
            names += found
        assert sorted(names) == keys, f"the keys as the batch named them, no namespace: {names}"
        assert max(per_node) < 8, f"every key on one master {per_node}: renamed into one slot?"


main()
