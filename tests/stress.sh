#!/bin/bash
# tests/stress.sh: mutual exclusion under server faults, bounded.
#
# WORKERS concurrent loops each run SECTIONS critical sections under one
# RedLock lock over SERVERS redis-servers (unix sockets, temp dir), while a
# fault loop, every FAULT_EVERY seconds, picks a random minority of the
# servers and either SIGSTOPs them for a while (then SIGCONT), or kills
# them and brings them back empty RESTART_DELAY seconds later (RedLock's
# delayed restart: no sooner than one TTL, so that no lease a dead server
# granted can outlive its coming back empty). Each section:
#   - mkdir's a marker directory: it exists already = two sections at once;
#   - reads, increments and writes back a counter file (lost updates show);
#   - appends its DLOCK_FENCE to a log.
# Checks at the end: no overlap, counter = WORKERS x SECTIONS, the fences
# strictly increase in section order, no lock key left on any server, no
# dlock or section process left. Exit 0 when all hold, 1 otherwise.
#
# Environment: DLOCK (default ./build/dlock), WORKERS (16), SECTIONS (200),
# SERVERS (5), TTL (3, seconds), FAULT_EVERY (2), RESTART_DELAY (TTL; 0 =
# RedLock's known limit: an immediate empty restart, measured separately),
# FAULTS (stop,kill), DURATION_MAX (600 s: the run is cut there, and fails).
# A 10-minute soak: SECTIONS=2000 DURATION_MAX=900 tests/stress.sh
set -uo pipefail
export LC_ALL=C
unset DLOCK_SERVERS DLOCK_PASSWORD DLOCK_PREFIX DLOCK_KEY DLOCK_TOKEN DLOCK_FENCE DLOCK_JOB

DLOCK=${DLOCK:-./build/dlock}
WORKERS=${WORKERS:-16}
SECTIONS=${SECTIONS:-200}
SERVERS=${SERVERS:-5}
TTL=${TTL:-3}
FAULT_EVERY=${FAULT_EVERY:-2}
RESTART_DELAY=${RESTART_DELAY:-$TTL}
FAULTS=${FAULTS:-stop,kill}
DURATION_MAX=${DURATION_MAX:-600}

die() { echo "stress.sh: $*" >&2; exit 2; }
[[ -x $DLOCK ]] || die "no dlock binary at '$DLOCK' (set DLOCK=path)"
DLOCK=$(realpath "$DLOCK")
command -v redis-server >/dev/null || die "redis-server not found"

T=$(mktemp -d "${TMPDIR:-/tmp}/dlock-stress.XXXXXX")
WPIDS=()
FAULT_PID=
cleanup() {
	local p
	[[ -n $FAULT_PID ]] && kill "$FAULT_PID" 2>/dev/null
	for p in "${WPIDS[@]}"; do kill "$p" 2>/dev/null; done
	# the fault loop restarts servers in a subshell: their pids are in files
	for p in "$T"/s*.pid; do
		[[ -e $p ]] || continue
		kill -CONT "$(<"$p")" 2>/dev/null
		kill "$(<"$p")" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
. "$(dirname "$0")/bench/lib.sh"	# wait_until

start_server() {	# start_server I: empty, on $T/sI.sock; pid in $T/sI.pid
	redis-server --port 0 --unixsocket "$T/s$1.sock" --dir "$T" --save '' \
		--appendonly no --pidfile "$T/s$1.pid" --daemonize no \
		>>"$T/s$1.log" 2>&1 &
	echo $! >"$T/s$1.pid"
	disown $!	# killed by the fault loop: no "Killed" line
	wait_until 5 redis-cli -s "$T/s$1.sock" ping || die "server $1 did not start"
}

SRV=()
for ((i = 1; i <= SERVERS; i++)); do
	start_server "$i"
	SRV+=(-S "unix:$T/s$i.sock")
done

# --- the workers -------------------------------------------------------
echo 0 >"$T/counter"
: >"$T/fences"
cat >"$T/section" <<'EOF'
#!/bin/sh
# one critical section: $1 the temp dir
mkdir "$1/inside" 2>/dev/null || echo "overlap: fence $DLOCK_FENCE" >>"$1/overlaps"
n=$(cat "$1/counter")
echo $((n + 1)) >"$1/counter"
echo "$DLOCK_FENCE" >>"$1/fences"
rmdir "$1/inside"
EOF
chmod +x "$T/section"

worker() {	# worker W: SECTIONS sections; failures noted in $T/failed
	local w=$1 k rc
	for ((k = 0; k < SECTIONS; k++)); do
		"$DLOCK" "${SRV[@]}" -t "$TTL" -w 120 K "$T/section" "$T" \
			2>>"$T/w$w.err"
		rc=$?
		# a section whose lock was lost (75) or that found too few
		# servers (69) is tried again: the count is of sections run
		case $rc in
		0) ;;
		69|75) k=$((k - 1)); echo "$rc" >>"$T/retries" ;;
		*) echo "worker $w: dlock exited $rc" >>"$T/failed"; return ;;
		esac
	done
}

# --- the faults --------------------------------------------------------
faults() {
	local n i v action
	local -a kinds
	IFS=, read -ra kinds <<<"$FAULTS"
	while :; do
		sleep "$FAULT_EVERY"
		n=$((RANDOM % ((SERVERS - 1) / 2) + 1))	# a minority
		local -a victims=()
		while ((${#victims[@]} < n)); do
			v=$((RANDOM % SERVERS + 1))
			[[ " ${victims[*]} " == *" $v "* ]] || victims+=("$v")
		done
		action=${kinds[RANDOM % ${#kinds[@]}]}
		echo "$(date +%s.%N) $action ${victims[*]}" >>"$T/faults"
		case $action in
		stop)
			for i in "${victims[@]}"; do kill -STOP "$(<"$T/s$i.pid")"; done
			sleep "0.$((RANDOM % 9 + 1))"
			for i in "${victims[@]}"; do kill -CONT "$(<"$T/s$i.pid")"; done
			;;
		kill)
			for i in "${victims[@]}"; do
				kill -KILL "$(<"$T/s$i.pid")"
				wait_until 5 sh -c "! redis-cli -s '$T/s$i.sock' ping"
			done
			sleep "$RESTART_DELAY"
			for i in "${victims[@]}"; do
				rm -f "$T/s$i.sock"
				start_server "$i"
			done
			;;
		esac
	done
}

t0=$SECONDS
for ((w = 1; w <= WORKERS; w++)); do
	worker "$w" &
	WPIDS+=($!)
done
faults &
FAULT_PID=$!

cut=0
for p in "${WPIDS[@]}"; do
	while kill -0 "$p" 2>/dev/null; do
		if ((SECONDS - t0 > DURATION_MAX)); then cut=1; break 2; fi
		sleep 0.5
	done
done
kill "$FAULT_PID" 2>/dev/null
wait "$FAULT_PID" 2>/dev/null
FAULT_PID=
# every server up and running again
for ((i = 1; i <= SERVERS; i++)); do
	pid=$(<"$T/s$i.pid")
	if kill -0 "$pid" 2>/dev/null; then kill -CONT "$pid"; else start_server "$i"; fi
done
elapsed=$((SECONDS - t0))

# --- the verdict -------------------------------------------------------
bad=0
want=$((WORKERS * SECTIONS))
got=$(<"$T/counter")
n_faults=$(cat "$T/faults" 2>/dev/null | wc -l)
n_retries=$(cat "$T/retries" 2>/dev/null | wc -l)
printf 'stress.sh: %d workers x %d sections on %d servers, TTL %s s, faults (%s) every %s s, restart after %s s\n' \
	"$WORKERS" "$SECTIONS" "$SERVERS" "$TTL" "$FAULTS" "$FAULT_EVERY" "$RESTART_DELAY"
printf '  %d s, %d faults, %d sections retried (69/75)\n' "$elapsed" "$n_faults" "$n_retries"
((cut)) && { echo "  FAIL: cut at DURATION_MAX=$DURATION_MAX s"; bad=1; }
[[ -s $T/failed ]] && { sed 's/^/  FAIL: /' "$T/failed"; bad=1; }
if [[ -s $T/overlaps ]]; then
	echo "  FAIL: $(wc -l <"$T/overlaps") overlapping sections"
	bad=1
else
	echo "  no overlap"
fi
if ((got == want)); then echo "  counter $got, exact"; else echo "  FAIL: counter $got, want $want"; bad=1; fi
if sort -n -c "$T/fences" 2>/dev/null && [[ -z $(uniq -d "$T/fences") ]] &&
	[[ $(wc -l <"$T/fences") -eq $got ]]; then
	echo "  fences strictly increase over $(wc -l <"$T/fences") sections"
else
	echo "  FAIL: fences not strictly increasing in section order (or missing)"
	bad=1
fi
# Keys: the lock's counters and history may stay; nothing else, once
# waiters' marks have lapsed (a few seconds).
left() {
	local i
	for ((i = 1; i <= SERVERS; i++)); do
		redis-cli -s "$T/s$i.sock" --scan | grep -vx -e '{dlock:K}:fence' \
			-e '{dlock:K}:ticket' -e '{dlock:K}:history' | sed "s/^/s$i:/"
	done
}
no_left() { [[ -z $(left) ]]; }
if wait_until $((TTL + 5)) no_left; then echo "  no key left"; else
	echo "  FAIL: left: $(left | tr '\n' ' ')"; bad=1; fi
if pgrep -f "$T/section" >/dev/null || pgrep -f -- "-S unix:$T/" >/dev/null; then
	echo "  FAIL: processes left: $(pgrep -af -- "$T/" | grep -v redis-server | head -3)"
	bad=1
else
	echo "  no process left"
fi
exit $bad
