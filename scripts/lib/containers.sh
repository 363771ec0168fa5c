# shellcheck shell=bash
# Sourced by scripts/test-image.sh and bench/image_build.sh: podman set up
# for machines of this kind, and local stand-ins for the Docker Hub images
# the Dockerfile and docker-compose.yml name (Docker Hub is not reachable
# from them).
#
# podman gets a configuration of its own through CONTAINERS_CONF and
# CONTAINERS_STORAGE_CONF, never /etc: runc (crun fails on hybrid cgroups),
# cgroupfs (no systemd session), rlimits it may set without
# CAP_SYS_RESOURCE, and an image store under ~/.cache, so that the
# stand-ins may carry the official names without touching the host's
# images, and stay cached between runs.
#
# What the stand-ins differ in from the official images (the same Debian 12
# underneath; each is made once, then kept until this file changes):
# - debian:bookworm-slim: `debootstrap --variant=minbase`, without docs,
#   man pages and locales as the slim image; the host's CA bundle added
#   (downloads here go through a TLS proxy whose CA only the host trusts);
# - rust:1.95-bookworm: build-essential, git, curl and pkg-config instead of
#   buildpack-deps, and the host's own Rust toolchain (with its wasm32
#   target) instead of one rustup downloads;
# - node:20-bookworm-slim: the host's Node 20 binary and npm, and
#   NODE_EXTRA_CA_CERTS for the proxy;
# - redis:7.0 and valkey/valkey:8.1: Debian's Redis 7.0.15 and the Valkey
#   8.1 the server matrix fetches (scripts/lib/servers.sh), protected mode
#   off as in the official images.

CONTAINERS_HOME=${PIPELAB_CONTAINERS_HOME:-$HOME/.cache/pipelab/containers}
CONTAINERS_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RUST_TOOLCHAIN=1.95.0
# The stand-ins are made again when this file changes.
STAND_IN_HASH=$(sha256sum "$CONTAINERS_LIB/containers.sh" | cut -c1-16)

clog() { printf '[containers] %s\n' "$*" >&2; }

# Installs podman and its parts when missing, and points podman at a
# configuration of its own.
containers_setup() {
  local missing=() p
  for p in podman buildah debootstrap runc netavark aardvark-dns iptables uidmap slirp4netns fuse-overlayfs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    clog "apt-get install ${missing[*]}"
    local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq
    # aardvark-dns is only a Recommends of netavark (containers of one
    # compose project find each other by service name through it), and
    # netavark sets up every bridge network with iptables, which nothing
    # depends on.
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  # podman-compose from PyPI: Debian's 1.0.3 ignores depends_on conditions.
  if ! podman-compose version 2>/dev/null | grep -q "podman-compose version 1.5.0"; then
    clog "pip install podman-compose 1.5.0"
    python3 -m pip install -q --disable-pip-version-check podman-compose==1.5.0
  fi
  mkdir -p "$CONTAINERS_HOME"
  cat > "$CONTAINERS_HOME/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
  cat > "$CONTAINERS_HOME/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$CONTAINERS_HOME/storage"
runroot = "/run/pipelab-containers"
EOF
  export CONTAINERS_CONF=$CONTAINERS_HOME/containers.conf CONTAINERS_STORAGE_CONF=$CONTAINERS_HOME/storage.conf
}

# stand_in_current IMAGE: whether IMAGE exists and was made by this file as it is.
stand_in_current() {
  [ "$(podman image inspect --format '{{ index .Labels "pipelab.stand-in" }}' "$1" 2>/dev/null)" = "$STAND_IN_HASH" ]
}

# stand_in_build IMAGE CONTEXT: builds CONTEXT/Containerfile as IMAGE, labelled.
stand_in_build() {
  podman build -q --format docker --label "pipelab.stand-in=$STAND_IN_HASH" -t "$1" "$2" >/dev/null
}

# Makes every stand-in that is missing or out of date (about 3 min the first
# time, a second after).
stand_in_images() {
  local t0=$SECONDS work
  work=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" RETURN
  if ! stand_in_current docker.io/library/debian:bookworm-slim; then
    clog "debian:bookworm-slim: debootstrap --variant=minbase bookworm (about a minute)"
    debootstrap --variant=minbase bookworm "$work/root" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 \
      || { tail -20 "$work/debootstrap.log" >&2; return 1; }
    cat > "$work/root/etc/apt/sources.list" <<'EOF'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
    # As the slim image: packages installed later leave these out too.
    cat > "$work/root/etc/dpkg/dpkg.cfg.d/slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/info/*
EOF
    # As the official image: apt keeps no package cache in a layer.
    cat > "$work/root/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
    rm -rf "$work"/root/var/cache/apt/*.bin "$work"/root/var/cache/apt/archives/*.deb "$work"/root/var/lib/apt/lists/* "$work"/root/usr/share/man/* "$work"/root/usr/share/locale/* "$work"/root/usr/share/info/*
    find "$work/root/usr/share/doc" -type f ! -name copyright -delete
    mkdir -p "$work/root/usr/local/share/ca-certificates"
    cp /etc/ssl/certs/ca-certificates.crt "$work/root/usr/local/share/ca-certificates/host.crt"
    mkdir -p "$work/import"
    tar -C "$work/root" -c . | podman import -q --change 'CMD ["bash"]' - pipelab-stand-in/debian-root >/dev/null
    printf 'FROM pipelab-stand-in/debian-root\n' > "$work/import/Containerfile"
    stand_in_build docker.io/library/debian:bookworm-slim "$work/import"
    podman rmi -f pipelab-stand-in/debian-root >/dev/null
    rm -rf "$work/root"
  fi
  if ! stand_in_current docker.io/library/rust:1.95-bookworm; then
    clog "rust:1.95-bookworm: build-essential and the host's Rust $RUST_TOOLCHAIN"
    local toolchain
    # The toolchain of that version, else the default one (said in the log).
    toolchain=$(rustc +"$RUST_TOOLCHAIN" --print sysroot 2>/dev/null) || {
      toolchain=$(rustc --print sysroot)
      clog "no Rust $RUST_TOOLCHAIN toolchain here: the stand-in gets the default one, $(rustc --version)"
    }
    mkdir -p "$work/rust"
    # Hard links: the toolchain is 1.5 GB, and the context is read once.
    cp -al "$toolchain" "$work/rust/toolchain" 2>/dev/null || cp -a "$toolchain" "$work/rust/toolchain"
    rm -rf "$work/rust/toolchain/share/doc"
    cp "$(command -v rustup)" "$work/rust/rustup"
    cat > "$work/rust/Containerfile" <<EOF
FROM docker.io/library/debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends build-essential ca-certificates curl git pkg-config libssl-dev \\
 && rm -rf /var/lib/apt/lists/* && update-ca-certificates >/dev/null
ENV RUSTUP_HOME=/usr/local/rustup CARGO_HOME=/usr/local/cargo PATH=/usr/local/cargo/bin:\$PATH RUST_VERSION=$RUST_TOOLCHAIN
COPY toolchain /usr/local/rustup/toolchains/$RUST_TOOLCHAIN-x86_64-unknown-linux-gnu
COPY rustup /usr/local/cargo/bin/rustup
RUN printf 'version = "12"\ndefault_toolchain = "$RUST_TOOLCHAIN-x86_64-unknown-linux-gnu"\nprofile = "minimal"\nauto_self_update = "disable"\n' > /usr/local/rustup/settings.toml \\
 && for b in cargo rustc rustdoc; do ln -s rustup /usr/local/cargo/bin/\$b; done && chmod -R a+w /usr/local/cargo /usr/local/rustup \\
 && cargo --version && rustup target list --installed | grep -qx wasm32-unknown-unknown
EOF
    stand_in_build docker.io/library/rust:1.95-bookworm "$work/rust"
  fi
  if ! stand_in_current docker.io/library/node:20-bookworm-slim; then
    clog "node:20-bookworm-slim: the host's Node $(node --version)"
    mkdir -p "$work/node"
    cp "$(readlink -f "$(command -v node)")" "$work/node/node"
    cp -a "$(dirname "$(readlink -f "$(command -v npm)")")/.." "$work/node/npm"
    cat > "$work/node/Containerfile" <<'EOF'
FROM docker.io/library/debian:bookworm-slim
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && node --version && npm --version
ENV NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/host.crt
CMD ["node"]
EOF
    stand_in_build docker.io/library/node:20-bookworm-slim "$work/node"
  fi
  # wrapper DIR NAME: DIR/NAME runs the real server with protected mode
  # off, as the official images build it (a container's port is reached
  # from other containers, never from its own loopback).
  wrapper() { printf '#!/bin/sh\nexec /usr/local/lib/server/%s "$@" --protected-mode no\n' "$2" > "$1/$2"; chmod +x "$1/$2"; }
  if ! stand_in_current docker.io/library/redis:7.0; then
    clog "redis:7.0: Debian's redis-server"
    mkdir -p "$work/redis"
    wrapper "$work/redis" redis-server
    cat > "$work/redis/Containerfile" <<'EOF'
FROM docker.io/library/debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends redis-server redis-tools && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /usr/local/lib/server /data && ln -s /usr/bin/redis-server /usr/local/lib/server/redis-server
COPY redis-server /usr/local/bin/redis-server
WORKDIR /data
CMD ["redis-server"]
EOF
    stand_in_build docker.io/library/redis:7.0 "$work/redis"
  fi
  if ! stand_in_current docker.io/valkey/valkey:8.1; then
    clog "valkey/valkey:8.1: the server matrix's Valkey 8.1"
    local valkey
    valkey=$(dirname "$("$CONTAINERS_LIB/servers.sh" path valkey-8.1)")/bin
    mkdir -p "$work/valkey"
    mkdir -p "$work/valkey/server"
    cp "$valkey/valkey-server" "$valkey/valkey-cli" "$work/valkey/server/"
    wrapper "$work/valkey" valkey-server
    cat > "$work/valkey/Containerfile" <<'EOF'
FROM docker.io/library/debian:bookworm-slim
COPY server/ /usr/local/lib/server/
COPY valkey-server /usr/local/bin/valkey-server
RUN ln -s /usr/local/lib/server/valkey-cli /usr/local/bin/valkey-cli && mkdir /data
WORKDIR /data
CMD ["valkey-server"]
EOF
    stand_in_build docker.io/valkey/valkey:8.1 "$work/valkey"
  fi
  clog "stand-in base images ready in $((SECONDS - t0)) s"
}
