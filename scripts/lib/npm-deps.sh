# Sourced by scripts/setup.sh and scripts/build-web.sh.
#
# npm_ci_if_stale DIR: `npm ci` in DIR unless its node_modules was installed
# by this function from this very package-lock.json, on this platform, with
# this Node (a stamp in node_modules). A node_modules copied from elsewhere
# (a Mac host's into a Linux build, whatever its file times say) or
# installed from another lock file is installed again.
npm_ci_if_stale() {
  local dir=$1 want have
  want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1) $(uname -sm) node $(node --version)"
  have=$(cat "$dir/node_modules/.pipelab-installed" 2>/dev/null || true)
  [ "$want" = "$have" ] && return 0
  printf '[npm] npm ci in %s (%s)\n' "$dir" "${have:+installed for another lock file, platform or Node}${have:-not installed here yet}" >&2
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  printf '%s\n' "$want" > "$dir/node_modules/.pipelab-installed"
}
