#!/bin/sh
# The Docker image's entrypoint: `pipelab "$@"`, with the image's safe default.
#
# The image listens on 0.0.0.0 (PIPELAB_LISTEN), where pipelab's protected
# mode refuses to serve with no token and no sandbox. So `pipelab serve` in
# the image runs the sandbox (a redis-server of their own for each
# visitor) unless a token is configured (PIPELAB_TOKENS,
# PIPELAB_TOKENS_FILE or PIPELAB_READONLY_TOKENS: a team API) or
# PIPELAB_SANDBOX is set either way (PIPELAB_SANDBOX=false with
# PIPELAB_ALLOW_UNAUTHENTICATED=true serves an open API, for a port
# published on the host's loopback only). Given a Redis of its own
# (REDIS_URL: a server, or a cluster's nodes) it never turns the sandbox on:
# the sandbox runs on the redis-server pipelab starts, so there protected
# mode asks for a token or an explicit choice.
# scripts/test-entrypoint.sh tests this file with the binary the image holds,
# and with the environment of every service of docker-compose.yml.
set -eu
if [ "$#" -eq 0 ] || [ "$1" = serve ]; then
  if [ -z "${PIPELAB_TOKENS:-}${PIPELAB_TOKENS_FILE:-}${PIPELAB_READONLY_TOKENS:-}${REDIS_URL:-}" ] && [ -z "${PIPELAB_SANDBOX+set}" ]; then
    PIPELAB_SANDBOX=true
    export PIPELAB_SANDBOX
  fi
fi
exec "${PIPELAB_BIN:-pipelab}" "$@"
