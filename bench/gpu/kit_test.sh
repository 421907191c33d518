#!/bin/sh
# Tests of the GPU check's part runner (bench/gpu/kit.sh) and of its parts'
# bars on the stand-ins (make gpu-check-standin runs it):
#   1. parts made up to fail, to run past their timeout, to skip and to
#      pass, in that order: each gets its line, in order, the kit goes on
#      after each failure, the total counts them, and the exit status is 1;
#      a kit of passing and skipped parts exits 0;
#   2. the real parts on the stand-ins, each bar broken on purpose, each
#      followed by a part that passes: a warm default path that stands
#      aside (a cuDNN whose plans run another engine than stored), then 4
#      processes whose graphs are each benchmarked by all of them (a build
#      timeout of 1 ms: nobody waits for the leader), then a part that
#      passes after both; then the dlopen and enable() parts, each with a
#      warm run on a fresh file (it benchmarks again: KIT_WARM_FRESH),
#      each followed by the other, which passes;
#   3. the PyTorch parts' shell plumbing, on a made-up python (a warm run
#      slower than 1.25x the floor fails resnet and enable-default; an
#      ONNX Runtime warm run on a fresh file fails onnxruntime).
# report_test.py fails each bar of bars.py on made-up figures.
# usage: kit_test.sh BUILD
set -u
B=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/convcache-kit.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
fails=0
ok() { echo "ok   kit: $*"; }
bad() { echo "FAIL kit: $*" >&2; fails=$((fails + 1)); }

# ---- 1. the runner, on made-up parts
cat > "$T/fake.sh" <<'EOF'
case $1 in
fail) echo "figures: made to fail"; exit 1 ;;
hang) echo "figures: started"; sleep 60; exit 0 ;;
skip) echo "figures: cannot run here"; exit 77 ;;
pass) echo "figures: all good" ;;
esac
EOF
KIT_PARTS="sh $T/fake.sh" sh "$here/kit.sh" "$T/k1" fail:30 hang:1 skip:30 pass:30 > "$T/k1.out" 2>&1
rc=$?
sed 's/ ([0-9.]* s)//; s/ in [0-9.]* s$//' "$T/k1.out" | grep -v '^== ' > "$T/k1.lines"
cat > "$T/k1.want" <<'EOF'
FAIL fail: made to fail
FAIL hang: stopped: ran past its 1 s timeout; started
SKIP skip: cannot run here
PASS pass: all good
gpu-check: 4 parts, 1 PASS, 2 FAIL, 1 SKIP
EOF
if [ "$rc" = 1 ] && cmp -s "$T/k1.lines" "$T/k1.want"; then
    ok "a failing part and one past its timeout are FAIL lines, the kit goes on to the next, the total counts them, exit 1"
else
    bad "runner: exit $rc, lines: $(cat "$T/k1.out")"
fi
KIT_PARTS="sh $T/fake.sh" sh "$here/kit.sh" "$T/k2" skip:30 pass:30 > "$T/k2.out" 2>&1
rc=$?
if [ "$rc" = 0 ] && grep -q '^gpu-check: 2 parts, 1 PASS, 0 FAIL, 1 SKIP' "$T/k2.out"; then
    ok "passing and skipped parts exit 0 (SKIP counted apart from PASS)"
else
    bad "pass and skip: exit $rc: $(cat "$T/k2.out")"
fi

# ---- 2. the real parts on the stand-ins, bars missed on purpose
kit() { KIT_BUILD=$B KIT_STANDIN=1 KIT_RESULTS=$T/results.md sh "$here/kit.sh" "$@"; }
KIT_WARM_ENV=STANDIN_SUBSTITUTE=engine kit "$T/k3" warm-default:120 procs4:120 > "$T/k3.out" 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -q '^FAIL warm-default .*graphs stood aside: the stored choice.s plan runs another engine' "$T/k3.out" &&
    grep -q '^PASS procs4 ' "$T/k3.out"; then
    ok "a warm default path that stands aside unexpectedly is a FAIL line, and the next part runs and passes"
else
    bad "stand-aside bar: exit $rc: $(cat "$T/k3.out")"
fi
CONVCACHE_BUILD_TIMEOUT_MS=1 kit "$T/k4" procs4:120 > "$T/k4.out" 2>&1
rc1=$?
kit "$T/k5" procs4:120 deterministic:120 > "$T/k5.out" 2>&1
rc2=$?
if [ "$rc1" = 1 ] && grep -q '^FAIL procs4 .*benchmarked by more than one process' "$T/k4.out" &&
    [ "$rc2" = 0 ] && grep -q '^PASS procs4 ' "$T/k5.out" && grep -q '^PASS deterministic ' "$T/k5.out"; then
    ok "4 processes that each benchmark every graph are a FAIL line; with single flight, PASS"
else
    bad "single-flight bar: exit $rc1 then $rc2: $(cat "$T/k4.out" "$T/k5.out")"
fi
KIT_WARM_FRESH=enable-default kit "$T/k8" enable-default:120 v8-dlopen:120 > "$T/k8.out" 2>&1
rc1=$?
KIT_WARM_FRESH=v8-dlopen kit "$T/k9" v8-dlopen:120 enable-default:120 > "$T/k9.out" 2>&1
rc2=$?
if [ "$rc1" = 1 ] &&
    grep -q '^FAIL enable-default .*[1-9][0-9]* graphs the cold run benchmarked were benchmarked again (new) in the warm run' \
        "$T/k8.out" && grep -q '^PASS v8-dlopen .*finds hits, 0 misses (find taken by handle libconvcache_preload.so)' "$T/k8.out" &&
    grep -q '^gpu-check: 2 parts, 1 PASS, 1 FAIL' "$T/k8.out"; then
    ok "a warm run under convcache.enable() that benchmarks again (a fresh file) is a FAIL line, and v8-dlopen runs next and passes"
else
    bad "enable-default on a fresh warm file: exit $rc1: $(cat "$T/k8.out")"
fi
if [ "$rc2" = 1 ] && grep -q '^FAIL v8-dlopen .*run 2: \([0-9]*\) of \1 finds reached the interposer, 0 hits' "$T/k9.out" &&
    grep -q '^FAIL v8-dlopen .*graphs the cold run benchmarked were benchmarked again' "$T/k9.out" &&
    grep -q '^PASS enable-default .*[1-9][0-9]* served, 0 stood aside, 0 new' "$T/k9.out"; then
    ok "dlopen clients whose run 2 benchmarks again (v7_find --handle, torch_like_dl) are a FAIL line, and enable-default runs next and passes"
else
    bad "v8-dlopen on a fresh warm file: exit $rc2: $(cat "$T/k9.out")"
fi
if grep -q 'gpu-check part warm-default: begin' "$T/results.md" && grep -q '^\*\*FAIL\*\*: ' "$T/results.md"; then
    ok "each part's table, with its verdict, goes to its section of the results file"
else
    bad "the results file has no part sections with verdicts"
fi

# ---- 3. the PyTorch parts' plumbing (runs, marks, the barrier, the judge)
# rehearsed with a made-up python (fake_python.sh): every part passes; a
# warm run slower than 1.25x its floor fails resnet and enable-default (its
# floor is resnet's), an ONNX Runtime warm run on a fresh file fails
# onnxruntime, and the next part runs.
P="warm-default:60 resnet:60 enable-default:60 multiscale:60 procs4:60 deterministic:60 bf16-cl:60 sdpa:60 torch-v7:60"
P="$P onnxruntime:60"
# shellcheck disable=SC2086 # the parts
KIT_BUILD=$B KIT_STANDIN=0 PYTHON="$here/fake_python.sh" sh "$here/kit.sh" "$T/k6" $P > "$T/k6.out" 2>&1
rc1=$?
FAKE_FIRST_MS=1300 KIT_WARM_FRESH=onnxruntime KIT_BUILD=$B KIT_STANDIN=0 PYTHON="$here/fake_python.sh" \
    sh "$here/kit.sh" "$T/k7" resnet:60 enable-default:60 onnxruntime:60 sdpa:60 > "$T/k7.out" 2>&1
rc2=$?
if [ "$rc1" = 0 ] && grep -q '^gpu-check: 10 parts, 10 PASS' "$T/k6.out" &&
    grep -q "^PASS enable-default .*first steps: floor 1000 ms (resnet's), warm 1100 ms (1.10x)" "$T/k6.out" &&
    grep -q '^PASS onnxruntime .*run 2: 6 finds, 6 hits, 0 misses' "$T/k6.out" && [ "$rc2" = 1 ] &&
    grep -q "^FAIL resnet .*1.30x the floor's 1000 ms" "$T/k7.out" &&
    grep -q "^FAIL enable-default .*1.30x the floor's 1000 ms" "$T/k7.out" &&
    grep -q '^FAIL onnxruntime .*0 of 6 finds were hits' "$T/k7.out" && grep -q '^PASS sdpa ' "$T/k7.out"; then
    ok "the PyTorch parts run end to end on a made-up python; a warm run 1.3x its floor is a FAIL line (resnet, enable-default), so is an ONNX Runtime run 2 that benchmarks again, and the next part passes"
else
    bad "PyTorch parts' plumbing: exit $rc1, $rc2: $(cat "$T/k6.out" "$T/k7.out")"
fi

[ "$fails" -eq 0 ] || { echo "kit_test: $fails failed" >&2; exit 1; }
echo "kit_test: all passed"
