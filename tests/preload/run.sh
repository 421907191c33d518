#!/bin/sh
# Tests of the LD_PRELOAD interposer (build/libconvcache_preload.so) and of
# convcache_cudnn_scope, against the stand-in cuDNN and CUDA driver in
# build/tests/preload. No GPU needed. Usage: sh tests/preload/run.sh [BUILD]
# (make cudnn-test builds everything first.)
set -u

B=$(cd "${1:-build}" && pwd)
S=$B/tests/preload
PRELOAD=$B/libconvcache_preload.so
PROG=$S/preload_prog
KEYFILE=$(cd "$(dirname "$0")/../.." && pwd)/cudnn/testdata/fwd_ex_key.txt
T=$(mktemp -d "${TMPDIR:-/tmp}/convcache-preload.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM

unset CONVCACHE_SCOPE CONVCACHE_TAG CONVCACHE_MODE CONVCACHE_DISABLE CONVCACHE_PRELOAD_LOG \
    CONVCACHE_CUDA_LIBRARY CONVCACHE_CUDNN_LIBRARY CONVCACHE_SYSTEM_PATH CONVCACHE_REMOTE \
    CONVCACHE_VERBOSE STANDIN_FIND_STATUS STANDIN_BAD_ALGO STANDIN_DRIVER_VERSION \
    STANDIN_CUDNN_VERSION STANDIN_POISON STANDIN_TOTAL_MEM STANDIN_CUDA_NO_DRIVER STANDIN_BAD_DIMS
. "$(dirname "$0")/finds_lib.sh"

# ---- 1. A second run reaches cuDNN's find zero times, with identical results.
fresh
timeout 60 "$PROG" run "$T/base.txt" >"$T/o" || bad "baseline run failed"
expect_finds "baseline without the interposer" 18 "$T/o" "$T/base.txt" "$T/base.txt"
pre "$PROG" run "$T/r1.txt" >"$T/o" || bad "first run failed"
expect_finds "first run under LD_PRELOAD misses, same results" 18 "$T/o" "$T/r1.txt" "$T/base.txt"
pre "$PROG" run "$T/r2.txt" >"$T/o" || bad "second run failed"
expect_finds "second run under LD_PRELOAD hits, same results" 0 "$T/o" "$T/r2.txt" "$T/base.txt"

# The key layout matches cudnn/testdata/fwd_ex_key.txt, which the Go codec
# decodes (cudnn/findkey_test.go).
want=$(sed 's/#.*//' "$KEYFILE" | tr -d ' \n')
fresh
CONVCACHE_PRELOAD_LOG=1 pre "$PROG" run "$T/r.txt" >"$T/o" 2>"$T/log"
got=$(sed -n 's/^convcache-preload: fwd-ex miss device 0 key //p' "$T/log" | head -n 1)
if [ -n "$got" ] && [ "$got" = "$want" ]; then ok "the C key equals the documented layout"
else bad "the fwd-ex key differs from cudnn/testdata/fwd_ex_key.txt:
  got  $got
  want $want"; fi

# ---- 2. The scope: another device, driver, cuDNN or tag misses.
fresh
pre "$PROG" run "$T/r.txt" >"$T/o"
expect_finds "device 0 (default stream) fills the cache" 18 "$T/o"
pre "$PROG" run "$T/r.txt" 1 >"$T/o"
expect_finds "a handle on device 1 (another model) misses" 18 "$T/o" "$T/r.txt" "$T/base.txt"
pre "$PROG" run "$T/r.txt" 1 >"$T/o"
expect_finds "device 1 again hits" 0 "$T/o" "$T/r.txt" "$T/base.txt"
pre "$PROG" run "$T/r.txt" 0 >"$T/o"
expect_finds "a stream on device 0 hits device 0's entries" 0 "$T/o"
STANDIN_DRIVER_VERSION=13010 pre "$PROG" run "$T/r.txt" >"$T/o"
expect_finds "another driver version misses" 18 "$T/o"
STANDIN_CUDNN_VERSION=91400 pre "$PROG" run "$T/r.txt" >"$T/o"
expect_finds "another cuDNN version misses" 18 "$T/o"
CONVCACHE_TAG=torch-2.9 pre "$PROG" run "$T/r.txt" >"$T/o"
expect_finds "CONVCACHE_TAG misses" 18 "$T/o"
CONVCACHE_TAG=torch-2.9 pre "$PROG" run "$T/r.txt" >"$T/o"
expect_finds "CONVCACHE_TAG again hits" 0 "$T/o"
CONVCACHE_SCOPE=manual pre "$PROG" run "$T/r.txt" >"$T/o"
expect_finds "CONVCACHE_SCOPE misses" 18 "$T/o"
CONVCACHE_SCOPE=manual pre "$PROG" run "$T/r.txt" 1 >"$T/o"
expect_finds "CONVCACHE_SCOPE covers every device" 0 "$T/o"

# ---- 3. One field at a time, Ex workspace, failures, damaged entries,
# fork, threads.
for mode in vary status keys poison poison-real nulls getters fork fork-early flight; do
    fresh
    if pre "$PROG" "$mode" >"$T/o" 2>"$T/err"; then ok "preload_prog $mode"
    else bad "preload_prog $mode:"; cat "$T/err" >&2; fi
done

# ---- 4. No Go runtime in a process that never calls cuDNN's find.
fresh
line=$("$PROG" nogo)
[ "$line" = "threads 1 libconvcache 0 preload 0 loads 0" ] && ok "without LD_PRELOAD: $line" ||
    bad "without LD_PRELOAD: $line"
line=$(pre "$PROG" nogo)
[ "$line" = "threads 1 libconvcache 0 preload 1 loads 0" ] &&
    ok "under LD_PRELOAD, no find call: $line" || bad "under LD_PRELOAD, no find call: $line"
line=$(pre "$PROG" nogo call)
case $line in
"threads 1 "*) bad "the thread check cannot see a Go runtime: $line" ;;
*"libconvcache 1 preload 1 loads 1") ok "the same check sees Go after one find call: $line" ;;
*) bad "after one find call: $line" ;;
esac
for cmd in /bin/true "/bin/sh -c exit" "/bin/ls /"; do
    LD_DEBUG=files LD_PRELOAD=$PRELOAD $cmd >/dev/null 2>"$T/ld"
    if ! grep -q 'libconvcache_preload\.so' "$T/ld"; then bad "$cmd: LD_DEBUG shows no interposer"
    elif grep -q 'libconvcache\.so' "$T/ld"; then bad "$cmd under LD_PRELOAD loaded libconvcache.so"
    else ok "$cmd under LD_PRELOAD never loads libconvcache.so (LD_DEBUG=files)"; fi
done

# ---- Strict mode: a miss is an error returned to the caller, never a benchmark.
fresh
CONVCACHE_MODE=strict pre "$PROG" run "$T/s1.txt" >"$T/o" 2>"$T/e"
expect_finds "CONVCACHE_MODE=strict on an empty cache benchmarks nothing" 0 "$T/o"
if [ "$(grep -c 'status 3000 returned' "$T/s1.txt")" = 18 ] && [ "$(grep -c 'CONVCACHE_MODE=strict' "$T/e")" = 1 ]; then
    ok "strict misses return CUDNN_STATUS_NOT_SUPPORTED, with one warning"
else bad "strict misses: $(grep -c 'status 3000' "$T/s1.txt") of 18 returned NOT_SUPPORTED; stderr: $(cat "$T/e")"; fi
pre "$PROG" run "$T/r.txt" >"$T/o"
CONVCACHE_MODE=strict pre "$PROG" run "$T/s2.txt" >"$T/o"
expect_finds "CONVCACHE_MODE=strict on a warm cache hits" 0 "$T/o" "$T/s2.txt" "$T/base.txt"

# ---- 5. Fail open: no libconvcache.so beside the interposer, a foreign
# cache file, the kill switch.
mkdir -p "$T/alone"
cp "$PRELOAD" "$T/alone/"
fresh
for i in 1 2; do
    LD_PRELOAD=$T/alone/libconvcache_preload.so timeout 60 "$PROG" run "$T/r.txt" >"$T/o" 2>"$T/err"
    expect_finds "without libconvcache.so, run $i passes through" 18 "$T/o" "$T/r.txt" "$T/base.txt"
done
w=$(grep -c '^convcache: ' "$T/err")
[ "$w" = 1 ] && grep -q 'cannot load libconvcache.so' "$T/err" && ok "one warning for 18 calls" ||
    bad "$w warning lines, want 1: $(cat "$T/err")"
fresh
mkdir -p "$(dirname "$CONVCACHE_PATH")"
echo "not a cache file" >"$CONVCACHE_PATH"
for i in 1 2; do
    pre "$PROG" run "$T/r.txt" >"$T/o" 2>"$T/err"
    expect_finds "a foreign cache file, run $i passes through" 18 "$T/o" "$T/r.txt" "$T/base.txt"
done
w=$(grep -c '^convcache: ' "$T/err")
[ "$w" = 1 ] && ok "one warning for a cache that cannot open" || bad "$w warnings: $(cat "$T/err")"
[ "$(cat "$CONVCACHE_PATH")" = "not a cache file" ] && ok "the foreign file is untouched" ||
    bad "the foreign file was changed"
fresh
for i in 1 2; do
    CONVCACHE_DISABLE=1 pre "$PROG" run "$T/r.txt" >"$T/o"
    expect_finds "CONVCACHE_DISABLE=1, run $i" 18 "$T/o" "$T/r.txt" "$T/base.txt"
done

# ---- 6. Poisoned entries (planted.c) under CONVCACHE_SCOPE (no device
# lookup: the 1 TiB cap) and under cuDNN 8 (its status values); section 3
# ran them under a device's memory.
fresh
if CONVCACHE_SCOPE=planted pre "$PROG" poison >"$T/o" 2>"$T/err"; then
    ok "poisoned entries under CONVCACHE_SCOPE"
else bad "poisoned entries under CONVCACHE_SCOPE:"; cat "$T/err" >&2; fi
fresh
if STANDIN_CUDNN_VERSION=80906 pre "$PROG" poison >"$T/o" 2>"$T/err"; then
    ok "poisoned entries under cuDNN 8"
else bad "poisoned entries under cuDNN 8:"; cat "$T/err" >&2; fi
fresh
STANDIN_CUDNN_VERSION=80906 pre "$PROG" run "$T/r.txt" >"$T/o"
STANDIN_CUDNN_VERSION=80906 pre "$PROG" run "$T/r.txt" >"$T/o"
expect_finds "cuDNN 8's results (its NOT_SUPPORTED is 9) are stored: run 2 hits" 0 "$T/o"

# ---- 7. CONVCACHE_SCOPE is the scope of every device: no device lookup.
fresh
STANDIN_CUDA_NO_DRIVER=1 pre "$PROG" run "$T/r.txt" >"$T/o" 2>"$T/err"
expect_finds "no CUDA driver, no CONVCACHE_SCOPE: passes through" 18 "$T/o" "$T/r.txt" "$T/base.txt"
grep -q 'cannot tell the CUDA device' "$T/err" && ok "... and says why" ||
    bad "no CUDA driver: no warning: $(cat "$T/err")"
for i in 1 2; do
    STANDIN_CUDA_NO_DRIVER=1 CONVCACHE_SCOPE=nodriver pre "$PROG" run "$T/r.txt" >"$T/o" 2>"$T/err"
    expect_finds "no CUDA driver, CONVCACHE_SCOPE set, run $i" $((i == 1 ? 18 : 0)) "$T/o" \
        "$T/r.txt" "$T/base.txt"
done
[ ! -s "$T/err" ] && ok "... with no warning" || bad "CONVCACHE_SCOPE, no driver: $(cat "$T/err")"
long=$(head -c 4097 /dev/zero | tr '\0' s)
CONVCACHE_SCOPE=$long pre "$PROG" run "$T/r.txt" >"$T/o" 2>"$T/err"
expect_finds "CONVCACHE_SCOPE over 4096 bytes: passes through" 18 "$T/o" "$T/r.txt" "$T/base.txt"
[ "$(grep -c 'CONVCACHE_SCOPE is longer than 4096 bytes' "$T/err")" = 1 ] && ok "... with one warning" ||
    bad "over-long CONVCACHE_SCOPE: $(cut -c 1-200 "$T/err")"

# ---- 8. The CONVCACHE_VERBOSE summary at exit: one line, only in a process
# that made find calls or loaded the library.
summary() { grep '^convcache-preload: summary: ' "$1"; }
# expect_summary NAME ERRFILE PATTERN: exactly one summary line, matching.
expect_summary() {
    got=$(summary "$2")
    if [ "$(summary "$2" | wc -l)" = 1 ] && case $got in $3) true ;; *) false ;; esac; then
        ok "$1"
    else bad "$1: got summary [$got]
  want [$3]"; fi
}
no_summary() {
    if summary "$2" >/dev/null; then bad "$1: printed [$(summary "$2")]"; else ok "$1"; fi
}
MS='[0-9]*.[0-9][0-9][0-9]'
fresh
CONVCACHE_VERBOSE=1 pre "$PROG" run "$T/r.txt" >"$T/o" 2>"$T/err"
expect_summary "summary of a first run" "$T/err" "convcache-preload: summary: finds 18, hits 0, misses 18, passthrough 0, strict refusals 0, errors 0; cuDNN find time on misses $MS ms; benchmark time saved by hits >= 0.000 ms"
CONVCACHE_VERBOSE=1 pre "$PROG" run "$T/r.txt" >"$T/o" 2>"$T/err"
ms=$(sed -n 's/^success_ms //p' "$T/o")
expect_summary "summary of a second run: saved = the cached successes' times ($ms ms)" "$T/err" "convcache-preload: summary: finds 18, hits 18, misses 0, passthrough 0, strict refusals 0, errors 0; cuDNN find time on misses 0.000 ms; benchmark time saved by hits >= $ms ms"
pre "$PROG" run "$T/r.txt" >"$T/o" 2>"$T/err"
no_summary "no summary without CONVCACHE_VERBOSE" "$T/err"
CONVCACHE_VERBOSE=0 pre "$PROG" run "$T/r.txt" >"$T/o" 2>"$T/err"
no_summary "no summary with CONVCACHE_VERBOSE=0" "$T/err"
CONVCACHE_VERBOSE=1 pre "$PROG" nogo >"$T/o" 2>"$T/err"
no_summary "no summary from a process that made no find call" "$T/err"
CONVCACHE_VERBOSE=2 pre "$PROG" fork-idle >"$T/o" 2>"$T/err" || bad "fork-idle failed: $(cat "$T/err")"
expect_summary "one summary (the parent's) when an idle forked child exits" "$T/err" "convcache-preload: summary: finds 1, *"
fresh
CONVCACHE_MODE=strict CONVCACHE_VERBOSE=1 pre "$PROG" run "$T/r.txt" >"$T/o" 2>"$T/err"
expect_summary "strict refusals are counted" "$T/err" "convcache-preload: summary: finds 18, hits 0, misses 0, passthrough 0, strict refusals 18, errors 0; *"
CONVCACHE_VERBOSE=1 LD_PRELOAD=$T/alone/libconvcache_preload.so timeout 60 "$PROG" run "$T/r.txt" >"$T/o" 2>"$T/err"
expect_summary "summary without libconvcache.so" "$T/err" "convcache-preload: summary: finds 18, hits 0, misses 0, passthrough 18, strict refusals 0, errors 0; *"

# ---- 9. Secure mode (setuid): CONVCACHE_PRELOAD_LOG and CONVCACHE_VERBOSE
# are ignored. Needs root, to make a setuid copy.
mkdir -p "$T/secure"
cp "$S/preload_linked" "$T/secure/prog"
sec_env="CONVCACHE_PRELOAD_LOG=1 CONVCACHE_VERBOSE=1 HOME=$T/nohome XDG_CACHE_HOME=$T/nohome CONVCACHE_PATH=$T/secure/cache.ccdb"
env $sec_env "$T/secure/prog" secure >"$T/o" 2>"$T/err"
if grep -q '^at_secure 0' "$T/o" && grep -q '^convcache-preload: fwd ' "$T/err" && summary "$T/err" >/dev/null; then
    ok "not setuid: CONVCACHE_PRELOAD_LOG and CONVCACHE_VERBOSE print"
else bad "the linked program did not log: $(cat "$T/o" "$T/err")"; fi
if [ "$(id -u)" = 0 ] && chown 65534 "$T/secure/prog" 2>/dev/null && chmod 4755 "$T/secure/prog" &&
    env $sec_env "$T/secure/prog" secure >"$T/o" 2>"$T/err" && grep -q '^at_secure 1' "$T/o"; then
    if grep -q '^convcache-preload:' "$T/err"; then
        bad "setuid: the interposer read CONVCACHE_PRELOAD_LOG or CONVCACHE_VERBOSE: $(cat "$T/err")"
    else ok "setuid (AT_SECURE): CONVCACHE_PRELOAD_LOG and CONVCACHE_VERBOSE are ignored"; fi
else
    echo "skip secure mode: cannot run a setuid copy here (needs root and a suid mount): $(cat "$T/o" "$T/err" 2>/dev/null | head -n 3)"
fi

# ---- 10. Warnings carry no terminal control characters, whatever the
# path or error text holds.
fresh
: >"$T/file"
ESC=$(printf '\033')
CONVCACHE_PATH="$T/file/a${ESC}[2Jb/cache.ccdb" pre "$PROG" run "$T/r.txt" >"$T/o" 2>"$T/err"
if ! grep -q 'cannot open the cache' "$T/err"; then bad "no warning for a cache that cannot open: $(cat "$T/err")"
elif LC_ALL=C grep -q "$ESC" "$T/err"; then bad "a warning carries an escape sequence: $(cat -v "$T/err")"
else ok "warnings print control characters as '?'"; fi

# ---- 11. The fingerprint itself.
fresh
# `convcache scope` lists every device of the stand-in driver and stops after
# the last (cudnn.ErrNoDevice), whatever the count.
if [ -x "$B/convcache" ]; then
    for ndev in 1 3; do
        got=$(STANDIN_CUDA_DEVICES=$ndev CONVCACHE_CUDA_LIBRARY=$S/libcuda.so.1 CONVCACHE_CUDNN_LIBRARY=$S/libcudnn.so.9 \
            timeout 60 "$B/convcache" scope 2>"$T/err" | grep -c 'cc1;gpu=Standin GPU')
        if [ "$got" = "$ndev" ]; then ok "convcache scope lists $ndev stand-in device(s)"
        else bad "convcache scope listed $got of $ndev stand-in devices: $(cat "$T/err")"; fi
    done
fi

if LD_LIBRARY_PATH=$S STANDIN_DIR=$S timeout 60 "$S/scope_test" 2>"$T/err"; then
    ok "scope_test: format, CONVCACHE_TAG, CONVCACHE_SCOPE, errors"
else bad "scope_test:"; cat "$T/err" >&2; fi
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    echo "skip scope_test none: this machine has a CUDA driver (the Go test covers it)"
elif LD_LIBRARY_PATH= timeout 60 "$S/scope_test" none 2>"$T/err"; then
    ok "no driver: CONVCACHE_E_UNAVAILABLE"
else bad "scope_test none:"; cat "$T/err" >&2; fi

if [ "$fails" -ne 0 ]; then
    echo "tests/preload: $fails failed" >&2
    exit 1
fi
echo "tests/preload: all passed"
