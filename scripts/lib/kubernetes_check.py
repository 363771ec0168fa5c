"""Reads deploy/kubernetes/pipelab.yaml, validates every object against
Kubernetes' own OpenAPI schemas (kubernetes-validate bundles them: offline,
strict, so an unknown field fails too), and checks the fields many nodes
depend on, against deploy/haproxy/haproxy.cfg (no cluster runs here).

usage: kubernetes_check.py MANIFEST HAPROXY_CFG
"""

import copy
import re
import sys

import kubernetes_validate
import yaml

# The oldest release the manifest is meant for, and the newest the package knows.
VERSIONS = ["1.29", kubernetes_validate.latest_version()]

manifest, cfg = sys.argv[1], open(sys.argv[2]).read()
docs = [d for d in yaml.safe_load_all(open(manifest)) if d]
for d in docs:
    for v in VERSIONS:
        kubernetes_validate.validate(d, v, strict=True)


def refused(doc, why):
    """The schemas really are read: a broken copy of `doc` is refused."""
    try:
        kubernetes_validate.validate(doc, VERSIONS[0], strict=True)
    except kubernetes_validate.ValidationError:
        return
    raise AssertionError(f"kubernetes-validate passed {why}")

for d in docs:
    assert d.get("apiVersion") and d.get("kind") and d["metadata"].get("name"), d
by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
assert len(by) == len(docs), "two objects of one kind and name"

sts = by[("StatefulSet", "pipelab")]
svc = by[("Service", sts["spec"]["serviceName"])]
assert svc["spec"]["clusterIP"] == "None", "the StatefulSet's Service is headless (pod names resolve)"
assert svc["spec"].get("publishNotReadyAddresses") is True, "a draining pod keeps its name"
labels = sts["spec"]["template"]["metadata"]["labels"]
assert sts["spec"]["selector"]["matchLabels"].items() <= labels.items()
assert svc["spec"]["selector"].items() <= labels.items()
pod = sts["spec"]["template"]["spec"]
(c,) = pod["containers"]
env = {e["name"]: e for e in c["env"]}
assert env["PIPELAB_NODE_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name", "the node id is the pod's name"
grace_ms = int(env["PIPELAB_SHUTDOWN_GRACE_MS"]["value"])
assert pod["terminationGracePeriodSeconds"] * 1000 >= grace_ms + 10_000, "the pod outlives the drain, with time to save its visitors"
assert c["readinessProbe"]["httpGet"]["path"] == "/readyz" and c["livenessProbe"]["httpGet"]["path"] == "/healthz"
assert c["readinessProbe"]["periodSeconds"] * c["readinessProbe"]["failureThreshold"] <= 2, "out of the Service within 2 s of a drain"
assert "--sandbox" in c["args"] and "--trust-forwarded-for" in c["args"], c["args"]
state_dir = env["PIPELAB_SANDBOX_STATE_DIR"]["value"]
mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
claims = {t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]}
assert any(mounts.get(name) == state_dir for name in claims), "the state directory is the pod's own volume"
port = next(p["containerPort"] for p in c["ports"] if p["name"] == "http")
assert svc["spec"]["ports"][0]["port"] == port

# Memory from the measured 2.37 MiB private per active visitor's redis-server
# (docs/scale.md, bench/sandbox_node.py): the request holds the most active
# visitors and the spares, and so does the sandbox's budget (half the limit).
def gib(q):
    units = {"Gi": 2**30, "Mi": 2**20}
    return int(q[:-2]) * units[q[-2:]] / 2**30


PER_VISITOR_GIB = 2.37 / 1024
visitors = int(env["PIPELAB_SANDBOX_MAX_VISITORS"]["value"]) + int(env["PIPELAB_SANDBOX_SPARES"]["value"])
need = visitors * PER_VISITOR_GIB + 0.05
request, limit = gib(c["resources"]["requests"]["memory"]), gib(c["resources"]["limits"]["memory"])
assert request >= need and limit / 2 >= need - 0.05, (need, request, limit)

pdb = by[("PodDisruptionBudget", "pipelab")]
assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items() and pdb["spec"]["maxUnavailable"] == 1

# HAProxy's servers are the StatefulSet's pods, by name, at their headless names.
servers = re.findall(r'^\s*server (\S+) "\$\{PIPELAB_\d+-([^}]+)\}"', cfg, re.M)
names = [f"{sts['metadata']['name']}-{i}" for i in range(sts["spec"]["replicas"])]
assert [s for s, _ in servers] == names, (servers, names)
assert [a for _, a in servers] == [f"{n}.{svc['metadata']['name']}:{port}" for n in names], servers
for n in names:
    assert f"use-server {n} if {{ var(txn.node) -m str {n} }}" in cfg, n
bal = by[("Deployment", "pipelab-balancer")]
vol = bal["spec"]["template"]["spec"]["volumes"][0]
assert vol["configMap"]["name"] == "pipelab-haproxy"
assert bal["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] == "/usr/local/etc/haproxy"
front = by[("Service", "pipelab-balancer")]
assert front["spec"]["selector"].items() <= bal["spec"]["template"]["metadata"]["labels"].items()
assert "sessionAffinity" not in front["spec"] and "sessionAffinity" not in svc["spec"], "never client-IP affinity"
broken = copy.deepcopy(sts)
broken["spec"]["template"]["spec"]["terminationGracePeriodSecond"] = 40
refused(broken, "a misspelt field")
broken = copy.deepcopy(sts)
broken["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["periodSeconds"] = "2"
refused(broken, "a string for an integer")
broken = copy.deepcopy(pdb)
broken["spec"]["maxUnavailable"] = [1]
refused(broken, "a list for an int-or-string")
print(f"nodes: kubernetes: {len(docs)} objects valid against the schemas of Kubernetes {' and '.join(VERSIONS)} (kubernetes-validate {kubernetes_validate.version.__version__}, strict; a misspelt field and two wrong types refused); {len(names)} pods named as HAProxy's servers; grace {grace_ms} ms within {pod['terminationGracePeriodSeconds']} s; "
      f"memory {request:g} GiB requested, {limit / 2:g} GiB the sandbox's budget, for {visitors} redis-servers of {PER_VISITOR_GIB * 1024:.2f} MiB ({need:.2f} GiB)")
