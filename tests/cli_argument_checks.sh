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
# Settings the chosen loss or model does not read.
fc4="$fc --h 4 --input-size 12"
refused loss_param_unread quantile "$shoal" $fc4 --loss mae --quantile 0.9
refused valid_param_without_valid_loss valid_quantile "$shoal" $fc4 --valid-quantile 0.3
refused valid_param_unread valid_huber_delta "$shoal" $fc4 --valid-loss mse --valid-huber-delta 2
refused horizon_weight_negative horizon_weight "$shoal" $fc4 --horizon-weight=-1,1,1,1
refused horizon_weight_zero horizon_weight "$shoal" $fc4 --horizon-weight 0,0,0,0
refused val_check_steps_zero val_check_steps "$shoal" $fc4 --val-size 4 --val-check-steps 0
refused cardinalities_without_columns categorical_cardinalities "$shoal" forecast \
  --data series.csv --model mlp --h 4 --input-size 12 --max-steps 2 --out f.csv \
  --categorical-cardinalities 3
nv="forecast --data series.csv --model naive --h 4 --out f.csv"
refused baseline_loss loss "$shoal" $nv --loss mse
refused baseline_input_size input_size "$shoal" $nv --input-size 12
refused baseline_max_steps max_steps "$shoal" $nv --max-steps 100
refused baseline_exog hist_exog_list "$shoal" $nv --hist-exog price
refused num_threads_huge num_threads "$shoal" $fc4 --num-threads 100000
refused num_threads_negative num_threads "$shoal" $fc4 --num-threads -1
refused profile_out_without_profile "profile-out" "$shoal" $fc4 --profile-out p
# A jobs file builds its jobs the same way: its line fails, naming the key.
printf '{"id": "q", "data": "series.csv", "model": "nlinear", "config": {"h": 4, "input_size": 12, "max_steps": 2, "loss": "mae", "quantile": 0.9}}\n' > jobs.jsonl
status=0
timeout 60 "$shoal" fleet --jobs jobs.jsonl --out fleet_out --quiet > jobs.log 2> jobs.err || status=$?
if [ "$status" -ne 2 ] || ! grep -q "loss mae does not read quantile" jobs.err; then
  echo "FAIL jobs_loss_param_unread: status $status, wanted 2 and the line's error:"
  cat jobs.err
  fails=$((fails + 1))
elif [ -n "${SHOAL_ERRORS_MD:-}" ]; then
  printf '| cli_jobs_loss_param_unread | `shoal fleet --jobs jobs.jsonl` (a line with `"loss": "mae", "quantile": 0.9`) | `%s` |\n' \
    "$(grep "job 'q' failed" jobs.err)" >> "$SHOAL_ERRORS_MD"
fi
# Splits: ids and times checked at the edge, naming the column and line.
printf 'user,item,timestamp\n1,10,5\n1,11,\n2,10,3\n2,12,4\n' > empty_time.csv
printf 'user,item,timestamp\n1,10,5\n,11,6\n2,10,3\n2,12,4\n' > empty_user.csv
printf 'user,item,timestamp\n1,10,2024-01-09\n1,11,2024-01-10\n2,10,3\n2,12,4\n' > text_time.csv
for case in empty_time:timestamp empty_user:user text_time:timestamp; do
  refused "split_${case%%:*}" "${case#*:}" "$shoal" ncf split --data "${case%%:*}.csv" \
    --train-out split_train.csv --test-out split_test.csv
done
# A user with every item is named by its own id, not its table row.
printf 'user,item\n5,a\n777,a\n777,b\n' > every_item.csv
refused every_item "user 777" "$shoal" ncf train --train every_item.csv --epochs 1 --threads 1
[ "$fails" -eq 0 ] && echo "cli-argument-checks-ok"
