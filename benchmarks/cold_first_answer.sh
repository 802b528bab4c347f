#!/bin/bash
# Seconds from nothing to the first answer, on a fresh clone with empty caches (a HOME of its own: no pip, wheel or
# model cache), for `make serve` (until /status says "Up!", then one agentic question over HTTP) or `make run` (until
# the line after its first answer; the full-stack training after it is stopped). Report: benchmarks/reports/setup.md.
#
#   bash benchmarks/cold_first_answer.sh serve|run [REPO] [WORKDIR]
set -u
what=${1:?serve or run}; repo=${2:-$(git rev-parse --show-toplevel)}; work=${3:-/tmp/cold_first_answer}
port=18501
rm -rf "$work" && mkdir -p "$work/home"
git clone -q "$repo" "$work/clone" && cd "$work/clone" || exit 1
export HOME=$work/home API_PORT=$port ENV_FILE=
start=$(date +%s)
echo "commit $(git rev-parse --short HEAD); make $what; started $(date -u +%T)"
setsid make "$what" > "$work/make.log" 2>&1 &
group=$!
for _ in $(seq 1 1800); do
  sleep 2
  if [ "$what" = serve ]; then curl -s -m 3 "localhost:$port/status" | grep -q '"Up' && break
  else grep -q "This answer used" "$work/make.log" && break; fi
  kill -0 $group 2>/dev/null || { echo "make $what ended early:"; tail -20 "$work/make.log"; exit 1; }
done
if [ "$what" = serve ]; then
  echo "/status Up after $(( $(date +%s) - start )) s"
  curl -s -m 900 "localhost:$port/agentic_rag/run" -H 'content-type: application/json' \
    -d '{"query": "公司收集我的个人信息需要我同意吗", "mode": "agentic"}' > "$work/answer.json"
  python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['result']; print(r['situation'], r['trace']['total_seconds'], 's', [c['key'] for c in r['citations']])" "$work/answer.json"
fi
echo "first answer after $(( $(date +%s) - start )) s"
grep -a "^\[setup\]\|^  [a-z].* s$" "$work/make.log"
kill -- -$group 2>/dev/null
