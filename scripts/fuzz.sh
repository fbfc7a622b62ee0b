#!/usr/bin/env bash
# Runs every Go fuzz target in the repository, one at a time, for FUZZTIME each.
#
#   scripts/fuzz.sh [FUZZTIME]        (default: $FUZZTIME, else 10s)
#   FUZZ_MATCH=Regexp scripts/fuzz.sh  only targets whose name matches (grep -E)
#
# Targets are discovered with grep over *_test.go files (`func FuzzXxx(f *testing.F)`), so a new
# target is picked up without touching this script or the Makefile. Directories the go tool
# ignores (testdata, vendor, node_modules, names starting with "." or "_") are skipped.
# Every target runs even if an earlier one fails; the script fails at the end if any did.
# A failing input is written by the go tool to <pkg>/testdata/fuzz/<Target>/.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${1:-${FUZZTIME:-10s}}
match=${FUZZ_MATCH:-}
GO=${GO:-go}

# "<dir> <Name>" per target, sorted and de-duplicated.
targets=$(
  find . \( -name node_modules -o -name testdata -o -name vendor -o -name '.?*' -o -name '_*' \) -prune \
    -o -type f -name '*_test.go' -print0 |
    xargs -0 -r grep -HE '^func Fuzz[A-Za-z0-9_]*\([[:space:]]*[A-Za-z_][A-Za-z0-9_]*[[:space:]]+\*testing\.F[[:space:]]*\)' |
    sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*$#\1 \2#' |
    sort -u
) || true

if [[ -n $match ]]; then
  targets=$(grep -E " .*${match}" <<<"$targets" || true)
fi

if [[ -z $targets ]]; then
  echo "fuzz: no fuzz targets found; nothing to do"
  exit 0
fi

n=$(wc -l <<<"$targets")
echo "fuzz: $n target(s), $fuzztime each"
failed=()
while read -r dir name; do
  echo "--- fuzz $name ($dir, $fuzztime)"
  # The go fuzzing coordinator can end a run with a bare "context deadline exceeded" when a
  # worker answers late on a loaded machine (no failing input is written). That is not a
  # finding: such a run is tried once more. Any run that writes a failing input fails.
  for attempt in 1 2; do
    log=$(mktemp)
    if "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$dir" </dev/null 2>&1 | tee "$log"; then
      rm -f "$log"
      break
    fi
    if ((attempt == 1)) && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
      echo "fuzz: $name: coordinator deadline, no failing input; running once more"
      rm -f "$log"
      continue
    fi
    rm -f "$log"
    failed+=("$dir:$name")
    break
  done
done <<<"$targets"

if ((${#failed[@]} > 0)); then
  echo "fuzz: ${#failed[@]} of $n target(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all $n target(s) passed"
