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

# --- Rust stage: the pipelab binary and the wasm module --------------------
FROM rust:1.95-bookworm AS rust
WORKDIR /src
COPY . .
# No redis-server in the build stage: it is not needed to build.
RUN PIPELAB_SKIP_REDIS=1 scripts/build-rust.sh

# --- Node stage: the web playground ----------------------------------------
FROM node:20-bookworm-slim AS web
WORKDIR /src
COPY scripts/ scripts/
COPY web/ web/
COPY --from=rust /src/web/src/wasm-pkg/ web/src/wasm-pkg/
COPY --from=rust /src/web/src/api/openapi.json web/src/api/openapi.json
RUN PIPELAB_SKIP_WASM=1 scripts/build-web.sh

# --- Runtime: the binary, the built page, and redis-server for standalone use
FROM debian:bookworm-slim
# ca-certificates follows Debian's security updates: not pinned on purpose.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends redis-server=5:7.0.* ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin pipelab
WORKDIR /app
COPY --from=rust /src/target/release/pipelab /usr/local/bin/pipelab
COPY --from=web /src/web/dist/ /app/web/dist/
COPY scripts/docker-entrypoint.sh /usr/local/bin/pipelab-entrypoint
USER 10001
ENV PIPELAB_LISTEN=0.0.0.0:8080 \
    PIPELAB_WEB_DIR=/app/web/dist \
    PIPELAB_LOG_FORMAT=json
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["pipelab", "healthcheck"]
# `pipelab serve` with the sandbox on unless a token or a Redis is given.
ENTRYPOINT ["pipelab-entrypoint"]
CMD ["serve"]
