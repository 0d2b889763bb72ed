# helpers.bash - shared by tests/*.bats: real Redis servers in the test's
# temp dir, background jobs tracked by PID and stopped in teardown, a deadline
# on every wait.
#
# A .bats file does `load helpers`, then calls common_setup in setup() and
# stop_all in teardown() (the defaults below do just that).
#
# Beware: bats 1.8's `run` sets a global `i` (bats_version_lt), so a
# `for ((i = ...))` loop around `run` never ends: name the counter otherwise.

bats_require_minimum_version 1.5.0
load /usr/lib/bats/bats-support/load
load /usr/lib/bats/bats-assert/load

: "${DLOCK:=$BATS_TEST_DIRNAME/../build/dlock}"
: "${PYTHON:=/usr/bin/python3}"	# the Debian python3 that has python3-redis
export DLOCK PYTHON

dlock() { "$DLOCK" "$@"; }

now_ms() {
	local t=${EPOCHREALTIME//[.,]/}
	echo $((10#$t / 1000))
}

# wait_until SECONDS CMD...: every wait has a deadline. Asked again after
# 10, 20, 40, then every 50 ms: most conditions hold within a few ms (a
# server up, a process gone), and a fixed 50 ms pause cost each of them
# one; a long wait asks no more often than before.
wait_until() {
	local end=$(($(now_ms) + $1 * 1000)) pause=0.01; shift
	until "$@"; do
		(($(now_ms) < end)) || return 1
		sleep "$pause"
		case $pause in 0.01) pause=0.02 ;; 0.02) pause=0.04 ;; *) pause=0.05 ;; esac
	done
}

# DLOCK_TEST_STRICT=1 (CI) turns a skip for want of a facility into a failure.
skip_unless_strict() {
	[[ ${DLOCK_TEST_STRICT:-0} != 1 ]] || fail "DLOCK_TEST_STRICT: cannot skip: $*"
	skip "$*"
}

common_setup() {
	T=$BATS_TEST_TMPDIR
	[[ -x $DLOCK ]] || fail "DLOCK=$DLOCK is not an executable (build first)"
	# Nothing from the caller's environment or home may choose servers.
	unset DLOCK_SERVERS DLOCK_PASSWORD DLOCK_PREFIX DLOCK_KEY DLOCK_TOKEN DLOCK_FENCE
	export XDG_CONFIG_HOME=$T/xdg
	# The suite's default --connect-budget is 1 s, not the 10 s users get:
	# dozens of tests ask a server that is down for its 69, and 10 s of
	# tries each took a quarter of CI's time. fleet.bats and transient.bats
	# test the 10 s default (no_suite_budget); the user's config file is
	# the users' way to set it too. A test that writes this file replaces it.
	mkdir -p "$XDG_CONFIG_HOME/dlock"
	echo 'connect-budget = 1' >"$XDG_CONFIG_HOME/dlock/config"
	write_job
}

# no_suite_budget: this test gets dlock's own default --connect-budget
no_suite_budget() { rm -f "$XDG_CONFIG_HOME/dlock/config"; }

setup() { common_setup; }
teardown() { stop_all; }

# ---- processes ----------------------------------------------------------

track() { echo "$@" >>"$T/pids"; }	# stop_all ends these

alive() {	# alive PID: running (a zombie is dead)
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	[[ ${s:0:1} != Z ]]
}
dead() { ! alive "$1"; }

# end_pids SIGNAL PID...: signal, wait (5 s), SIGKILL what is left, reap.
end_pids() {
	local sig=$1 pid; shift
	for pid; do
		{ alive "$pid" && kill -"$sig" "$pid"; } 2>/dev/null || true
	done
	for pid; do
		wait_until 5 dead "$pid" || kill -KILL "$pid" 2>/dev/null || true
	done
	for pid; do
		wait_until 5 dead "$pid" || echo "# pid $pid survives SIGKILL" >&3
		wait "$pid" 2>/dev/null || true
	done
}

# stop_all: teardown, pass or fail. Servers are continued first (a test may
# have SIGSTOPped one) so that jobs ending now can still release; jobs are
# ended before the servers.
stop_all() {
	local f pids=() servers=()
	[[ -n ${T:-} ]] || return 0
	for f in "$T"/*/pid; do
		[[ -e $f ]] && servers+=("$(<"$f")")
	done
	for f in "${servers[@]}"; do kill -CONT "$f" 2>/dev/null || true; done
	[[ -e $T/pids ]] && read -r -d '' -a pids <"$T/pids" || true
	((${#pids[@]} == 0)) || end_pids TERM "${pids[@]}"
	((${#servers[@]} == 0)) || end_pids TERM "${servers[@]}"
}

# ---- Redis --------------------------------------------------------------

free_port() {	# a TCP port on 127.0.0.1 that nobody listens on (now)
	"$PYTHON" -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

rcli() {	# rcli NAME ARGS...: redis-cli on server NAME's unix socket
	local d=$T/$1; shift
	if [[ -e $d/pass ]]; then
		REDISCLI_AUTH=$(<"$d/pass") redis-cli -s "$d/sock" "$@"
	else
		redis-cli -s "$d/sock" "$@"
	fi
}

sock() { echo "$T/$1/sock"; }
sock_url() { echo "unix:$T/$1/sock"; }
tcp_url() { echo "redis://127.0.0.1:$(<"$T/$1/port")"; }

# with_hosts CMD...: CMD with $T/hosts as its /etc/hosts, in a private
# mount namespace (the machine's file is left alone); skips where there is
# none (unshare -m needs root). Host names of a test's own, with several
# addresses: glibc sorts 127.0.0.1 before 127.0.0.2 (longest prefix).
with_hosts() { unshare -m sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$T/hosts" "$@"; }
need_hosts() {
	unshare -m true 2>/dev/null ||
		skip_unless_strict "no private mount namespace here (unshare -m needs root)"
}

up() { [[ $(rcli "$1" ping 2>/dev/null) == PONG ]]; }
up_or_dead() { up "$1" || dead "$(<"$T/$1/pid")"; }

# _start_redis NAME PORT [ARGS...]: returns 1 when the server died at start
_start_redis() {
	local name=$1 port=$2 d=$T/$1 i j; shift 2
	# a second server of one name would leave the first unstopped (its
	# pid file overwritten): a test's mistake, said at once
	[[ ! -s $d/pid ]] || dead "$(<"$d/pid")" ||
		{ fail "redis $name is running already (pid $(<"$d/pid")): stop it first, or use another name"; return 1; }
	mkdir -p "$d"
	((${#d} < 100)) || fail "socket path too long for a unix socket: $d/sock"
	rm -f "$d/pass"
	for ((i = 1; i < $#; i++)); do
		[[ ${!i} == --requirepass ]] && { j=$((i + 1)); echo "${!j}" >"$d/pass"; }
	done
	# 3>&-: else bats waits for the server to exit
	redis-server --port "$port" --bind 127.0.0.1 --unixsocket "$d/sock" \
		--unixsocketperm 700 --dir "$d" --save '' --appendonly no "$@" \
		>"$d/log" 2>&1 </dev/null 3>&- &
	echo $! >"$d/pid"
	if ! wait_until 5 up_or_dead "$name"; then
		kill "$(<"$d/pid")" 2>/dev/null	# not left behind by a retry
		fail "redis $name: no PONG in 5 s"
		return 1
	fi
	up "$name"
}

start_redis() {	# start_redis NAME [redis-server ARGS...]: unix socket only
	local name=$1; shift
	_start_redis "$name" 0 "$@" || fail "redis $name did not start: $(cat "$T/$name/log")"
}

start_redis_tcp() {	# start_redis_tcp NAME [ARGS...]: also TCP, port in $T/NAME/port
	local name=$1 try port; shift
	for try in 1 2 3; do	# another process may take the free port first
		port=$(free_port)
		if _start_redis "$name" "$port" "$@"; then
			echo "$port" >"$T/$name/port"
			return 0
		fi
	done
	fail "redis $name did not start on a TCP port: $(cat "$T/$name/log")"
}

# start_redis_tls NAME [ARGS...]: TLS on a free port (in $T/NAME/port) and
# no plain TCP, with the certificates in $TLS (tests/tls.bats makes them:
# ca.pem, server.pem, server.key); the unix socket stays plain, for rcli.
# Later ARGS override (--tls-auth-clients yes, another --tls-cert-file).
# Skips when this redis-server was built without TLS.
start_redis_tls() {
	local name=$1 try port; shift
	for try in 1 2 3; do
		port=$(free_port)
		if _start_redis "$name" 0 --tls-port "$port" \
			--tls-cert-file "$TLS/server.pem" --tls-key-file "$TLS/server.key" \
			--tls-ca-cert-file "$TLS/ca.pem" --tls-auth-clients no "$@"; then
			echo "$port" >"$T/$name/port"
			return 0
		fi
		# a build without TLS refuses the tls-* settings, naming them
		# (another process may have taken the port: try another)
		grep -qi tls "$T/$name/log" && ! grep -q 'Failed listening' "$T/$name/log" &&
			skip_unless_strict "redis-server has no TLS: $(grep -i tls "$T/$name/log" | head -n 1)"
	done
	fail "redis $name did not start with TLS: $(cat "$T/$name/log")"
}

server_pid() { cat "$T/$1/pid"; }

key_exists() { [[ $(rcli "$1" exists "$2") == 1 ]]; }	# key_exists NAME KEY
key_gone() { [[ $(rcli "$1" exists "$2") == 0 ]]; }
all_keys() { rcli "$1" --scan | sort; }	# all_keys NAME: every key, sorted
# counter NAME [KEY]: the fencing counter of lock KEY (K) on server NAME,
# the digits its key begins with (an exclusive holder's info follows)
counter() { rcli "$1" get "{dlock:${2:-K}}:fence" | cut -f1; }
# holder_info NAME TOKEN [KEY]: the holder info of TOKEN as the scripts keep
# it: an exclusive holder's beside the fencing counter, a shared one's in
# the hash (src/redis/lua/lib/holder.lua)
holder_info() {
	local v
	v=$(rcli "$1" get "{dlock:${3:-K}}:fence")
	if [[ $(cut -f2 <<<"$v") == "$2" ]]; then
		cut -f3- <<<"$v"
	else
		rcli "$1" hget "{dlock:${3:-K}}:owner" "$2"
	fi
}
nclients() { echo $(($(rcli "$1" client list | wc -l) - 1)); }	# not counting ours
more_clients() { (($(nclients "$1") > $2)); }	# more_clients NAME N

# ---- jobs run under dlock -----------------------------------------------

# $T/job P [MODE]: the command the background holders run. Writes P.pid,
# P.env (its DLOCK_* variables), then P.ready; ends 0 when P.release exists
# (99 after 60 s). A caught signal is appended to P.sig and, in MODE "exit"
# (default), ends the job with TERM 11, INT 12, HUP 13, QUIT 14, USR1 15.
# MODE "stay": signals are recorded only. MODE "deaf": SIGTERM is ignored.
# MODE "group": like exit, and a second job (P.gc) runs in the background,
# so that the process group's fate can be seen.
write_job() {
	cat >"$T/job" <<'EOF'
#!/bin/sh
p=$1 mode=${2:-exit}
on() {	# written whole, then renamed: whoever sees $p.sig sees its words
	{ cat "$p.sig" 2>/dev/null; echo "$1"; } >"$p.sig.new" && mv "$p.sig.new" "$p.sig"
	[ "$mode" = stay ] || exit "$2"
}
trap 'on TERM 11' TERM
trap 'on INT 12' INT
trap 'on HUP 13' HUP
trap 'on QUIT 14' QUIT
trap 'on USR1 15' USR1
[ "$mode" = deaf ] && trap '' TERM
if [ "$mode" = group ]; then
	"$0" "$p.gc" exit &
	i=0
	while [ ! -e "$p.gc.ready" ]; do
		i=$((i + 1)); [ $i -le 200 ] || exit 98
		sleep 0.05
	done
fi
echo $$ >"$p.pid"
env | grep '^DLOCK_' >"$p.env"
: >"$p.ready"
i=0
while [ ! -e "$p.release" ]; do
	i=$((i + 1)); [ $i -le 1200 ] || exit 99
	sleep 0.05
done
exit 0
EOF
	chmod +x "$T/job"
}

# start_bg ID DLOCK-ARGS...: dlock in the background, as a terminal would
# start it (SIGINT and SIGQUIT not ignored, nor SIGHUP and SIGTERM, which a
# suite started under nohup would otherwise pass on ignored); stdout/stderr
# in $T/ID.out and $T/ID.err, dlock's PID in $T/ID.dlock.
start_bg() {
	local id=$1; shift
	env --default-signal=INT,QUIT,HUP,TERM "$DLOCK" "$@" \
		>"$T/$id.out" 2>"$T/$id.err" </dev/null 3>&- &
	echo $! >"$T/$id.dlock"
	track $!
}

# hold ID DLOCK-ARGS...: start_bg ID DLOCK-ARGS... $T/job $T/ID $JOB_MODE
hold() {
	local id=$1; shift
	start_bg "$id" "$@" "$T/job" "$T/$id" "${JOB_MODE:-exit}"
}

# wait_ready ID [SECONDS]: the job runs (so dlock holds the lock)
wait_ready() {
	local id=$1
	wait_until "${2:-5}" test -e "$T/$id.ready" ||
		fail "$id: the command did not start: $(cat "$T/$id.err")"
	track "$(<"$T/$id.pid")"
	[[ ! -e $T/$id.gc.pid ]] || track "$(<"$T/$id.gc.pid")"
}

job_var() { sed -n "s/^$2=//p" "$T/$1.env"; }	# job_var ID DLOCK_TOKEN

# reap ID [SECONDS]: wait for background dlock ID to end; status in $bg_status
reap() {
	local id=$1 pid
	pid=$(<"$T/$id.dlock")
	wait_until "${2:-10}" dead "$pid" ||
		fail "$id: dlock still running after ${2:-10} s: $(cat "$T/$id.err")"
	bg_status=0
	wait "$pid" || bg_status=$?
}

finish() {	# finish ID [SECONDS]: let the job end, reap its dlock
	touch "$T/$1.release"
	reap "$@"
}

# section_waiters N URL KEY: N dlocks waiting (-w 60) for KEY, each
# running a short section that notes an overlap ($T/overlap) and its pid
# ($T/ran); their stderr in $T/poll.err, their pids in section_pids.
section_waiters() {
	local i
	section_pids=()
	for ((i = 0; i < $1; i++)); do
		"$DLOCK" -S "$2" -w 60 "$3" sh -c \
			'mkdir "$0/in" 2>/dev/null || touch "$0/overlap"; echo "$$" >>"$0/ran"; sleep 0.1; rmdir "$0/in"' \
			"$T" 2>>"$T/poll.err" &
		section_pids+=($!)
		track $!
	done
}

# wait_all PID...: waits for each background PID (the shell's own
# children: not in a $(...)); n_failed says how many did not exit 0
wait_all() {
	local i
	n_failed=0
	for i in "$@"; do wait "$i" || n_failed=$((n_failed + 1)); done
}

# sections_ran_once N: every one of section_waiters' N dlocks exits 0,
# each ran its section once, never two at once.
sections_ran_once() {
	wait_all "${section_pids[@]}"
	((n_failed == 0)) || fail "$n_failed waiters failed: $(cat "$T/poll.err")"
	[[ ! -e $T/overlap ]] || fail "two waiters ran at once"
	assert_equal "$(sort -u "$T/ran" | wc -l) $(wc -l <"$T/ran")" "$1 $1"
}

# $T/tjob P [CMD...]: stamps P.start (µs), runs CMD, then waits for
# P.release; SIGTERM stamps P.told and ends it (11). CMD runs in the
# background and is waited for, as sh runs a trap only once a foreground
# command ends: a sanitized dlock's leak check at exit can take seconds
# under load, past --kill-after.
write_tjob() {
	cat >"$T/tjob" <<'EOS'
#!/bin/sh
p=$1; shift
stamp() { date +%s%6N >"$p.$1"; }
trap 'stamp told; exit 11' TERM
stamp start
if [ $# -gt 0 ]; then "$@" >/dev/null & wait $!; fi
: >"$p.ready"
i=0
while [ ! -e "$p.release" ]; do
	i=$((i + 1)); [ $i -le 3000 ] || exit 99
	sleep 0.01
done
EOS
	chmod +x "$T/tjob"
}

# break_window SERVER KEY [OPTION...]: a lock broken right after its
# grant, WINDOW_RUNS times (3; more to measure). The caller's window_hold
# starts b, a holder of KEY that lets go at $T/b.release; h waits for KEY
# with a job that breaks the lock (release --force) as it starts, w waits
# behind h (OPTIONs for both: --fair); window_waiting N says that N wait.
# Once b lets go, h must be told (75) within 100 ms of w's job start.
break_window() {
	local server=$1 key=$2 run worst=-999999 ms
	shift 2
	write_tjob
	for run in $(seq "${WINDOW_RUNS:-3}"); do
		rm -f "$T"/[bhw].*
		window_hold
		start_bg h -S "$server" "$@" -t 30 "$key" "$T/tjob" "$T/h" \
			"$DLOCK" -S "$server" release --force "$key"
		wait_until 5 window_waiting 1 || fail "h does not wait: $(cat "$T/h.err")"
		start_bg w -S "$server" "$@" -t 30 -w 30 "$key" "$T/tjob" "$T/w"
		wait_until 5 window_waiting 2 || fail "w does not wait: $(cat "$T/w.err")"
		touch "$T/b.release"
		wait_until 10 eval 'test -e "$T/h.told" && test -e "$T/w.start"' ||
			fail "run $run: $(cat "$T/h.err" "$T/w.err")"
		reap h
		assert_equal "$bg_status" 75
		touch "$T/w.release"
		reap w
		assert_equal "$bg_status" 0
		reap b
		# > 0: the next job started that long before the holder was told
		ms=$((($(<"$T/h.told") - $(<"$T/w.start")) / 1000))
		echo "# run $run: the next job started $ms ms before the holder was told" >&3
		((ms > worst)) && worst=$ms
	done
	((worst < 100)) || fail "the next job started up to $worst ms before the holder was told"
}
