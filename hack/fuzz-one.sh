#!/usr/bin/env bash
# Run one fuzzer for a duration (make fuzz):
#
#   hack/fuzz-one.sh TESTBIN PKGDIR FUZZER FUZZTIME CACHEDIR
#
# TESTBIN is the package's fuzz-instrumented test binary (go test -c -fuzz),
# run in PKGDIR so that a failing input lands in PKGDIR/testdata/fuzz/FUZZER/.
#
# One failure is not a finding: with a duration as -test.fuzztime, Go 1.26's
# fuzz coordinator can end a run that found nothing with a bare "context
# deadline exceeded" when its deadline races a worker's last input
# (golang/go#75804, fixed in Go 1.27; CI went red on it once, FuzzLoad, no
# input written). A run that fails that way (that line last, and no new
# file under testdata/fuzz/FUZZER) is said so and run once more; any other
# failure, or that one twice, fails.
set -uo pipefail
bin=$1 dir=$2 name=$3 time=$4 cache=$5
corpus="$dir/testdata/fuzz/$name"

count() { find "$corpus" -type f 2>/dev/null | wc -l; }

for attempt in 1 2; do
  before=$(count)
  log=$(mktemp)
  (cd "$dir" && "$bin" -test.run '^$' -test.fuzz "^$name\$" -test.fuzztime "$time" \
    -test.fuzzminimizetime 5s -test.fuzzcachedir "$cache") 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  if ((rc == 0)); then
    rm -f "$log"
    exit 0
  fi
  # The race's signature: the reason line right after "--- FAIL: NAME".
  reason=$(grep -A1 -- "^--- FAIL: $name " "$log" | tail -n 1 | sed 's/^[[:space:]]*//')
  rm -f "$log"
  if ((attempt == 1)) && [[ $reason == "context deadline exceeded" ]] && (($(count) == before)); then
    echo "fuzz: $name ended with Go 1.26's fuzz-coordinator race (golang/go#75804: \"context deadline exceeded\", no failing input written); running it once more"
    continue
  fi
  exit "$rc"
done
exit 1
