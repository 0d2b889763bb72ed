# modes_helpers.bash - for wait.bats, modes.bats, fair.bats and tty.bats, on
# top of helpers.bash: the same check on one server or on three (RedLock),
# state read from every server, commands that meet each other or stamp the
# time, a MONITOR.

# servers N: r1..rN on unix sockets; SRV holds "-S URL" for each, NAMES the
# server names.
servers() {
	local i
	SRV=() NAMES=()
	for ((i = 1; i <= $1; i++)); do
		start_redis "r$i"
		SRV+=(-S "$(sock_url "r$i")")
		NAMES+=("r$i")
	done
}

is() { [[ $(rcli "$1" "${@:3}") == "$2" ]]; }	# is NAME WANT REDIS-ARGS...
all_are() {	# all_are WANT REDIS-ARGS...: every server answers WANT
	local s
	for s in "${NAMES[@]}"; do
		is "$s" "$@" || return 1
	done
}
# every_server WANT REDIS-ARGS...: as all_are, but fails naming the server
every_server() {
	local s got
	for s in "${NAMES[@]}"; do
		got=$(rcli "$s" "${@:2}")
		[[ $got == "$1" ]] || fail "$s: ${*:2} -> '$got', want '$1'"
	done
}

# nothing_left: every server holds only K's counters (fencing, tickets) and
# history: no lock, holder info, mode, slot, queue or liveness key. The wake list
# and the "someone waits" mark may outlive a wait by their 2 s: they must
# be gone within 3.
leftovers() {
	local s
	for s in "${NAMES[@]}"; do
		all_keys "$s" | grep -vx -e '{dlock:K}:fence' -e '{dlock:K}:ticket' \
			-e '{dlock:K}:history' |
			sed "s/^/$s:/"
	done
}
no_leftovers() { [[ -z $(leftovers) ]]; }
nothing_left() {
	# another engine (engine_helpers.bash): what its store keeps
	[[ ${ENGINE:-redis} == redis ]] || { store_nothing_left; return; }
	# (a killed waiter's :alive entry goes within its liveness, 6.4 s:
	# a sanitized RedLock run on a loaded machine still had one at 3 s)
	wait_until 8 no_leftovers || fail "left behind: $(leftovers | tr '\n' ' ')"
}

# majority_holds TOKEN: a majority of the servers have dlock:K = TOKEN (a
# waiter woken by the first server's message may find the release not yet
# done on another, and acquire without it: RedLock needs a majority only)
majority_holds() {
	local s n=0
	for s in "${NAMES[@]}"; do
		[[ $(rcli "$s" get dlock:K) == "$1" ]] && n=$((n + 1))
	done
	((n >= ${#NAMES[@]} / 2 + 1)) || fail "$1 holds dlock:K on $n of ${#NAMES[@]} servers"
}

# A waiter waits for its wake-up blocked in BLPOP, one connection per
# server (a running holder's BRPOP, listening for dlock release, is not
# counted).
nblocked() { rcli "$1" client list | grep -c ' flags=b[^ ]* .* cmd=blpop '; }
blocked_all() {	# blocked_all N: N waiters blocked on every server
	local s
	for s in "${NAMES[@]}"; do
		[[ $(nblocked "$s") == "$1" ]] || return 1
	done
}
queued_all() { all_are "$1" zcard '{dlock:K}:queue'; }	# queued_all N

# no_queue_left: no server keeps a --fair queue or liveness set for K.
# A server that missed a waiter's last rounds (RedLock: a majority was
# enough; a slow sanitizer build) keeps its entry until its liveness
# lapses, 6 s + 2 * --node-timeout at most: within 9 s, then.
queue_gone() { [[ $(rcli "$1" exists '{dlock:K}:queue' '{dlock:K}:alive') == 0 ]]; }
no_queue_left() {
	local s
	for s in "${NAMES[@]}"; do
		queue_gone "$s" && continue
		echo "# $s: the queue still holds $(rcli "$s" zrange '{dlock:K}:queue' 0 -1 | tr '\n' ' '), until it lapses" >&3
		wait_until 9 queue_gone "$s" ||
			fail "$s: once every waiter is done, the queue still holds: $(rcli "$s" zrange '{dlock:K}:queue' 0 -1 | tr '\n' ' ')"
	done
}

server_ms() {	# server_ms NAME: the server's clock, ms
	local t
	t=$(rcli "$1" time | tr '\n' ' ')
	set -- $t
	echo $(($1 * 1000 + $2 / 1000))
}

# lapsed NAME TOKEN: TOKEN's lease in the shared lock has run out on NAME
lapsed() {
	local score
	score=$(rcli "$1" zscore dlock:K "$2")
	[[ -n $score ]] || return 0
	((${score%.*} <= $(server_ms "$1")))
}
lapsed_all() {	# lapsed_all TOKEN
	local s
	for s in "${NAMES[@]}"; do
		lapsed "$s" "$1" || return 1
	done
}

median3() { printf '%s\n' "$@" | sort -n | sed -n 2p; }

# $T/meet MINE OTHER [RELEASE]: a command that touches MINE, then waits
# (10 s at most: exit 3) for OTHER to exist, then for RELEASE if given.
# Two of them both ending 0 ran at the same time.
write_meet() {
	cat >"$T/meet" <<'EOF'
#!/bin/sh
: >"$1"
i=0
while [ ! -e "$2" ]; do
	i=$((i + 1)); [ $i -le 200 ] || exit 3
	sleep 0.05
done
[ -z "$3" ] && exit 0
i=0
while [ ! -e "$3" ]; do
	i=$((i + 1)); [ $i -le 200 ] || exit 4
	sleep 0.05
done
EOF
	chmod +x "$T/meet"
}

# $T/stamper P: a holder's command that waits (at most 20 s: exit 4) for
# P.go, then writes the time to P.end just before it exits.
write_stamper() {
	cat >"$T/stamper" <<'EOF'
#!/bin/sh
echo $$ >"$1.pid"
: >"$1.ready"
i=0
while [ ! -e "$1.go" ]; do
	i=$((i + 1)); [ $i -le 2000 ] || exit 4
	sleep 0.01
done
date +%s%N >"$1.end"
EOF
	chmod +x "$T/stamper"
}

# start_monitor NAME FILE: every command server NAME runs, with the server's
# time, into FILE; the monitor's PID in $MONITOR (stop it with end_pids).
start_monitor() {
	redis-cli -s "$(sock "$1")" monitor >"$2" 2>&1 </dev/null 3>&- &
	MONITOR=$!
	track $MONITOR
	wait_until 5 grep -q OK "$2" || fail "MONITOR on $1 did not start"
}

# tdlock ARGS...: dlock in the foreground, but never for ever (124 on a hang)
tdlock() { timeout -k 2 "${TDLOCK_TIMEOUT:-20}" "$DLOCK" "$@"; }
