# tests/bench/lib.sh - what the benchmarks share; sourced, not run.

wait_until() {	# wait_until SECONDS CMD...
	local end=$((SECONDS + $1)); shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < end)) || return 1
		sleep 0.05
	done
}

free_ports() {	# free_ports N: N distinct free loopback TCP ports
	python3 -c 'import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])' "$1"
}

# find_redispy: PY= a python3 that can import redis-py, or empty.  Debian's
# python3-redis is for /usr/bin/python3, which a pyenv python3 on PATH does
# not see; the interpreter itself, not a pyenv shim (a bash script).
find_redispy() {
	local p
	PY=
	for p in "$(type -P python3)" /usr/bin/python3; do
		if [[ -x $p ]] && "$p" -c 'import redis' 2>/dev/null; then
			PY=$("$p" -c 'import sys; print(sys.executable)')
			return 0
		fi
	done
	return 1
}

# Machine-readable results, for tests/bench/run: with CSV=FILE set, each
# benchmark appends one line per measurement to FILE:
#   workload,case,tool,metric,unit,n,median,min,max
# (README.md, "CSV"); without it, nothing.
csv_row() {	# csv_row WORKLOAD CASE TOOL METRIC UNIT N MEDIAN MIN MAX
	[[ -n ${CSV:-} ]] || return 0
	local f out=
	for f in "$@"; do
		[[ $f == *[,\"]* ]] && f="\"${f//\"/\"\"}\""
		out+=${out:+,}$f
	done
	echo "$out" >>"$CSV"
}

csv_stats() {	# csv_stats FILE [DIV]: "n median min max" of its numbers / DIV (1000)
	sort -n "$1" | awk -v d="${2:-1000}" '{ v[NR] = $1 }
	END {
		if (!NR) { print "0 - - -"; exit }
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%d %.3f %.3f %.3f\n", NR, m / d, v[1] / d, v[NR] / d
	}'
}

# over_budget START DONE: true when MAX_SECONDS is set (not 0) and one more
# round, as long as the average of the DONE rounds since START ($SECONDS),
# would end past it: the benchmarks then stop early, with fewer rounds, and
# say so, rather than be killed by tests/bench/run's timeout with nothing.
over_budget() {
	((${MAX_SECONDS:-0} > 0 && $2 > 0)) || return 1
	(((SECONDS - $1) * ($2 + 1) / $2 > MAX_SECONDS))
}

# interleave NAME [--die]: the W1 rounds. WARMUP rounds (not counted),
# then ROUNDS, each running every tool once (run I, the script's own), in
# an order drawn anew each round, so that drift (CPU frequency, page
# cache, a noisy neighbour) and what the tool before left behind spread
# over all tools alike. Wall times
# in µs go to $T/tI, one line per counted run; a failed run is counted in
# FAILS[I] (--die: the script's die, with the tool's output); the script's
# after_run I START, if it has one, sees each counted run. Fewer rounds
# when MAX_SECONDS would be passed (NAME says so on stderr); elapsed= the
# seconds taken.
shuffle_order() {	# ORDER: 0 .. N-1 in a random order
	local j t
	ORDER=()
	for ((j = 0; j < N; j++)); do ORDER+=("$j"); done
	for ((j = N - 1; j > 0; j--)); do
		t=$((RANDOM % (j + 1)))
		local x=${ORDER[j]}; ORDER[j]=${ORDER[t]}; ORDER[t]=$x
	done
}

interleave() {
	local name=$1 die_on_failure=${2:-} i r k s e t_start=$SECONDS
	FAILS=()
	for ((i = 0; i < N; i++)); do : >"$T/t$i"; FAILS[i]=0; done
	for ((r = -WARMUP; r < ROUNDS; r++)); do
		if ((r > 0)) && over_budget "$t_start" $((r + WARMUP)); then
			echo "$name: MAX_SECONDS ($MAX_SECONDS) reached: $r rounds, not $ROUNDS" >&2
			ROUNDS=$r
			break
		fi
		# a new order each round: a tool that always ran after the same
		# one measured that one's leftovers too (the same dlock binary
		# was 0.2 ms slower in the row after flock's than in the row
		# after its own)
		shuffle_order
		for ((k = 0; k < N; k++)); do
			i=${ORDER[k]}
			s=$EPOCHREALTIME
			if ! run "$i"; then
				[[ -z $die_on_failure ]] ||
					die "'${NAMES[$i]}' failed: $(head -c 300 "$T/out")"
				FAILS[i]=$((FAILS[i] + 1))
			fi
			e=$EPOCHREALTIME
			((r < 0)) && continue
			echo $(( 10#${e/./} - 10#${s/./} )) >>"$T/t$i"
			! declare -F after_run >/dev/null || after_run "$i" "$s"
		done
	done
	# shellcheck disable=SC2034	# the caller's
	elapsed=$((SECONDS - t_start))
}

stats() {	# stats FILE: "median p10 p90" in ms, of its numbers in µs
	sort -n "$1" | awk '{ v[NR] = $1 }
	function q(p,  i) { i = int(p * (NR - 1)) + 1; return v[i] / 1000 }
	END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.3f %.3f %.3f\n", m / 1000, q(0.10), q(0.90)
	}'
}

# A PostgreSQL server of PGBIN's (the caller's: the newest installed), run
# as the postgres user. pg_start DIR PORT [SERVER-OPTION...]: a cluster in
# DIR/data, made and started, on PORT of the loopback address and a socket
# in DIR, its log in DIR/log; pg_stop DIR, for the cleanup: stopped, in
# whatever state it is.
pg_start() {
	local dir=$1 port=$2
	shift 2
	chmod 755 "$dir"
	chown postgres "$dir"
	runuser -u postgres -- "$PGBIN/initdb" --no-sync -A trust -U postgres \
		-D "$dir/data" >/dev/null &&
		runuser -u postgres -- "$PGBIN/pg_ctl" -D "$dir/data" -w \
			-o "-k $dir -p $port -c listen_addresses=127.0.0.1 $*" \
			-l "$dir/log" start >/dev/null
}

pg_stop() {
	runuser -u postgres -- "$PGBIN/pg_ctl" -D "$1/data" -m immediate stop \
		>/dev/null 2>&1 || true
}
