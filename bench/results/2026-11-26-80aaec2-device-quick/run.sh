#!/bin/bash
# Two quick seeds runs at one commit on the device, the second compared with the first.
set -u
OUT=${1:?}
D=target/device2
W=/tmp/seeds-dev
mkdir -p $W
{ echo "nproc $(nproc)"; uptime; which go java mvn elixir fd fdfind find; } > "$OUT/machine.txt" 2>&1
s=$(date +%s)
$D/ito-bench seeds --quick --peers built --ito-find $D/ito-find --out $W/q1 > $W/q1.log 2>&1
echo "q1 exit $? $(( $(date +%s)-s )) s" >> "$OUT/machine.txt"
s=$(date +%s)
$D/ito-bench seeds --quick --peers built --ito-find $D/ito-find --out $W/q2 --compare $W/q1/results.jsonl > $W/q2.log 2>&1
echo "q2 exit $? $(( $(date +%s)-s )) s" >> "$OUT/machine.txt"
uptime >> "$OUT/machine.txt"
tar czf "$OUT/quick-runs.tgz" -C $W q1/report.md q1/results.jsonl q1/steps.jsonl q2/report.md q2/results.jsonl q2/steps.jsonl q1.log q2.log
