#!/bin/sh
# The GPU check's part runner (make gpu-check; issue 29): every part runs,
# each under its own timeout, and a failing one never stops the next.
#
#   kit.sh OUT PART...        each PART is NAME:TIMEOUT_S; it runs as
#                             $KIT_PARTS NAME OUT/NAME (bench/gpu/parts.sh
#                             by default), output in OUT/NAME.log
#
# A part exits 0 (PASS), 77 (SKIP: it cannot run here; not a pass) or
# anything else (FAIL; 124: it ran past its timeout and was stopped). Its
# figures are the last line of its log that starts "figures: ". One line
# per part:
#   PASS|FAIL|SKIP NAME (SECONDS s): FIGURES
# then the last line:
#   gpu-check: N parts, P PASS, F FAIL, S SKIP in T s
# and the exit status is 1 when any part failed, else 0.
set -u
out=$1
shift
parts=${KIT_PARTS:-sh $(cd "$(dirname "$0")" && pwd)/parts.sh}
mkdir -p "$out"
now() { date +%s.%N; }
t0=$(now)
export KIT_RUN="$$"  # this run, for what its parts find out once (parts.sh)
n=0 pass=0 fail=0 skip=0
# summary.txt keeps every run's lines (a rerun of the parts that failed
# adds to it); each part's directory holds its latest run only.
echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') gpu-check: $*" >> "$out/summary.txt"
for spec in "$@"; do
    name=${spec%%:*}
    limit=${spec#*:}
    [ "$limit" = "$spec" ] && limit=600
    n=$((n + 1))
    rm -rf "${out:?}/$name"
    mkdir -p "$out/$name"
    s=$(now)
    # timeout signals the whole process group it runs the part in.
    # shellcheck disable=SC2086 # $parts is a command line
    timeout -k 10 "$limit" $parts "$name" "$out/$name" > "$out/$name.log" 2>&1 < /dev/null
    rc=$?
    secs=$(awk -v a="$s" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}')
    figures=$(sed -n 's/^figures: //p' "$out/$name.log" | tail -1)
    case $rc in
    0) verdict=PASS pass=$((pass + 1)) ;;
    77) verdict=SKIP skip=$((skip + 1)) ;;
    124 | 137) verdict=FAIL fail=$((fail + 1)) figures="stopped: ran past its ${limit} s timeout${figures:+; $figures}" ;;
    *) verdict=FAIL fail=$((fail + 1)) ;;
    esac
    if [ "$verdict" = FAIL ] && [ -z "$figures" ]; then
        figures="exit $rc: $(grep -v '^$' "$out/$name.log" | tail -1 | cut -c1-300)"
    fi
    echo "$verdict $name (${secs} s): ${figures:-no figures}" | tee -a "$out/summary.txt"
done
total=$(awk -v a="$t0" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}')
echo "gpu-check: $n parts, $pass PASS, $fail FAIL, $skip SKIP in $total s" | tee -a "$out/summary.txt"
[ "$fail" -eq 0 ]
