#!/usr/bin/env bash
# Many nodes behind real balancers, on the loopback: three `pipelab serve`
# nodes, each with its own --node-id, behind deploy/haproxy/haproxy.cfg
# (HAProxy 2.6, Debian's) and deploy/nginx/pipelab.conf (nginx OSS), both
# checked first (`haproxy -c`, `nginx -t`); the Kubernetes manifest
# validated against Kubernetes' schemas (kubernetes-validate, offline) and
# its fields checked. What the nodes must do through them (sessions,
# live batches, a drain, a rolling restart and a kill -9 under load):
# scripts/lib/nodes_check.py. PIPELAB_BIN: the binary to run (default: a
# debug build); PIPELAB_NODES_VISITORS: sandbox visitors (default 300),
# PIPELAB_NODES_EVERY: seconds between a visitor's requests under load
# (1.5), PIPELAB_NODES_SPARES: each node's --sandbox-spares (50: room for
# a lost node's visitors); PIPELAB_NODES_KEEP=1 keeps the logs.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}; [[ $target = /* ]] || target=$PWD/$target

missing=()
command -v haproxy >/dev/null || missing+=(haproxy)
command -v nginx >/dev/null || missing+=(nginx-light)
command -v redis-server >/dev/null || missing+=(redis-server)
if ((${#missing[@]})); then
  sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
fi
python3 -c 'import yaml' 2>/dev/null || python3 -m pip install --quiet pyyaml
# Kubernetes' own OpenAPI schemas, bundled: the manifest is validated offline.
KUBERNETES_VALIDATE=1.37.0
python3 -c "import importlib.metadata as m, sys; sys.exit(m.version('kubernetes-validate') != '$KUBERNETES_VALIDATE')" 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check "kubernetes-validate==$KUBERNETES_VALIDATE"

python3 scripts/lib/kubernetes_check.py deploy/kubernetes/pipelab.yaml deploy/haproxy/haproxy.cfg

bin=${PIPELAB_BIN:-}
if [ -z "$bin" ]; then
  cargo build --quiet -p pipelab
  bin="$target/debug/pipelab"
fi
python3 scripts/lib/nodes_check.py "$bin"
