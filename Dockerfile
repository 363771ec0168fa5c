# pipelab: a self-hosted Redis pipelining playground, REST API and CLI.
#
# The build steps live in scripts/ (build-rust.sh, build-web.sh), the same
# scripts CI runs outside Docker (scripts/test-deploy.sh), so what is tested
# is what the image builds.
#
#   docker build -t pipelab .
#   docker run -p 8080:8080 pipelab                     # public sandbox, its own redis-server
#   docker run -p 8080:8080 -e PIPELAB_TOKENS=secret -e REDIS_URL=redis://host:6379 pipelab   # team API
#
# Safe by default on 0.0.0.0: without a token or a REDIS_URL the image runs
# the sandbox (scripts/docker-entrypoint.sh; docs/deploy.md).
# The build context is what .dockerignore leaves (scripts/lib/docker_context.py).
# scripts/test-image.sh builds this file and runs the image in containers;
# docs/deploy.md has its size, build times and what it writes where.
# With podman or buildah, build with `--format docker`: the OCI format has
# no HEALTHCHECK.

# The base images, as build arguments so that a build may name others
# (a mirror, or the local stand-ins scripts/test-image.sh makes).
ARG RUST_IMAGE=rust:1.95-bookworm
ARG NODE_IMAGE=node:20-bookworm-slim
ARG DEBIAN_IMAGE=debian:bookworm-slim


# --- Rust stage: the pipelab binary and the wasm module --------------------
FROM ${RUST_IMAGE} AS rust
# The tools first, in layers the source does not invalidate: the wasm32
# target, wasm-bindgen-cli at the version Cargo.lock pins (compiled: about
# 2 min) and wasm-opt. No redis-server: building needs none.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends binaryen \
 && rm -rf /var/lib/apt/lists/*
COPY scripts/setup.sh /src/scripts/setup.sh
RUN PIPELAB_SKIP_REDIS=1 /src/scripts/setup.sh --run
WORKDIR /src
COPY . .
# Cargo's registry and target directory are cache mounts: after a change to
# one crate, only it and the crates above it compile again.
RUN --mount=type=cache,id=pipelab-cargo-registry,target=/usr/local/cargo/registry \
    --mount=type=cache,id=pipelab-target,target=/src/target \
    PIPELAB_SKIP_REDIS=1 scripts/build-rust.sh \
 && cp target/release/pipelab /usr/local/bin/pipelab

# --- Node stage: the web playground ----------------------------------------
FROM ${NODE_IMAGE} AS web
WORKDIR /src
# The npm packages first: they change with the lock file only.
COPY web/package.json web/package-lock.json web/
COPY scripts/lib/npm-deps.sh scripts/lib/npm-deps.sh
RUN bash -c 'source scripts/lib/npm-deps.sh && npm_ci_if_stale web'
COPY scripts/ scripts/
COPY web/ web/
COPY --from=rust /src/web/src/wasm-pkg/ web/src/wasm-pkg/
COPY --from=rust /src/web/src/api/openapi.json web/src/api/openapi.json
RUN PIPELAB_SKIP_WASM=1 scripts/build-web.sh

# --- Runtime: the binary, the built page, and redis-server ------------------
FROM ${DEBIAN_IMAGE}
# ca-certificates follows Debian's security updates: not pinned on purpose.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends redis-server=5:7.0.* ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin pipelab \
 && install -d -o 10001 -g 10001 -m 0700 /var/lib/pipelab
WORKDIR /app
COPY --from=rust /usr/local/bin/pipelab /usr/local/bin/pipelab
COPY --from=web /src/web/dist/ /app/web/dist/
COPY scripts/docker-entrypoint.sh /usr/local/bin/pipelab-entrypoint
USER 10001
# The sandbox keeps hibernated visitors' keys in /var/lib/pipelab (a
# volume, so they outlive the container); nothing else is written but /tmp.
ENV PIPELAB_LISTEN=0.0.0.0:8080 \
    PIPELAB_WEB_DIR=/app/web/dist \
    PIPELAB_LOG_FORMAT=json \
    PIPELAB_SANDBOX_STATE_DIR=/var/lib/pipelab
VOLUME /var/lib/pipelab
EXPOSE 8080
# `pipelab healthcheck` asks the address PIPELAB_LISTEN names.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["pipelab", "healthcheck", "--path", "/readyz"]
# `pipelab serve` with the sandbox on unless a token or a Redis is given.
ENTRYPOINT ["pipelab-entrypoint"]
CMD ["serve"]
