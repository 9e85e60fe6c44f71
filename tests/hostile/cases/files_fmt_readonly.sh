#!/usr/bin/env bash
# Guards: `emmyc fmt -i` on a read-only file exited 0 (formatting nothing, or as root overwriting it).
# expect-exit: 2
# expect-output: cannot write 'ro\.emmy': the file is read-only \(chmod u\+w 'ro\.emmy' to allow it\)
# reject-output: internal error|Aborted|Segmentation
set -u
printf 'op  twice(x:  f32[N])  ->  (y:  f32[N])  {  y[n]  =  x[n]  *  2;  }\n' > ro.emmy
cp ro.emmy original.emmy
chmod 0444 ro.emmy
"$EMMYC" fmt -i ro.emmy
status=$?
cmp -s ro.emmy original.emmy || { echo "FAIL: ro.emmy changed"; exit 3; }
[ "$(stat -c %a ro.emmy)" = 444 ] || { echo "FAIL: mode changed to $(stat -c %a ro.emmy)"; exit 4; }
# A formatted read-only file needs no write: that is no error.
"$EMMYC" fmt original.emmy > formatted.emmy && chmod 0444 formatted.emmy && "$EMMYC" fmt -i formatted.emmy ||
  { echo "FAIL: a formatted read-only file was an error"; exit 5; }
exit $status
