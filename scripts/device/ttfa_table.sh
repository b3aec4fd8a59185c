# prints batch, ms/frame, ttfa and its parts for each bench-sweep-*.txt in $1
for f in "$1"/bench-sweep-*.txt; do
  n=$(basename "$f" .txt); n=${n#bench-sweep-}
  awk -v n="$n" '/^ +[0-9]+ +[0-9.]+ +[0-9.]+/ {b=$1; ms=$2; t=$3} /ttfa:/ {printf "%-12s b%-4s %8s ms/frame  ttfa %7s  start %s launch %s wait %s\n", n, b, ms, t, $2, $7, $13}' "$f"
done
