#!/usr/bin/env bash
# Campaign (not a test of the default run): KILLS rounds of kill -9 of a
# master of a real 3-master + 3-replica Redis Cluster (node timeout 1 s,
# `cluster-require-full-coverage no`) in the middle of a pipeline of INCR
# ledger keys (6,000 INCRs, batch size 20, simulated RTT 30 ms), started and
# checked by the `campaign` test of engine/tests/cluster_failover.rs:
#
# - misreported: a result that Redis's data contradicts, read back after
#   the failover (an `ok` whose reply is not 1 or whose key did not run
#   once, a `not_sent` that ran, an `unknown` that ran twice, an error
#   reply, a surviving master's command not `ok`); must be 0;
# - acknowledged writes lost: `ok` from the killed master, absent after the
#   failover (replication is asynchronous; docs/cluster.md);
# - recovery: from the kill to the first batch over all 16,384 slots that
#   is all `ok`, batches sent every 20 ms from the kill; promotion: from the
#   kill to the replica's ROLE saying master.
#
# The killed node is restarted after each round and rejoins as a replica.
#
#   bench/cluster_failover.sh            # 100 kills
#   KILLS=20 bench/cluster_failover.sh
#
# Needs: redis-server, redis-cli. Prints the CAMPAIGN lines (bench/README.md
# holds the figures).
set -euo pipefail
cd "$(dirname "$0")/.."
export KILLS=${KILLS:-100}
cargo test --release -q -p pipelab-engine --test cluster_failover -- --ignored --exact campaign --nocapture 2>&1 | tee /dev/stderr | grep '^CAMPAIGN'
