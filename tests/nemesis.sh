#!/bin/bash
# tests/nemesis.sh ENGINE: mutual exclusion on a real cluster under faults.
#
# ENGINE is etcd (3 members), zookeeper (an ensemble of 3), postgres (a
# primary and a streaming hot standby, the URL naming both with
# target_session_attrs=read-write), redis (a master, two replicas and 3
# sentinels; redis-sentinel://) or mysql (a MariaDB primary and a replica,
# the URL naming an address that moves to the primary). The cluster is
# started once, each member on a host of its own (tests/nemesis/net.bash:
# network namespaces, or 127.0.0.1 with free ports where there are none),
# and stopped by PID, pass or fail; tests/nemesis/ENGINE.bash starts it.
# Needs root (namespaces; the servers run as their own users).
#
# WORKERS workers, on two client hosts (c1, c2), each run critical sections
# under one lock until SECTIONS of theirs have committed, while a nemesis,
# after a pause of up to GAP seconds, waits for a section to be inside
# (the sections in the lock then linger until the fault is over, so that it
# hits a running job), notes its holder, and injects a fault from FAULTS
# (each kind once in a random order, then again):
#   kill      a random member SIGKILLed, started again after a while
#   leader    the same, on the leader (the primary, the master)
#   stop      a random member SIGSTOPped for a while, then SIGCONT
#   isolate   a random member cut off from every other host (its link down;
#             SIGSTOP where there are no namespaces)
#   split     a member (the leader half the time) cut off from the other
#             members, the clients still reaching it (SIGSTOP without
#             namespaces)
#   quorum    two of the three members cut off (SIGSTOPped without
#             namespaces) for longer than the TTL: the majority lost
#   client    a client host cut off from the majority (from the primary,
#             from the master and a sentinel), the other client still in
#   failover  Sentinel's SENTINEL FAILOVER; PostgreSQL's primary killed,
#             the standby promoted (pg_ctl promote), the old primary made
#             the new standby (pg_basebackup -R); MariaDB's primary killed,
#             the replica promoted and the primary's address moved to it
#   lagover   (postgres, mysql) the standby cut off from the primary (not
#             from the clients) while sections go on for a second, then the
#             primary killed and the standby promoted: a failover that
#             loses the last grants
#   sentinel  a sentinel killed and started again (redis)
# then heals it, waits for the cluster to serve again, lets the sections
# linger a third of a TTL more (their lease must be renewed on the healed
# cluster), and lets them go. A fault lasts up to DOWN_MAX seconds
# (quorum: longer than the TTL).
#
# A section (bash builtins only, but sleep: dlock's signal goes to the
# job's process group, and would kill a cat or a mkdir midway) notes when
# it entered and with which DLOCK_FENCE, lingers, then commits: the shared
# counter read, incremented and written back, its fence appended to a log;
# it notes when it left. The --on-lost signal (SIGTERM) makes it note that
# it was told and leave at once (after the commit, if it was committing).
# Checks at the end:
#   - no two sections overlapped (entered before the last one left; a
#     section told leaves when told);
#   - the counter is exact: WORKERS x SECTIONS (with MIN_FAULTS, what the
#     workers counted), one fence per commit;
#   - DLOCK_FENCE strictly increases in the order sections entered, and in
#     the order they committed;
#   - every broken holder was told: a section cut short was signalled and
#     its dlock exited 75; a dlock that exited 75 had signalled its section
#     (or the section had ended before the loss); no section left without
#     either;
#   - dlock's exit status was 0, 75, 69 (no majority, no primary) or 1
#     (-w ran out), and the section was run again for all but 0;
#   - nothing is left: no contender key, node, advisory lock, session or
#     lease of the lock on the cluster, no dlock or section process.
# For each fault it says what became of the section it hit: went on
# (committed) or told (75). Exit 0 when all checks hold, 1 otherwise, 2 when
# the cluster could not be started.
#
# The cluster: tests/nemesis/ENGINE.bash sets MEMBERS (its hosts) and
# FAULTS_DEFAULT, and defines cluster_start (sets URL and LOCK_ARGS, the
# options dlock needs there), cluster_stop (every process, by PID),
# cluster_ready (every member serves, replicas follow), cluster_leader (the
# leader, primary or master's host), cluster_left KEY (prints what is left
# of lock KEY), client_cut_from (the members a cut-off client loses),
# member_start, member_pids, member_serving MEMBER, and fault_KIND for a
# kind of its own (failover, sentinel); NETNS_FAULTS lists its kinds that
# need network namespaces (left out without them, as client is).
#
# Environment: DLOCK (./build/dlock), WORKERS (4), SECTIONS (25), TTL (3 s),
# FAULTS (the engine's list), GAP (2 s), DOWN_MAX (2 TTL), STOP_MAX (a stop
# fault's longest pause: DOWN_MAX; on an etcd that revokes on waking, 0.7
# TTL: tests/nemesis/etcd.bash), WAIT (dlock's
# -w; by default 1 to 2 TTL, at random), MIN_FAULTS (0; N: the workers go
# on past SECTIONS until N faults are done, and the counter must be what
# they counted), DURATION_MAX (600 s: the run is cut there, and fails), NET
# (auto, netns or loop), KEEP (1: keep the run's directory; it is kept
# anyway when a check fails). The README's soak, per engine:
#   SECTIONS=100 MIN_FAULTS=21 GAP=4 DOWN_MAX=4 tests/nemesis.sh etcd
set -uo pipefail
export LC_ALL=C
unset DLOCK_SERVERS DLOCK_PASSWORD DLOCK_PREFIX DLOCK_KEY DLOCK_TOKEN DLOCK_FENCE DLOCK_JOB

HERE=$(cd "$(dirname "$0")" && pwd)
ENGINE=${1:-}
DLOCK=${DLOCK:-./build/dlock}
WORKERS=${WORKERS:-4}
SECTIONS=${SECTIONS:-25}
TTL=${TTL:-3}
GAP=${GAP:-2}
DOWN_MAX=${DOWN_MAX:-$((2 * TTL))}
WAIT=${WAIT:-}
DURATION_MAX=${DURATION_MAX:-600}
KEEP=${KEEP:-0}
MIN_FAULTS=${MIN_FAULTS:-0}

die() { echo "nemesis.sh: $*" >&2; exit 2; }
[[ $TTL =~ ^[1-9][0-9]*$ ]] || die "TTL: whole seconds, not '$TTL'"
case $ENGINE in
etcd | mysql | postgres | redis | zookeeper) ;;
mariadb) ENGINE=mysql ;;
zk) ENGINE=zookeeper ;;
pg | postgresql) ENGINE=postgres ;;
sentinel) ENGINE=redis ;;
*) die "usage: tests/nemesis.sh etcd|zookeeper|postgres|redis|mysql (got '$ENGINE')" ;;
esac
[[ -x $DLOCK ]] || die "no dlock binary at '$DLOCK' (set DLOCK=path)"
DLOCK=$(realpath "$DLOCK")

now_ms() { local t=${EPOCHREALTIME//[.,]/}; echo $((10#$t / 1000)); }
wait_until() {	# wait_until SECONDS CMD...: every wait has a deadline
	local end=$(($(now_ms) + $1 * 1000)); shift
	until "$@" >/dev/null 2>&1; do
		(($(now_ms) < end)) || return 1
		sleep 0.05
	done
}
free_port() {
	python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
dead() { ! kill -0 "$1" 2>/dev/null || [[ $(ps -o stat= -p "$1") == Z* ]]; }
tenths() {	# tenths SECONDS: "2.5" -> 25 (a tenth at most)
	local i=${1%%.*} f=0
	[[ $1 == *.* ]] && f=${1#*.}
	echo $((10#${i:-0} * 10 + 10#${f:0:1}))
}
rand_s() {	# rand_s MIN MAX: seconds between, in tenths
	local a b t
	a=$(tenths "$1") b=$(tenths "$2")
	t=$((a + RANDOM % (b - a + 1)))
	printf '%d.%d' $((t / 10)) $((t % 10))
}

# A directory the servers' users (postgres) can reach: not bats' 0700 one.
T=$(mktemp -d /tmp/dlock-nemesis.XXXXXX)
chmod 755 "$T"
mkdir -p "$T/a"
WPIDS=()
FAULT_PID=
verdict_bad=2
cleanup() {
	local p
	[[ -n $FAULT_PID ]] && kill "$FAULT_PID" 2>/dev/null
	for p in "${WPIDS[@]}"; do kill "$p" 2>/dev/null; done
	# dlocks and sections of this run: their command line names $T
	for p in $(pgrep -f -- "$T/section"); do kill -KILL "$p" 2>/dev/null; done
	type cluster_stop >/dev/null 2>&1 && cluster_stop
	wait 2>/dev/null
	net_cleanup
	if ((KEEP || verdict_bad == 1)); then
		echo "nemesis.sh: the run's files are in $T"
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# shellcheck source=nemesis/net.bash
. "$HERE/nemesis/net.bash"
# shellcheck source=nemesis/etcd.bash
. "$HERE/nemesis/$ENGINE.bash"
net_init || die "cannot set up the network namespaces"
[[ $NET == netns ]] || echo "nemesis.sh: no network namespaces (${NET_WHY:-NET=$NET}): every host on 127.0.0.1, SIGSTOP for a partition, no client cut off"
FAULTS=${FAULTS:-$FAULTS_DEFAULT}
[[ $FAULTS == none ]] && FAULTS=
for n in c1 c2 adm; do node_add "$n" || die "cannot add host $n"; done
t_start=$SECONDS
cluster_start >"$T/start.log" 2>&1 || die "$ENGINE: the cluster did not start: $(tail -n 5 "$T/start.log")"
t_cluster=$((SECONDS - t_start))

# --- the section -------------------------------------------------------
echo 0 >"$T/counter"
: >"$T/fences"
cat >"$T/section" <<'EOF'
#!/bin/bash
# one critical section: $1 the run's dir, $2 the attempt, $3 a hold (s)
t=$1 a=$1/a/$2 state=in told=
lost() {	# the --on-lost signal
	told=$EPOCHREALTIME
	echo "$told" >"$a.told"
	[[ $state == committing ]] && return	# it ends with the commit
	echo "$EPOCHREALTIME" >"$a.out"
	exit 3
}
trap lost TERM
echo "$EPOCHREALTIME $DLOCK_FENCE" >"$a.in"
[[ $3 == 0 ]] || { sleep "$3" & wait $!; }
# while the nemesis strikes (up to 60 s): as long as the linger file holds
# the round it held at first (never into the next round), saying who
# lingers (PPID: the section's dlock)
if read -r round 2>/dev/null <"$t/linger"; then
	echo "$2 $PPID" >"$t/holder"
	for ((n = 0; n < 1200; n++)); do
		sleep 0.05 & wait $!
		read -r now 2>/dev/null <"$t/linger" && [[ $now == "$round" ]] || break
	done
fi
state=committing
read -r c <"$t/counter"
echo $((c + 1)) >"$t/counter"
echo "$DLOCK_FENCE $2" >>"$t/fences"
: >"$a.commit"
state=out
echo "$EPOCHREALTIME" >"$a.out"
[[ -z $told ]] || exit 3
EOF
chmod +x "$T/section"

# --- the workers -------------------------------------------------------
enough_faults() { (($(cat "$T/faults" 2>/dev/null | wc -l) >= MIN_FAULTS)); }
worker() {	# worker W HOST: until SECTIONS sections of W's committed
	local w=$1 host=$2 k=0 a=0 rc id
	while ((k < SECTIONS)) || ! enough_faults; do
		a=$((a + 1)) id=w$w-$a
		# waits of 1 to 2 TTL: new contenders keep coming, and connect
		# to the cluster as it is after a fault
		on "$host" "$DLOCK" -S "$URL" "${LOCK_ARGS[@]}" -t "$TTL" \
			-w "${WAIT:-$((1 + RANDOM % (2 * TTL)))}" \
			K "$T/section" "$T" "$id" "0.0$((RANDOM % 5))" 2>"$T/a/$id.err"
		rc=$?
		[[ -s $T/a/$id.err ]] || rm -f "$T/a/$id.err"
		echo "$id $rc" >>"$T/rcs"
		[[ -e $T/a/$id.commit ]] && k=$((k + 1))
		case $rc in
		0 | 1 | 69 | 75) ;;
		*) echo "$id: dlock exited $rc: $(head -c 300 "$T/a/$id.err" 2>/dev/null)" >>"$T/failed" ;;
		esac
		[[ -e $T/stop ]] && break
	done
	echo "$k" >"$T/w$w.commits"
}

# --- the nemesis -------------------------------------------------------
member_signal() {	# member_signal MEMBER SIGNAL
	local p
	for p in $(member_pids "$1"); do kill -"$2" "$p" 2>/dev/null; done
}
member_dead() {
	local p
	for p in $(member_pids "$1"); do dead "$p" || return 1; done
}
random_member() { echo "${MEMBERS[RANDOM % ${#MEMBERS[@]}]}"; }
# two_members: two distinct members, a majority of three
two_members() {
	local a b
	a=$(random_member)
	while b=$(random_member) && [[ $b == "$a" ]]; do :; done
	echo "$a $b"
}

# Each fault_KIND strikes, waits, heals, and prints what it hit.
strike_kill() {	# strike_kill MEMBER DOWN
	member_signal "$1" KILL
	wait_until 10 member_dead "$1"
	sleep "$2"
	member_start "$1" >>"$T/restarts.log" 2>&1
	wait_until 60 member_serving "$1" ||
		echo "fault: $1 not serving 60 s after its restart" >>"$T/failed"
}
fault_kill() {
	local m down
	m=$(random_member) down=$(rand_s 0.2 "$DOWN_MAX")
	strike_kill "$m" "$down"
	echo "$m $down"
}
fault_leader() {
	local m down
	m=$(cluster_leader) || m=$(random_member)
	down=$(rand_s 0.2 "$DOWN_MAX")
	strike_kill "$m" "$down"
	echo "$m $down"
}
fault_stop() {
	local m down
	m=$(random_member) down=$(rand_s 0.2 "${STOP_MAX:-$DOWN_MAX}")
	member_signal "$m" STOP
	sleep "$down"
	member_signal "$m" CONT
	echo "$m $down"
}
# isolate MEMBER...: cut off (SIGSTOP without namespaces); heal MEMBER...
isolate() {
	local m
	for m; do net_isolate "$m" 2>/dev/null || member_signal "$m" STOP; done
}
heal() {
	local m
	for m; do
		if [[ $NET == netns ]]; then net_rejoin "$m"; else member_signal "$m" CONT; fi
	done
}
fault_isolate() {
	local m down
	m=$(random_member) down=$(rand_s 0.2 "$DOWN_MAX")
	isolate "$m"
	sleep "$down"
	heal "$m"
	echo "$m $down"
}
fault_split() {	# a member cut off from the other members, not from clients
	local m o down others=()
	m=$(random_member) down=$(rand_s 0.2 "$DOWN_MAX")
	((RANDOM % 2)) || m=$(cluster_leader) || m=$(random_member)
	for o in "${MEMBERS[@]}"; do [[ $o == "$m" ]] || others+=("$o"); done
	if [[ $NET == netns ]]; then
		net_cut "$m" "${others[@]}" || echo "fault: cannot cut $m from ${others[*]}" >>"$T/failed"
	else
		member_signal "$m" STOP
	fi
	sleep "$down"
	if [[ $NET == netns ]]; then net_heal "$m"; else member_signal "$m" CONT; fi
	echo "$m/$(IFS=+; echo "${others[*]}") $down"
}
fault_quorum() {
	local ms down
	ms=$(two_members) down=$(rand_s "$((TTL + 1))" "$((TTL + DOWN_MAX))")
	# shellcheck disable=SC2086
	isolate $ms
	sleep "$down"
	# shellcheck disable=SC2086
	heal $ms
	echo "${ms/ /+} $down"
}
fault_client() {	# needs namespaces: left out of FAULTS without
	local c down peers
	c=c$((RANDOM % 2 + 1)) down=$(rand_s 0.2 "$DOWN_MAX")
	peers=$(client_cut_from)
	# shellcheck disable=SC2086
	net_cut "$c" $peers || echo "fault: cannot cut $c from $peers" >>"$T/failed"
	sleep "$down"
	net_heal "$c"
	echo "$c/${peers// /+} $down"
}

holder_inside() {
	local id
	read -r id _ 2>/dev/null <"$T/holder" && [[ -n $id && ! -e $T/a/$id.out ]]
}
# holder_members ID PID: the members the holder's dlock has a connection
# to (its host's sockets), + between them, - for none
holder_members() {
	local w=${1%%-*} conns m f out=
	w=${w#w}
	conns=$(on "c$((2 - w % 2))" ss -tnpH state established 2>/dev/null |
		awk -v p="pid=$2," 'index($0, p) { print $4 }')
	for m in "${MEMBERS[@]}"; do
		for f in "$T/net/$m".*.port; do
			grep -qxF "$(node_ip "$m"):$(<"$f")" <<<"$conns" &&
				{ out+=${out:++}$m; break; }
		done
	done
	# an address of the engine's own (one that moves between members)
	if [[ -z $out ]] && type member_at >/dev/null 2>&1; then
		for f in $conns; do out=$(member_at "$f") && break; done
	fi
	echo "${out:--}"
}
holder_inside_or_stop() { [[ -e $T/stop ]] || holder_inside; }
# linger_on: a new round of lingering; linger_off: none
linger_on() {
	local round=0
	read -r round 2>/dev/null <"$T/linger.round"
	echo $((round + 1)) >"$T/linger.round"
	echo $((round + 1)) >"$T/linger.new"
	mv -f "$T/linger.new" "$T/linger"
}
linger_off() { rm -f "$T/linger"; }

faults() {
	local deck=() kind holder hpid hm leader start what t
	while [[ ! -e $T/stop ]]; do
		sleep "$(rand_s 0 "$GAP")"
		[[ -e $T/stop ]] && break
		# each kind once, in a random order, then again
		((${#deck[@]})) || mapfile -t deck < <(tr , '\n' <<<"$FAULTS" | shuf)
		kind=${deck[0]} deck=("${deck[@]:1}")
		rm -f "$T/holder"
		linger_on
		holder=- hm=-
		wait_until 10 holder_inside_or_stop
		[[ -e $T/stop ]] && break
		if holder_inside; then
			read -r holder hpid <"$T/holder"
			hm=$(holder_members "$holder" "$hpid")
		fi
		leader=$(cluster_leader) || leader=-
		start=$EPOCHREALTIME
		what=$("fault_$kind")
		if ! wait_until 60 cluster_ready; then
			echo "fault $kind $what: the cluster does not serve 60 s after" >>"$T/failed"
		fi
		echo "$start $kind $holder $hm $leader $what" >>"$T/faults"
		# the lingering sections renew on the healed cluster (at TTL/3)
		t=$((TTL * 10 / 3 + 5))
		sleep "$((t / 10)).$((t % 10))"
		linger_off
	done
}

IFS=, read -ra kinds <<<"$FAULTS"
for k in "${kinds[@]}"; do
	type "fault_$k" >/dev/null 2>&1 || die "$ENGINE: no fault '$k'"
	if [[ $NET != netns && " client ${NETNS_FAULTS:-} " == *" $k "* ]]; then
		echo "nemesis.sh: no fault '$k' without network namespaces"
		FAULTS=$(tr , '\n' <<<"$FAULTS" | grep -vx "$k" | paste -sd,)
	fi
done

for ((w = 1; w <= WORKERS; w++)); do
	worker "$w" "c$((2 - w % 2))" &
	WPIDS+=($!)
done
[[ -n $FAULTS ]] && { faults & FAULT_PID=$!; }

t0=$SECONDS
cut=0
for p in "${WPIDS[@]}"; do
	while kill -0 "$p" 2>/dev/null; do
		if ((SECONDS - t0 > DURATION_MAX)); then cut=1; break 2; fi
		sleep 0.2
	done
done
: >"$T/stop"
linger_off
if [[ -n $FAULT_PID ]]; then
	wait_until 120 dead "$FAULT_PID" || kill "$FAULT_PID" 2>/dev/null
	wait "$FAULT_PID" 2>/dev/null
	FAULT_PID=
fi
for p in "${WPIDS[@]}"; do
	wait_until 30 dead "$p" || kill "$p" 2>/dev/null
done
elapsed=$((SECONDS - t0))
# every member up, continued and in reach
net_heal_all
for m in "${MEMBERS[@]}"; do
	member_signal "$m" CONT
	member_dead "$m" && member_start "$m" >>"$T/restarts.log" 2>&1
done
wait_until 60 cluster_ready || echo "the cluster does not serve at the end" >>"$T/failed"

# --- the verdict -------------------------------------------------------
# One line per attempt: id rc entered fence left told committed
A=$T/a
while read -r id rc; do
	in=- fence=- out=- told=- commit=0
	[[ -e $A/$id.in ]] && read -r in fence <"$A/$id.in"
	[[ -e $A/$id.out ]] && read -r out <"$A/$id.out"
	[[ -e $A/$id.told ]] && read -r told <"$A/$id.told"
	[[ -e $A/$id.commit ]] && commit=1
	echo "$id $rc $in ${fence:--} $out $told $commit"
done <"$T/rcs" >"$T/attempts"

bad=0
fail() { echo "  FAIL: $*"; bad=1; }
# WORKERS x SECTIONS, or, with MIN_FAULTS, what the workers counted
want=$(cat "$T"/w*.commits 2>/dev/null | awk '{ n += $1 } END { print n + 0 }')
((MIN_FAULTS)) || want=$((WORKERS * SECTIONS))
read -r got <"$T/counter"
n_commits=$(wc -l <"$T/fences")
n_attempts=$(wc -l <"$T/attempts")
n_faults=$(cat "$T/faults" 2>/dev/null | wc -l)
printf 'nemesis.sh %s: %d workers x %d sections, TTL %s s, %s hosts (%s)\n' \
	"$ENGINE" "$WORKERS" "$SECTIONS" "$TTL" "$NET" "$URL"
printf '  cluster started in %d s; %d s of sections, %d attempts, %d faults (%s)\n' \
	"$t_cluster" "$elapsed" "$n_attempts" "$n_faults" "$FAULTS"
awk '{ n[$2]++ } END { for (rc in n) printf "  dlock exited %s: %d\n", rc, n[rc] }' \
	"$T/attempts" | sort
((cut)) && fail "cut at DURATION_MAX=$DURATION_MAX s"
[[ -s $T/failed ]] && { sed 's/^/  FAIL: /' "$T/failed" | head -n 20; bad=1; }

# Overlaps: in the order sections entered, each after the last one left
# (a section that never said it left is inside for ever).
overlaps=$(awk '$3 != "-"' "$T/attempts" | sort -k3,3n | awk '
	{ out = ($5 == "-") ? 1e18 : $5 + 0 }
	NR > 1 && $3 + 0 < last_out { printf "%s entered %.3f s before %s left; ", $1, last_out - $3, last_id; n++ }
	out > last_out || NR == 1 { last_out = out; last_id = $1 }
	END { print n + 0 }')
if [[ $overlaps == 0 ]]; then echo "  no overlap"; else fail "overlapping sections: $overlaps"; fi

if ((got == want && n_commits == want)); then
	echo "  counter $got, exact"
else
	fail "counter $got, $n_commits commits, want $want"
fi
entry_order=$(awk '$3 != "-"' "$T/attempts" | sort -k3,3n | awk '
	NR > 1 && $4 + 0 <= f { printf "%s fence %s after %s fence %s; ", $1, $4, id, f; n++ }
	{ f = $4 + 0; id = $1 } END { print n + 0 }')
commit_order=$(awk 'NR > 1 && $1 + 0 <= f { n++ } { f = $1 + 0 } END { print n + 0 }' "$T/fences")
if [[ $entry_order == 0 && $commit_order == 0 ]]; then
	echo "  fences strictly increase over $(awk '$3 != "-"' "$T/attempts" | wc -l) sections entered, $n_commits committed"
else
	fail "fences out of order: entry order: $entry_order; commit order: $commit_order"
fi

# Told: told => 75; 75 => told, or nothing entered, or committed before
# the loss; entered => left (committed or told).
told_bad=$(awk '
	$6 != "-" && $2 != 75 { printf "%s told but exited %s; ", $1, $2; n++ }
	$2 == 75 && $6 == "-" && $3 != "-" && $7 == 0 { printf "%s exited 75, its section neither told nor done; ", $1; n++ }
	$3 != "-" && $7 == 0 && $6 == "-" { printf "%s cut short, never told; ", $1; n++ }
	END { print n + 0 }' "$T/attempts")
n_told=$(awk '$6 != "-"' "$T/attempts" | wc -l)
n_75=$(awk '$2 == 75' "$T/attempts" | wc -l)
n_late=$(awk '$2 == 75 && $6 == "-" && $7 == 1' "$T/attempts" | wc -l)
if [[ $told_bad == 0 ]]; then
	echo "  every broken holder told: $n_told sections told, $n_75 exited 75 ($n_late after their section ended)"
else
	fail "holders not told: $told_bad"
fi

# What each fault did to the section it hit, by what it hit: the leader
# (the primary, the master's host), the member the holder's dlock was
# connected to, another member, a majority, the holder's own host (cut
# off from the majority), another client's.
fault_class() {	# fault_class KIND HOLDER HOLDER-MEMBERS LEADER VICTIM
	local kind=$1 holder=$2 hm=$3 leader=$4 victim=${5%%/*} w m
	w=${holder%%-*} w=${w#w}
	case $kind in
	quorum) echo "a majority lost" ;;
	failover) echo "failover" ;;
	lagover) echo "failover to a replica that lags" ;;
	sentinel) echo "a sentinel lost" ;;
	client)
		if [[ $holder != - && $victim == "c$((2 - w % 2))" ]]; then
			echo "the holder cut off from the majority"
		else
			echo "another client cut off"
		fi ;;
	*)
		victim=${victim%%>*}
		if [[ $victim == "$leader" ]]; then
			[[ +$hm+ == *+$victim+* ]] && echo "the leader lost, under the holder" ||
				echo "the leader lost"
		elif [[ +$hm+ == *+$victim+* ]]; then
			echo "a member lost under the holder"
		else
			echo "another member lost"
		fi ;;
	esac
}
if [[ -s $T/faults ]]; then
	echo "  faults: $(awk '{ print $2 }' "$T/faults" | sort | uniq -c |
		awk '{ printf "%s%s %d", (NR > 1 ? ", " : ""), $2, $1 }')"
	while read -r start kind holder hm leader victim down; do
		if [[ $holder == - ]]; then
			outcome=idle
		elif [[ -e $A/$holder.told ]]; then
			outcome=told
		elif [[ -e $A/$holder.commit ]]; then
			outcome=on
		else
			outcome=lost
		fi
		echo "$outcome $(fault_class "$kind" "$holder" "$hm" "$leader" "$victim")"
	done <"$T/faults" | sort | awk '
		function name(o) { return o == "on" ? "went on" : o == "told" ? "told (75)" : o == "idle" ? "no section inside" : "neither" }
		{ o = $1; $1 = ""; c = substr($0, 2); n[c]++; k[c, o]++ }
		END {
			split("on told idle lost", os, " ")
			for (c in n) {
				line = ""
				for (i = 1; i <= 4; i++) if (k[c, os[i]]) line = line sprintf("%s %s %d", line == "" ? "" : ",", name(os[i]), k[c, os[i]])
				printf "  %-38s %3d:%s\n", c, n[c], line
			}
		}' | sort
fi

left() { cluster_left K; }
no_left() { [[ -z $(left) ]]; }
if wait_until $((TTL + 10)) no_left; then echo "  nothing left on the cluster"; else
	fail "left on the cluster: $(left | tr '\n' ' ')"; fi
if pgrep -f -- "$T/section" >/dev/null; then
	fail "processes left: $(pgrep -af -- "$T/section" | head -n 3)"
else
	echo "  no process left"
fi
verdict_bad=$bad
exit $bad
