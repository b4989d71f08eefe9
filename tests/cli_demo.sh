#!/bin/sh
# The demo's own command (tools/demo.sh) on its own jobs file, cut to a few series and training
# steps, into a folder that does not exist yet: what a fresh clone's `./dev.sh demo` meets.
#   tests/cli_demo.sh SHOAL PYTHON SOURCE_DIR WORK_DIR
set -eu
shoal=$1 python=$2 src=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
"$python" - "$src/examples/forecast" "$work/jobs.jsonl" <<'PY'
import json, os, sys
folder, out = sys.argv[1], sys.argv[2]
with open(os.path.join(folder, "demo_jobs.jsonl")) as f, open(out, "w") as o:
    for line in f:
        if not line.strip():
            continue
        job = json.loads(line)
        for key in ("data", "test"):
            job[key] = os.path.join(folder, job[key])
        job["max_series"] = 3
        job["config"]["max_steps"] = 20
        o.write(json.dumps(job) + "\n")
PY
sh "$src/tools/demo.sh" "$shoal" "$work/out" "$work/jobs.jsonl"
test "$(wc -l < "$work/out/forecasts.csv")" -eq $((1 + 3 * 18))
grep -q '"fits_per_s"' "$work/out/metrics.json"
echo demo-ok
