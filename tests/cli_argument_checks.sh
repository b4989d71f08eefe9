#!/bin/sh
# Sizes are checked before memory is taken, and every argument means something or is refused:
# each case exits 2 with one line that names the option, and runs no longer than a few seconds.
# Usage: cli_argument_checks.sh SHOAL EXAMPLES_DIR WORK_DIR
set -eu
shoal=$1 examples=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
cp "$examples/tiny_train.csv" series.csv
"$shoal" synth ncf --positives 300 --users 20 --items 30 --out train.csv > /dev/null
fails=0
# refused NAME OPTION COMMAND...: status 2, one line on stderr naming OPTION, within 60 s.
refused() {
  name=$1 option=$2
  shift 2
  status=0
  timeout 60 "$@" > "$name.log" 2> "$name.err" || status=$?
  if [ "$status" -ne 2 ] || [ "$(wc -l < "$name.err")" -ne 1 ] || ! grep -q -- "$option" "$name.err"; then
    echo "FAIL $name: status $status, wanted 2 and one line naming $option:"
    cat "$name.err"
    fails=$((fails + 1))
  else
    echo "refused $name: $(cat "$name.err")"
    if [ -n "${SHOAL_ERRORS_MD:-}" ]; then
      printf '| cli_%s | `%s` | `%s` |\n' "$name" "$(echo "$*" | sed "s|^$shoal |shoal |")" \
        "$(cat "$name.err")" >> "$SHOAL_ERRORS_MD"
    fi
  fi
}
fc="forecast --data series.csv --model nlinear --seasonality 12 --max-steps 2 --out f.csv"
refused input_size_huge input_size "$shoal" $fc --h 4 --input-size 2000000000
refused h_huge "h" "$shoal" $fc --h 2000000000 --input-size 12
nt="ncf train --train train.csv --epochs 1 --threads 1"
refused num_users_huge --num-users "$shoal" $nt --num-users 2000000000
refused num_users_negative --num-users "$shoal" $nt --num-users -5
refused factors_huge factors "$shoal" $nt --factors 2000000000
refused layers_empty_item layers "$shoal" $nt --layers 8,,4
refused neg_zero num_negatives "$shoal" $nt --neg 0
[ "$fails" -eq 0 ] && echo "cli-argument-checks-ok"
