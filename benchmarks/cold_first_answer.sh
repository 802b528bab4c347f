#!/bin/bash
# Seconds from nothing to the first answer, on a fresh clone with empty caches (a HOME of its own: no pip, wheel or
# model cache), for `make serve` (until /status lists the chat deployment as loaded, which answers while the other two
# load, then one agentic question over HTTP) or `make run` (until the line after its first answer; the full-stack
# training after it is stopped). Report: benchmarks/reports/setup.md.
#
#   bash benchmarks/cold_first_answer.sh serve|run [REPO] [WORKDIR]
#
# REUSE_VENV=/path/.venv: the packages come from that installed venv (linked into the clone) and the command is what
# the make target runs after its install step (`python -m pipelines serve|demo`): the project's own part, from empty
# model caches, without the pip and compile variance (tens of seconds between two cold installs).
#
# Every line of the command's output is stamped with the seconds since the start (make.log), so the phases of `run`
# can be set beside those of `serve` (`run` is stopped before it prints its phase summary); Python writes unbuffered.
set -u
what=${1:?serve or run}; repo=${2:-$(git rev-parse --show-toplevel)}; work=${3:-/tmp/cold_first_answer}
port=18501
rm -rf "$work" && mkdir -p "$work/home"
git clone -q "$repo" "$work/clone" && cd "$work/clone" || exit 1
export HOME=$work/home API_PORT=$port ENV_FILE=
start=$(date +%s.%N)
chat_loaded() {  # curl and grep only: a Python start every half second would take CPU from the server's prepare
  curl -s -m 3 "localhost:$port/status" | grep -q '"pipelines": *\[[^]]*"agentic_rag"'
}
since() { awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
echo "commit $(git rev-parse --short HEAD); make $what; started $(date -u +%T)"
if [ -n "${REUSE_VENV:-}" ]; then
  ln -s "$REUSE_VENV" .venv
  export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false HAYSTACK_TELEMETRY_ENABLED=False
  command=".venv/bin/python -m pipelines $([ "$what" = run ] && echo demo || echo serve)"
else
  command="make $what"
fi
export T0=$start PYTHONUNBUFFERED=1
stamp='perl -MTime::HiRes=time -ne '"'"'BEGIN { $| = 1 } printf "%7.2f %s", time - $ENV{T0}, $_'"'"
setsid bash -c "$command 2>&1 | $stamp" > "$work/make.log" &
group=$!
for _ in $(seq 1 3600); do
  sleep 0.5
  if [ "$what" = serve ]; then chat_loaded && break
  else grep -q "This answer used" "$work/make.log" && break; fi
  kill -0 $group 2>/dev/null || { echo "make $what ended early:"; tail -20 "$work/make.log"; exit 1; }
done
if [ "$what" = serve ]; then
  echo "chat deployment loaded after $(since) s"
  curl -s -m 900 "localhost:$port/agentic_rag/run" -H 'content-type: application/json' \
    -d '{"query": "公司收集我的个人信息需要我同意吗", "mode": "agentic"}' > "$work/answer.json"
  python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['result']; print(r['situation'], r['trace']['total_seconds'], 's', [c['key'] for c in r['citations']])" "$work/answer.json"
fi
echo "first answer after $(since) s"
# the timeline: set-up steps, the phases (serve prints their seconds; run is stopped before), the deployments, the answer
grep -a "^ *[0-9.]* \(\[setup\]\|  [a-z].* s$\|[a-zA-Z0-9 ]* ready: \|A quick relevance\|[0-9]* documents in\|问题：\|.*Starting embedded\|.*Every deployment\)" \
  "$work/make.log" | cut -c1-140
kill -- -$group 2>/dev/null
