#!/usr/bin/env bats
# etcd.bats - the etcd engine on real etcd 3.4 servers (Debian's
# etcd-server): concurrency.Mutex's layout, so that `etcdctl lock` and
# dlock exclude each other both ways; the lease kept alive and its loss
# (revoked, key deleted, server stopped); fences; -s, --limit; status,
# history, release --force, acquire/extend/release; a three-member
# cluster losing members; authentication and TLS. One server for the
# file, started in setup_file; the cluster, TLS and auth servers in their
# own tests; every one stopped, pass or fail.

load helpers
load etcd_helpers

setup_file() {
	start_etcd "$BATS_FILE_TMPDIR" e1 || return 1
	export EP
	EP=$(<"$BATS_FILE_TMPDIR/e1/ep")
	export S=etcd://$EP
}

teardown_file() {
	stop_etcd "$BATS_FILE_TMPDIR" e1
}

setup() {
	common_setup
	# a name per test: no test sees another's keys
	K=t$BATS_TEST_NUMBER
}

teardown() {
	stop_all
	[[ -z ${CLUSTER:-} ]] || stop_etcd "$T" $CLUSTER
	# A lease a failed test left (one whose revoke timed out on a loaded
	# machine lingers for its TTL) must not fail the next tests' checks
	# too: it is this test's failure alone.
	local id
	for id in $(lock_leases 2>/dev/null); do ectl lease revoke "$id" >/dev/null 2>&1 || :; done
}

# envjob ID: the command of background holders here: its ETCD_* and
# DLOCK_* variables in ID.env, then ID.ready; ends when ID.release exists
envjob() {
	cat >"$T/envjob" <<'EOS'
#!/bin/sh
env | grep -E '^(DLOCK|ETCD)_' >"$1.env"
: >"$1.ready"
i=0
while [ ! -e "$1.release" ]; do
	i=$((i + 1)); [ $i -le 1200 ] || exit 99
	sleep 0.05
done
EOS
	chmod +x "$T/envjob"
}

# ---- URLs and options -------------------------------------------------------

@test "bad etcd URLs and options etcd cannot honour are usage errors (64)" {
	run -64 --separate-stderr dlock -S etcd:// k true
	[[ $stderr == *"missing host"* ]]
	run -64 dlock -S etcd://127.0.0.1:99999 k true
	run -64 dlock -S etcd://127.0.0.1:2379/path k true
	run -64 dlock -S 'etcd://127.0.0.1:2379?x=1' k true
	run -64 dlock -S etcd://h1:1,,h2:2 k true
	run -64 --separate-stderr dlock -S 'etcd://:secret@127.0.0.1:1' k true
	[[ $stderr != *secret* ]]
	run -64 --separate-stderr dlock -S etcd://127.0.0.1:1 -S etcd://127.0.0.1:2 k true
	[[ $stderr == *"one server URL"* ]]
	run -64 --separate-stderr dlock -S etcd://127.0.0.1:1 --wait-replicas 1 k true
	[[ $stderr == *"etcd cannot --wait-replicas"* ]]
	run -64 dlock -S etcd://127.0.0.1:1 --tls-ca /dev/null k true
	run -64 dlock -S etcd://127.0.0.1:1 -S redis://127.0.0.1:1 k true
}

# etcd_cluster_id EP: the cluster's ID in hex, as dlock names it
etcd_cluster_id() {
	etcdctl --endpoints="$1" endpoint status -w json |
		sed -n 's/.*"cluster_id":\([0-9]*\).*/\1/p' | { read -r id; printf '%x' "$id"; }
}
# proxy NAME PORT: a TCP proxy to 127.0.0.1:PORT, its port in $T/NAME.port
proxy() {
	local p; p=$(free_port)
	"$PYTHON" "$BATS_TEST_DIRNAME/tcp_proxy.py" "$p" "$2" >"$T/$1.log" 2>&1 </dev/null 3>&- &
	echo $! >"$T/$1.pid"
	track $!
	echo "$p" >"$T/$1.port"
	wait_until 5 eval "(exec 9<>/dev/tcp/127.0.0.1/$p) 2>/dev/null"
}

# One URL names one cluster. Members of two (here single-member) clusters
# in one URL let each host lock in the cluster of the first member it
# reached: two hosts listing them in other orders both held the lock
# (review1, on main). Every answer's header names its cluster.
@test "members of two clusters in one URL: 64 naming both, in either order, nothing taken in either" {
	start_etcd "$T" c2
	CLUSTER=c2
	local b id1 id2
	b=$(<"$T/c2/ep")
	id1=$(etcd_cluster_id "$EP") id2=$(etcd_cluster_id "$b")
	[[ $id1 != "$id2" ]] || fail "one cluster ID for two clusters: $id1"
	run -64 --separate-stderr dlock -S "etcd://$EP,$b" -n "$K" touch "$T/ran"
	assert_equal "$stderr" "dlock: $K: etcd://$b is a member of etcd cluster $id2, etcd://$EP of cluster $id1: one URL, one cluster"
	run -64 --separate-stderr dlock -S "etcd://$b,$EP" -n "$K" touch "$T/ran"
	assert_equal "$stderr" "dlock: $K: etcd://$EP is a member of etcd cluster $id1, etcd://$b of cluster $id2: one URL, one cluster"
	run -64 dlock status -S "etcd://$b,$EP" "$K"
	[[ ! -e $T/ran ]] || fail "a command ran"
	no_lock_key "$K"
	no_lease_left
	[[ -z $(etcdctl --endpoints="$b" get --prefix dlock: --keys-only) ]] || fail "keys left in the second cluster"
	# the review's two hosts: one holds through the right URL, the other
	# names the other cluster first
	envjob
	start_bg h -S "$S" "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	run -64 dlock -S "etcd://$b,$EP" -n "$K" touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "the second host ran its job"
	touch "$T/h.release"
	reap h
	assert_equal "$bg_status" 0
}

# The member list names the members by the client URLs they advertise:
# one reached another way (a proxy, a NAT) is asked its cluster, and kept.
@test "a member of the same cluster behind a proxy is asked its cluster and accepted" {
	proxy p "${EP#*:}"
	run -0 --separate-stderr dlock -S "etcd://$EP,127.0.0.1:$(<"$T/p.port")" "$K" true
	run -0 --separate-stderr dlock -S "etcd://127.0.0.1:$(<"$T/p.port"),$EP" "$K" true
	assert_equal "$stderr" ""
}

# A member that cannot say its cluster at the start (the way there hung)
# is compared when first met: a waiter whose calls move there counts none
# of its answers, and never holds the lock in the other cluster while the
# holder runs in the first (on main it did).
@test "a member of another cluster met only later is never counted: a waiter moved there exits 64" {
	start_etcd "$T" b1
	CLUSTER=b1
	proxy pa "${EP#*:}"
	proxy pb "$(<"$T/b1/cport")"
	envjob
	start_bg h -S "$S" "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	kill -STOP "$(<"$T/pb.pid")"
	(
		st=0
		dlock -S "etcd://127.0.0.1:$(<"$T/pa.port"),127.0.0.1:$(<"$T/pb.port")" -t 3 \
			-w 30 "$K" touch "$T/ran" 2>"$T/w.err" || st=$?
		echo "$st" >"$T/w.status"
	) &
	track $!
	wait_until 5 n_keys "$K" 2 || fail "the waiter does not wait: $(cat "$T/w.err")"
	# its way to the first cluster hangs; the second one answers now
	kill -CONT "$(<"$T/pb.pid")"
	kill -STOP "$(<"$T/pa.pid")"
	wait_until 20 test -e "$T/w.status" || fail "the waiter still waits: $(cat "$T/w.err")"
	kill -CONT "$(<"$T/pa.pid")"
	[[ ! -e $T/ran ]] || fail "the waiter ran its job while the holder held the lock"
	assert_equal "$(<"$T/w.status")" 64
	grep -q "etcd://127.0.0.1:$(<"$T/pb.port") is a member of etcd cluster [0-9a-f]*, etcd://127.0.0.1:$(<"$T/pa.port") of cluster [0-9a-f]*: one URL, one cluster" "$T/w.err" ||
		fail "$(cat "$T/w.err")"
	[[ -z $(etcdctl --endpoints="$(<"$T/b1/ep")" get --prefix dlock: --keys-only) ]] ||
		fail "a key in the other cluster"
	touch "$T/h.release"
	reap h
	assert_equal "$bg_status" 0
}

@test "nothing listening: 69 after the bounded tries, the command never run" {
	local port
	port=$(free_port)
	run -69 --separate-stderr dlock -S "etcd://127.0.0.1:$port" -w 1 "$K" touch "$T/ran"
	[[ $stderr == *"etcd://127.0.0.1:$port: connection refused"* ]]
	[[ ! -e $T/ran ]]
}

@test "--unavailable run: nothing listening runs the command without the lock; a held lock or an old etcd never does" {
	local port old
	port=$(free_port)
	run -0 --separate-stderr dlock -S "etcd://127.0.0.1:$port" --unavailable run "$K" \
		sh -c 'echo "[$DLOCK_TOKEN] ${DLOCK_FENCE-unset}"'
	[[ $output == "[] unset" ]]
	[[ $stderr == "dlock: $K: lock service unavailable (etcd://127.0.0.1:$port: connection refused); running without the lock" ]] ||
		fail "$stderr"
	envjob
	start_bg h -S "$S" "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	run -1 dlock -S "$S" --unavailable run -n "$K" touch "$T/ran"
	old=$(free_port)
	old_etcd "$old" 3.3.25
	run -69 dlock -S "etcd://127.0.0.1:$old" --unavailable run "$K" touch "$T/ran"
	[[ ! -e $T/ran ]]
	touch "$T/h.release"
	reap h
}

@test "a server that is not etcd's gateway: 70, naming what it said" {
	local port
	port=$(free_port)
	python3 -m http.server --bind 127.0.0.1 "$port" >/dev/null 2>&1 3>&- &
	track $!
	# (once, at a load near 50, not up in 10 s: dlock then met no server)
	wait_until 30 python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])))' "$port" ||
		fail "python3 -m http.server did not start"
	# a stand-in slow to answer under load is not what is tested here
	run --separate-stderr dlock -S "etcd://127.0.0.1:$port" --node-timeout 10 \
		--connect-budget 30 "$K" touch "$T/ran"
	((status == 70)) || fail "status $status: $stderr"
	[[ $stderr == *"etcd://127.0.0.1:$port: HTTP status 501"* ]] || fail "$stderr"
	[[ ! -e $T/ran ]]
}

# busy_etcd PORT LOG STATUS [JSON]: answers every call with HTTP STATUS
# and the body JSON (etcd's gateway's words), or a text body (a proxy in
# front); logs each request's path to LOG
busy_etcd() {
	cat >"$T/busy_etcd.py" <<'EOS'
import http.server, sys
status, log, body = int(sys.argv[2]), sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else ""
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(log, "a") as f:
            f.write(self.path + "\n")
        b = (body or "overloaded\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if body else "text/plain")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOS
	: >"$2"
	python3 "$T/busy_etcd.py" "$1" "$3" "$2" "${4:-}" >/dev/null 2>&1 3>&- &
	track $!
	wait_until 10 python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])))' "$1"
}

@test "an overloaded gateway (HTTP 503, 429, etcd's too many requests): 69 naming it, tried again within --connect-budget, never 70" {
	local port t0 took
	port=$(free_port)
	busy_etcd "$port" "$T/log" 503
	t0=$(now_ms)
	run -69 --separate-stderr dlock -S "etcd://127.0.0.1:$port" -n --connect-budget 1 "$K" touch "$T/ran"
	took=$(($(now_ms) - t0))
	[[ $stderr == "dlock: $K: etcd://127.0.0.1:$port: HTTP status 503 (Service Unavailable: the server is overloaded or has no leader)" ]] ||
		fail "$stderr"
	((took >= 500)) || fail "gave up after $took ms, before --connect-budget (its second half)"
	(($(wc -l <"$T/log") >= 3)) || fail "$(wc -l <"$T/log") requests: not tried again"
	port=$(free_port)
	busy_etcd "$port" "$T/log429" 429
	run -69 --separate-stderr dlock -S "etcd://127.0.0.1:$port" -n --connect-budget 0 "$K" touch "$T/ran"
	[[ $stderr == *"HTTP status 429 (Too Many Requests: the server is overloaded)" ]] || fail "$stderr"
	port=$(free_port)
	busy_etcd "$port" "$T/logjson" 503 '{"error":"etcdserver: too many requests","code":8,"message":"etcdserver: too many requests"}'
	run -69 --separate-stderr dlock -S "etcd://127.0.0.1:$port" -n --connect-budget 0 "$K" touch "$T/ran"
	[[ $stderr == *": etcdserver: too many requests" ]] || fail "$stderr"
	[[ ! -e $T/ran ]]
}

# old_etcd PORT VERSION: answers as an etcd of VERSION before 3.4 does
# (its gateway under /v3beta/: 404 on /v3/, the v2 API's text), and
# GET /version as every etcd does
old_etcd() {
	cat >"$T/old_etcd.py" <<'EOS'
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def reply(self, code, ctype, body):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.reply(404, "text/plain; charset=utf-8", b"404 page not found\n")
    def do_GET(self):
        if self.path == "/version":
            self.reply(200, "application/json", json.dumps(
                {"etcdserver": sys.argv[2], "etcdcluster": sys.argv[2][:3] + ".0"}).encode())
        else:
            self.reply(404, "text/plain; charset=utf-8", b"404 page not found\n")
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOS
	python3 "$T/old_etcd.py" "$1" "$2" >/dev/null 2>&1 3>&- &
	track $!
	wait_until 10 python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])))' "$1"
}

@test "an etcd older than 3.4 (no /v3/ gateway): one line naming its version, 69, nothing run; the next member serves" {
	local port
	port=$(free_port)
	old_etcd "$port" 3.3.25
	run -69 --separate-stderr dlock -S "etcd://127.0.0.1:$port" -n "$K" touch "$T/ran"
	[[ $stderr == "dlock: $K: etcd://127.0.0.1:$port: etcd 3.3.25 is too old: dlock needs etcd 3.4 or later" ]] ||
		fail "$stderr"
	[[ ! -e $T/ran ]]
	run -69 --separate-stderr dlock status -S "etcd://127.0.0.1:$port" "$K"
	[[ $stderr == *"etcd 3.3.25 is too old"* ]] || fail "$stderr"
	# a member left behind in an upgrade: the next one in the URL serves
	run -0 dlock -S "etcd://127.0.0.1:$port,$EP" -n "$K" true
}

@test "a waiter interrupted gives its place back: no key, no lease left" {
	envjob
	start_bg h -S "$S" "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	start_bg w -S "$S" "$K" touch "$T/w.ran"
	wait_until 5 n_keys "$K" 2
	kill -TERM "$(<"$T/w.dlock")"
	reap w
	((bg_status == 143))
	n_keys "$K" 1
	touch "$T/h.release"
	reap h
	no_lock_key "$K"
	no_lease_left
}

# ---- the lock ----------------------------------------------------------------

@test "runs the command with DLOCK_FENCE the key's create revision, ETCD_LOCK_KEY and ETCD_LOCK_REV as etcdctl lock sets them; nothing left after" {
	run -0 dlock -S "$S" "$K" sh -c 'echo "$DLOCK_KEY $DLOCK_TOKEN $DLOCK_FENCE $ETCD_LOCK_KEY $ETCD_LOCK_REV"'
	read -r key token fence ekey erev <<<"$output"
	[[ $key == "dlock:$K" ]]
	[[ $token =~ ^[0-9a-f]{32}$ ]]
	[[ $ekey =~ ^dlock:$K/[0-9a-f]{1,16}$ ]]
	[[ $fence =~ ^[0-9]+$ && $fence == "$erev" ]]
	no_lock_key "$K"
	no_lease_left
}

@test "fences strictly increase from one holder to the next" {
	local last=0 f
	for n in 1 2 3 4; do
		f=$(dlock -S "$S" "$K" sh -c 'echo $DLOCK_FENCE')
		((f > last))
		last=$f
	done
	run -0 dlock -S "$S" -s "$K" sh -c 'echo $DLOCK_FENCE'
	((output > last))
}

@test "-n against a holder fails with 1 (or -E) and leaves no key of its own" {
	envjob
	start_bg h -S "$S" "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	run -1 dlock -S "$S" -n "$K" touch "$T/ran"
	run -7 dlock -S "$S" -n -E 7 "$K" touch "$T/ran"
	[[ ! -e $T/ran ]]
	(($(lock_keys "$K" | wc -l) == 1))
	touch "$T/h.release"
	reap h
	((bg_status == 0))
	no_lock_key "$K"
	no_lease_left
}

@test "waiters wake as soon as the holder releases, in arrival order (FIFO)" {
	envjob
	start_bg h -S "$S" "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	for w in 1 2 3; do
		start_bg "w$w" -S "$S" "$K" sh -c "echo w$w >>'$T/order'"
		wait_until 5 n_keys "$K" $((w + 1)) ||
			{ lock_keys "$K"; cat "$T"/w*.err; false; }
	done
	touch "$T/h.release"
	for w in 1 2 3; do reap "w$w"; ((bg_status == 0)); done
	[[ $(cat "$T/order") == $'w1\nw2\nw3' ]]
	no_lock_key "$K"
	no_lease_left
}

@test "a waiter keeps its lease alive while it waits longer than the TTL" {
	envjob
	start_bg h -S "$S" -t 2 "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	start_bg w -S "$S" -t 2 "$K" touch "$T/w.ran"
	wait_until 5 n_keys "$K" 2
	sleep 3.5	# past the waiter's TTL: its key must still be there
	(($(lock_keys "$K" | wc -l) == 2))
	touch "$T/h.release"
	reap w
	((bg_status == 0))
	[[ -e $T/w.ran ]]
}

# grpc_msgs: the requests etcd has served (the gateway's calls, each
# stream's messages), from its metrics
# metric_sum REGEX: the sum of etcd's metrics whose lines match REGEX
metric_sum() { curl -s "http://$EP/metrics" | awk -v re="$1" '$0 ~ re { n += $2 } END { printf "%d\n", n }'; }
grpc_msgs() { metric_sum '^grpc_server_msg_received_total'; }

@test "idle waiters cost etcd a keepalive each per TTL/3, not a round every few seconds; each release lets the next one in at once" {
	local w r0 r1
	envjob
	start_bg h -S "$S" -t 60 "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	for w in $(seq 10); do
		start_bg "w$w" -S "$S" -t 60 "$K" sh -c 'echo "$(date +%s%N) $1" >>"$2"' sh "w$w" "$T/order"
	done
	wait_until 10 n_keys "$K" 11 || fail "$(lock_keys "$K" | wc -l) keys: $(cat "$T"/w*.err)"
	sleep 1
	r0=$(grpc_msgs)
	sleep 8
	r1=$(grpc_msgs)
	# 10 waiters keeping 60 s leases alive every 20 s, and the holder: at
	# most a dozen in 8 s (before: a txn from each waiter every 2 to 4 s)
	((r1 - r0 <= 16)) || fail "$((r1 - r0)) requests in 8 s from 10 idle waiters"
	local go=$(date +%s%N)
	touch "$T/h.release"
	for w in $(seq 10); do reap "w$w" 20; ((bg_status == 0)) || fail "w$w: $(cat "$T/w$w.err")"; done
	# ten handoffs, each a release waking the next: well within 10 s
	awk -v go="$go" '{ if ($1 > last) last = $1 } END { exit (last - go > 10e9) }' "$T/order" ||
		fail "the ten waiters took $(awk -v go="$go" '{ if ($1 > l) l = $1 } END { print (l - go) / 1e9 }' "$T/order") s"
	no_lock_key "$K"
}

# late_acquired: how many 'acquired' events were written in a txn of
# their own, not in their holder's release (its 'released', same revision)
late_acquired() {
	ectl get --prefix "" -w json | "$PYTHON" -c 'import base64, json, sys
rev = {}
for kv in json.load(sys.stdin).get("kvs", []):
    k = base64.b64decode(kv["key"]).decode("latin-1")
    tok, _, kind = k.rpartition("/")
    if kind in ("acquired", "released"):
        rev.setdefault(tok, {})[kind] = kv["mod_revision"]
print(sum(1 for r in rev.values() if "released" in r and r.get("acquired") != r["released"]))'
}

# txns: the txns etcd has served; watchers: the watches it keeps
txns() { metric_sum '^grpc_server_msg_received_total[{]grpc_method="Txn"'; }
watchers() { metric_sum '^etcd_debugging_mvcc_watcher_total'; }
watchers_at_least() { (($(watchers) >= $1)); }

@test "a hand-off is one txn after the release: the next waiter learns it holds and logs 'acquired' in one write" {
	local w t0 t1
	envjob
	start_bg h -S "$S" -t 60 "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	for w in $(seq 10); do
		start_bg "w$w" -S "$S" -t 60 "$K" true
	done
	wait_until 10 n_keys "$K" 11 || fail "$(lock_keys "$K" | wc -l) keys: $(cat "$T"/w*.err)"
	# each waiter watches the one ahead (the holder its own key too)
	wait_until 10 watchers_at_least 10 || fail "$(watchers) watchers"
	t0=$(txns)
	touch "$T/h.release"
	for w in $(seq 10); do reap "w$w" 20; ((bg_status == 0)) || fail "w$w: $(cat "$T/w$w.err")"; done
	reap h
	t1=$(txns)
	# eleven releases and ten acquisitions of one txn each (main: a read
	# txn, then the history's write, each behind the release's fsync),
	# and one more for each waiter whose command outlived its first
	# renewal (a loaded machine): that one writes its 'acquired' alone,
	# as the holder did in its first try, before t0 (late counts it too)
	local late; late=$(late_acquired)
	echo "# $((t1 - t0)) txns, $late 'acquired' written alone" >&3
	((t1 - t0 <= 20 + late)) || fail "$((t1 - t0)) txns for ten hand-offs ($late 'acquired' written alone)"
	run -0 dlock history -S "$S" -n 30 --json "$K"
	python3 -c 'import json,sys; ev=json.loads(sys.argv[1])["events"][::-1]
kinds = [e["event"] for e in ev]
assert kinds == ["acquired", "released"] * 11, kinds
fences = [e["fence"] for e in ev]
assert all(f > 0 for f in fences) and fences[::2] == fences[1::2], fences
assert fences[::2] == sorted(fences[::2]), fences' "$output"
	no_lock_key "$K"
}

# store_rev: etcd's revision now (each write moves it one on)
store_rev() { ectl get --prefix "dlock:$K/" -w json | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])'; }

@test "a hand-off is the release's one write: the next waiter finds it holds in a read, its 'acquired' follows once the command runs" {
	local w r0
	envjob
	start_bg h -S "$S" -t 60 "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	for w in 1 2; do
		start_bg "w$w" -S "$S" -t 60 "$K" sh -c 'echo "$ETCD_LOCK_REV" >"$1"' sh "$T/w$w.rev"
		wait_until 10 n_keys "$K" $((w + 1)) || fail "$(lock_keys "$K" | wc -l) keys: $(cat "$T"/w*.err)"
	done
	wait_until 10 watchers_at_least 3 || fail "$(watchers) watchers"
	r0=$(store_rev)
	touch "$T/h.release"
	for w in 1 2; do reap "w$w" 20; ((bg_status == 0)) || fail "w$w: $(cat "$T/w$w.err")"; done
	reap h
	# the first waiter's grant read the store one write after the queue
	# was still: the holder's release (main: two, its own 'acquired' put
	# in the txn that found it holds, behind the release's fsync)
	(($(<"$T/w1.rev") == r0 + 1)) || fail "w1 acquired at revision $(<"$T/w1.rev"), the queue was at $r0"
	run -0 dlock history -S "$S" -n 10 --json "$K"
	"$PYTHON" -c 'import json,sys; ev=json.loads(sys.argv[1])["events"][::-1]
assert [e["event"] for e in ev] == ["acquired", "released"] * 3, ev
fences = [e["fence"] for e in ev]
assert fences[::2] == fences[1::2] and fences[::2] == sorted(fences[::2]), fences
assert all(a["time_ms"] <= r["time_ms"] for a, r in zip(ev[::2], ev[1::2])), ev' "$output"
	no_lock_key "$K"
}

@test "a waiter that came to hold shows its 'acquired' in the history while its command runs" {
	envjob
	start_bg h -S "$S" -t 60 "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	start_bg w -S "$S" -t 60 "$K" "$T/envjob" "$T/w"
	wait_until 10 n_keys "$K" 2 || fail "$(lock_keys "$K" | wc -l) keys"
	touch "$T/h.release"
	reap h
	wait_until 10 test -e "$T/w.ready"
	wait_until 5 eval '[[ $(dlock history -S "$S" --json "$K" | jq -r "[.events[].event] | join(\" \")") == "acquired released acquired" ]]' ||
		fail "$(dlock history -S "$S" "$K")"
	run -0 dlock history -S "$S" --json "$K"
	[[ $(jq -r '.events[0].token' <<<"$output") == "$(sed -n 's/^DLOCK_TOKEN=//p' "$T/w.env")" ]]
	[[ $(jq -r '.events[0].fence' <<<"$output") == "$(sed -n 's/^DLOCK_FENCE=//p' "$T/w.env")" ]]
	touch "$T/w.release"
	reap w
	no_lock_key "$K"
}

@test "the waiter ahead gives up: the next one wakes, finds the holder still there and waits on" {
	envjob
	start_bg h -S "$S" -t 60 "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	start_bg a -S "$S" -t 60 -w 1.5 "$K" touch "$T/a.ran"
	wait_until 10 n_keys "$K" 2 || fail "$(lock_keys "$K" | wc -l) keys"
	start_bg b -S "$S" -t 60 "$K" sh -c 'test -e "$1" && touch "$2"' sh "$T/h.release" "$T/b.ran"
	wait_until 10 n_keys "$K" 3 || fail "$(lock_keys "$K" | wc -l) keys"
	reap a 10
	((bg_status == 1)) || fail "a exited $bg_status: $(cat "$T/a.err")"
	# b watched a's key: its deletion (a gave up: no release of a
	# holder's) wakes b, which must find h older than it and wait
	sleep 0.5
	[[ ! -e $T/b.ran ]] || fail "b ran while h held the lock"
	n_keys "$K" 2 || fail "$(lock_keys "$K" | wc -l) keys"
	touch "$T/h.release"
	reap h
	reap b 10
	((bg_status == 0)) || fail "b exited $bg_status: $(cat "$T/b.err")"
	[[ -e $T/b.ran && ! -e $T/a.ran ]]
	no_lock_key "$K"
}

@test "-w gives up in time with 1 and leaves no key behind" {
	envjob
	start_bg h -S "$S" "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	run -1 dlock -S "$S" -w 0.5 "$K" touch "$T/ran"
	[[ ! -e $T/ran ]]
	(($(lock_keys "$K" | wc -l) == 1))
	touch "$T/h.release"
	reap h
}

# ---- interop with etcdctl lock ----------------------------------------------------

@test "etcdctl lock holds: dlock -n is refused, dlock waits and gets it once etcdctl lets go" {
	printf '#!/bin/sh\ntouch "%s"\nwhile [ ! -e "%s" ]; do sleep 0.05; done\n' \
		"$T/e.ready" "$T/e.release" >"$T/e.sh"
	chmod +x "$T/e.sh"
	etcdctl --endpoints="$EP" lock "dlock:$K" "$T/e.sh" &
	track $!
	wait_until 10 test -e "$T/e.ready"
	run -1 dlock -S "$S" -n "$K" true
	start_bg w -S "$S" "$K" touch "$T/w.ran"
	wait_until 5 n_keys "$K" 2
	run -0 dlock status -S "$S" "$K"
	[[ $output == *"held, foreign"* ]]
	[[ ! -e $T/w.ran ]]
	touch "$T/e.release"
	reap w
	((bg_status == 0))
	[[ -e $T/w.ran ]]
}

@test "dlock holds: etcdctl lock waits until dlock releases" {
	envjob
	start_bg h -S "$S" "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	printf '#!/bin/sh\ntest -e "%s" && touch "%s"\ntouch "%s"\n' \
		"$T/h.release" "$T/e.after" "$T/e.ran" >"$T/e.sh"
	chmod +x "$T/e.sh"
	etcdctl --endpoints="$EP" lock "dlock:$K" "$T/e.sh" >"$T/e.out" 2>&1 &
	track $!
	wait_until 5 n_keys "$K" 2
	sleep 0.3
	[[ ! -e $T/e.ran ]]
	touch "$T/h.release"
	reap h
	wait_until 10 test -e "$T/e.ran" || { cat "$T/e.out"; lock_keys "$K"; false; }
	[[ -e $T/e.after ]]
}

# ---- the lease and its loss -----------------------------------------------------

@test "etcdctl lease revoke of the holder's lease: the job is stopped and dlock exits 75" {
	envjob
	start_bg h -S "$S" "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	key=$(sed -n 's/^ETCD_LOCK_KEY=//p' "$T/h.env")
	sleep 0.1	# the watch is set up 20 ms into the job
	ectl lease revoke "${key##*/}"
	reap h 5
	((bg_status == 75))
	grep -q "lease lost" "$T/h.err"
	no_lock_key "$K"
	no_lease_left
}

@test "the holder's key deleted behind its back (etcdctl del): 75 at once" {
	envjob
	start_bg h -S "$S" -t 60 "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	key=$(sed -n 's/^ETCD_LOCK_KEY=//p' "$T/h.env")
	sleep 0.6
	ectl del "$key"
	reap h 5	# far sooner than the 20 s renewal
	((bg_status == 75))
	grep -q "was deleted" "$T/h.err"
	no_lease_left
}

# The lost lease's line names the key, in which the lock's name is: its
# control bytes escaped, one line (found by review: a newline in the name
# split it, an escape sequence reached the terminal raw).
@test "the holder's key deleted, a name with a newline and an escape: the lost lease is one line" {
	local name=$K$'-a\nb\e[31m'
	start_bg h -S "$S" -t 60 "$name" sh -c ': >"$0"; sleep 30' "$T/h.ready"
	wait_until 5 test -e "$T/h.ready" || fail "not held: $(cat "$T/h.err")"
	ectl del --prefix "dlock:$name/" >/dev/null
	reap h 5
	((bg_status == 75))
	assert_equal "$(wc -l <"$T/h.err")" 1
	grep -qF "our key dlock:$K-a\nb\x1b[31m/" "$T/h.err" || fail "stderr: $(cat "$T/h.err")"
}

@test "the server stopped while holding: no keepalive in time is a lost lease (75)" {
	local pid
	start_etcd "$T" s1
	CLUSTER=s1
	envjob
	start_bg h -S "etcd://$(<"$T/s1/ep")" -t 2 "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	pid=$(<"$T/s1/pid")
	kill -STOP "$pid"
	reap h 5
	kill -CONT "$pid"
	((bg_status == 75))
	grep -q "lease lost" "$T/h.err"
	# one line: no 'release failed' after it
	(($(wc -l <"$T/h.err") == 1)) || fail "$(cat "$T/h.err")"
}

# unread_by_server PORT: a client connection to PORT holds bytes the
# server has not read (stopped, it reads nothing)
unread_by_server() {
	ss -Htn state established "( sport = :$1 )" | awk '$1 > 0 { f = 1 } END { exit !f }'
}

@test "a signal while a waiter's keepalive waits on a stopped server: no second try of that keepalive" {
	local EP pid port t0 took
	start_etcd "$T" s1
	CLUSTER=s1
	EP=$(<"$T/s1/ep")
	pid=$(<"$T/s1/pid")
	port=${EP##*:}
	envjob
	# the holder renews every 20 s: not while the server is stopped here
	start_bg h -S "etcd://$EP" -t 60 "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready" || fail "not held: $(cat "$T/h.err")"
	# the waiter keeps its lease alive every 4 s, each call up to 3 s
	start_bg w -S "etcd://$EP" -t 12 --node-timeout 3 -w 60 "$K" touch "$T/ran"
	wait_until 5 n_keys "$K" 2 || fail "the waiter does not wait: $(cat "$T/w.err")"
	kill -STOP "$pid"
	wait_until 8 unread_by_server "$port" || { kill -CONT "$pid"; fail "no keepalive sent"; }
	t0=$(now_ms)
	kill -TERM "$(<"$T/w.dlock")"
	# the signal ends the keepalive's wait; its lease's revoke then waits
	# its --node-timeout (the server is stopped). Before: the keepalive
	# was sent again on a new connection, for the rest of its 3 s.
	reap w 15
	took=$(($(now_ms) - t0))
	kill -CONT "$pid"
	assert_equal "$bg_status" 143
	((took < 4500)) || fail "SIGTERM took $took ms to end dlock"
	[[ ! -e $T/ran ]] || fail "the command ran"
	touch "$T/h.release"
	reap h
	assert_equal "$bg_status" 0
}

@test "dlock killed with -9: the lock lapses with its lease" {
	envjob
	start_bg h -S "$S" -t 2 "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	kill -KILL "$(<"$T/h.dlock")"
	touch "$T/h.release"
	run -0 dlock -S "$S" -w 5 "$K" true
	wait_until 5 no_lease_left
}

@test "dlock killed with -9: its watchdog writes 'killed' to the history, with the holder's token, fence and time held" {
	envjob
	start_bg h -S "$S" -t 3 "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	kill -KILL "$(<"$T/h.dlock")"
	wait_until 10 eval '[[ $(dlock history -S "$S" "$K") == *killed* ]]' ||
		fail "no killed event: $(dlock history -S "$S" "$K")"
	run -0 dlock history -S "$S" --json "$K"
	python3 -c 'import json,sys; ev=json.loads(sys.argv[1])["events"]
assert [e["event"] for e in ev] == ["killed", "acquired"], ev
k=ev[0]
assert k["token"] == sys.argv[2] and k["fence"] == int(sys.argv[3]), k
assert k["held_ms"] >= 0 and "envjob" in json.dumps(k), k' \
		"$output" "$(sed -n 's/^DLOCK_TOKEN=//p' "$T/h.env")" \
		"$(sed -n 's/^DLOCK_FENCE=//p' "$T/h.env")"
	run -0 dlock history -S "$S" "$K"
	[[ ${lines[1]} == *killed* ]] || fail "$output"
	touch "$T/h.release"
	wait_until 5 no_lease_left	# lapsed with its lease
}

# ---- modes -------------------------------------------------------------------------

# killed_waiter [DLOCK-ARGS...]: a waiter (with these options) comes to
# hold after a holder and its command kills its dlock at once: before the
# first renewal, where a waiter that came to hold writes its 'acquired';
# $output: the history, --json, once the watchdog's 'killed' is there
killed_waiter() {
	envjob
	start_bg h -S "$S" -t 60 "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	start_bg w -S "$S" -t 3 "$@" "$K" sh -c 'kill -KILL $PPID; sleep 1'
	wait_until 10 n_keys "$K" 2 || fail "$(lock_keys "$K" | wc -l) keys: $(cat "$T/w.err")"
	touch "$T/h.release"
	reap h
	wait_until 10 eval '[[ $(dlock history -S "$S" "$K") == *killed* ]]' ||
		fail "no killed event: $(dlock history -S "$S" "$K")"
	run -0 dlock history -S "$S" --json "$K"
}

@test "--no-fence: a waiter's dlock killed with -9 as its command starts still leaves its 'acquired' beside 'killed'" {
	# no fence: the watchdog knows no create revision to compare with
	killed_waiter --no-fence
	"$PYTHON" -c 'import json,sys; ev=json.loads(sys.argv[1])["events"][::-1]
assert [e["event"] for e in ev] == ["acquired", "released", "acquired", "killed"], ev
assert ev[2]["token"] == ev[3]["token"], ev' "$output"
	wait_until 10 no_lease_left	# its lease lapses (-t 3)
}

@test "a waiter's dlock killed with -9 as its command starts: the history has its 'acquired' and 'killed'" {
	killed_waiter
	"$PYTHON" -c 'import json,sys; ev=json.loads(sys.argv[1])["events"][::-1]
assert [e["event"] for e in ev] == ["acquired", "released", "acquired", "killed"], ev
assert ev[2]["token"] == ev[3]["token"] and ev[2]["fence"] == ev[3]["fence"] > ev[0]["fence"], ev
assert ev[2]["time_ms"] <= ev[3]["time_ms"], ev' "$output"
	wait_until 10 no_lease_left	# its lease lapses (-t 3)
}

@test "-s: shared holders together, an exclusive one waits for them all" {
	envjob
	start_bg a -S "$S" -s "$K" "$T/envjob" "$T/a"
	start_bg b -S "$S" -s "$K" "$T/envjob" "$T/b"
	wait_until 5 test -e "$T/a.ready" -a -e "$T/b.ready"
	run -1 dlock -S "$S" -n "$K" true
	run -0 dlock status -S "$S" "$K"
	[[ $output == *"held, shared, 2 holders"* ]]
	start_bg x -S "$S" "$K" touch "$T/x.ran"
	wait_until 5 n_keys "$K" 3
	# a shared one after an exclusive waiter waits too (FIFO)
	run -1 dlock -S "$S" -s -n "$K" true
	touch "$T/a.release"
	reap a
	sleep 0.3
	[[ ! -e $T/x.ran ]]
	touch "$T/b.release"
	reap x
	((bg_status == 0))
	reap b
}

@test "--limit 2: two holders at once, the third waits for one of them" {
	envjob
	start_bg a -S "$S" --limit 2 "$K" "$T/envjob" "$T/a"
	start_bg b -S "$S" --limit 2 "$K" "$T/envjob" "$T/b"
	wait_until 5 test -e "$T/a.ready" -a -e "$T/b.ready"
	run -1 dlock -S "$S" --limit 2 -n "$K" true
	run -0 dlock status -S "$S" --json "$K"
	python3 -c 'import json,sys; l=json.loads(sys.argv[1])["locks"][0]
assert [h["slot"] for h in l["holders"]] == [1, 2], l' "$output"
	run -0 dlock status -S "$S" "$K"
	[[ $output == *"SLOT"* ]] || fail "$output"
	start_bg c -S "$S" --limit 2 "$K" touch "$T/c.ran"
	wait_until 5 n_keys "$K" 3
	touch "$T/b.release"
	reap c
	((bg_status == 0))
	touch "$T/a.release"
	reap a
	reap b
	no_lock_key "$K"
}

@test "re-entry: a nested dlock on the same lock runs at once with the same fence" {
	run -0 dlock -S "$S" "$K" sh -c 'echo $DLOCK_FENCE; "$DLOCK" -S "'"$S"'" -n '"$K"' sh -c "echo \$DLOCK_FENCE"'
	[[ ${lines[0]} == "${lines[1]}" ]]
}

# nested OUTER-ARGS: dlock OUTER-ARGS K runs a job that calls the nested
# dlock once for each line of $T/nested ("NAME DLOCK-ARGS..."): its exit
# status in $T/NAME.rc, its stderr in $T/NAME.err; the nested command
# writes $T/NAME.ran with its DLOCK_TOKEN and the number of K's keys then.
nested() {
	cat >"$T/nested.sh" <<'EOS'
#!/bin/bash
T=$1 S=$2 K=$3
echo "$DLOCK_TOKEN" >"$T/outer.token"
while read -r name args; do
	# shellcheck disable=SC2086
	"$DLOCK" -S "$S" $args "$K" sh -c \
		'echo "$DLOCK_TOKEN $(etcdctl --endpoints="$0" get --prefix "dlock:$1/" --keys-only | sed "/^$/d" | wc -l)" >"$2"; exit 5' \
		"$EP" "$K" "$T/$name.ran" 2>"$T/$name.err"
	echo $? >"$T/$name.rc"
done <"$T/nested"
EOS
	chmod +x "$T/nested.sh"
	run -0 dlock -S "$S" "$@" "$K" "$T/nested.sh" "$T" "$S" "$K"
}

# refused_nested NAME MESSAGE: exit 64, one line, the command not run
refused_nested() {
	[[ $(<"$T/$1.rc") == 64 ]] || fail "$1: exit $(<"$T/$1.rc"): $(cat "$T/$1.err")"
	(($(wc -l <"$T/$1.err") == 1)) || fail "$1: $(cat "$T/$1.err")"
	[[ $(<"$T/$1.err") == "dlock: $K: "*"$2" ]] || fail "$1: $(cat "$T/$1.err")"
	[[ ! -e $T/$1.ran ]] || fail "$1: the nested command ran"
}

# reentered NAME KEYS: ran as the outer holder, with KEYS keys of K's then
reentered() {
	[[ $(<"$T/$1.rc") == 5 ]] || fail "$1: exit $(<"$T/$1.rc"): $(cat "$T/$1.err")"
	[[ $(<"$T/$1.ran") == "$(<"$T/outer.token") $2" ]] ||
		fail "$1: $(cat "$T/$1.ran") (outer $(cat "$T/outer.token"))"
}

@test "re-entry inside an exclusive holder's job: nested -x, -s and --limit all re-enter" {
	printf '%s\n' "x -n" "xw -w 2" "s -s -n" "l --limit 3 -n" "l2 --limit 2" >"$T/nested"
	nested -x
	for n in x xw s l l2; do reentered "$n" 1; done
	no_lock_key "$K"
	no_lease_left
}

@test "re-entry inside a shared holder's job: -s re-enters, -x and --limit exit 64 and the outer lock stays" {
	envjob
	start_bg o -S "$S" -s "$K" "$T/envjob" "$T/o"
	wait_until 5 test -e "$T/o.ready"
	printf '%s\n' "x -n" "xw -w 3" "l --limit 2 -n" "lw --limit 2 -w 3" "s -s -n" >"$T/nested"
	nested -s
	refused_nested x "the outer dlock holds the lock shared: a nested exclusive request cannot re-enter it"
	refused_nested xw "the outer dlock holds the lock shared: a nested exclusive request cannot re-enter it"
	refused_nested l "the lock is held shared"
	refused_nested lw "the lock is held shared"
	reentered s 2	# the other shared holder's key and the outer one's
	n_keys "$K" 1	# the other holder's, untouched
	touch "$T/o.release"
	reap o
	((bg_status == 0))
	no_lock_key "$K"
	no_lease_left
}

@test "re-entry inside a --limit 2 holder's job: --limit 2 re-enters, -x, -s and --limit 3 exit 64" {
	printf '%s\n' "x -n" "xw -w 3" "s -s -n" "sw -s -w 3" "l3 --limit 3 -n" \
		"l2 --limit 2 -n" >"$T/nested"
	nested --limit 2
	refused_nested x "the outer dlock holds the lock with --limit 2: a nested exclusive request cannot re-enter it"
	refused_nested xw "the outer dlock holds the lock with --limit 2: a nested exclusive request cannot re-enter it"
	refused_nested s "the lock is held with --limit 2"
	refused_nested sw "the lock is held with --limit 2"
	refused_nested l3 "the lock is held with --limit 2"
	reentered l2 1
	no_lock_key "$K"
	no_lease_left
}

# refused_mode DLOCK-ARGS... -- MESSAGE: exit 64, one stderr line, not run
refused_mode() {
	local args=() msg
	while [[ $1 != -- ]]; do args+=("$1"); shift; done
	msg=$2
	run -64 --separate-stderr dlock -S "$S" "${args[@]}" "$K" touch "$T/ran"
	assert_equal "${#stderr_lines[@]}" 1
	[[ $stderr == "dlock: $K: etcd://$EP: $msg" ]] || fail "stderr: $stderr"
	[[ ! -e $T/ran ]] || fail "the command ran"
}

@test "a --limit 2 lock refuses --limit 3 and -s with 64 (with -n, -w or waiting); a -s lock refuses --limit" {
	envjob
	start_bg a -S "$S" --limit 2 "$K" "$T/envjob" "$T/a"
	wait_until 5 test -e "$T/a.ready"
	refused_mode --limit 3 -- "the lock is held with --limit 2"
	refused_mode -n --limit 3 -- "the lock is held with --limit 2"
	refused_mode -s -- "the lock is held with --limit 2"
	refused_mode -n -s -- "the lock is held with --limit 2"
	refused_mode -w 2 -s -- "the lock is held with --limit 2"
	run -1 dlock -S "$S" -n "$K" true	# exclusive: held, as always
	n_keys "$K" 1
	run -0 dlock -S "$S" --limit 2 -n "$K" true
	touch "$T/a.release"
	reap a
	((bg_status == 0))

	start_bg s -S "$S" -s "$K" "$T/envjob" "$T/s"
	wait_until 5 test -e "$T/s.ready"
	refused_mode --limit 2 -- "the lock is held shared"
	refused_mode -n --limit 2 -- "the lock is held shared"
	refused_mode -w 2 --limit 1 -- "the lock is held shared"
	run -1 dlock -S "$S" -n -x "$K" true
	n_keys "$K" 1
	run -0 dlock -S "$S" -s -n "$K" true
	touch "$T/s.release"
	reap s
	((bg_status == 0))
	no_lock_key "$K"
	no_lease_left
}

@test "queued behind an exclusive holder, -s and --limit 2: the first in line gets it, the other exits 64 once it holds" {
	envjob
	start_bg x -S "$S" "$K" "$T/envjob" "$T/x"
	wait_until 5 test -e "$T/x.ready"
	start_bg s -S "$S" -t 3 -s "$K" "$T/envjob" "$T/s"
	wait_until 5 n_keys "$K" 2
	start_bg l -S "$S" -t 3 --limit 2 "$K" touch "$T/l.ran"
	wait_until 5 n_keys "$K" 3
	touch "$T/x.release"
	reap x
	wait_until 5 test -e "$T/s.ready"
	reap l 5	# at its next round at the latest (TTL/3)
	((bg_status == 64))
	grep -q "the lock is held shared" "$T/l.err"
	[[ ! -e $T/l.ran ]]
	n_keys "$K" 1
	touch "$T/s.release"
	reap s
	((bg_status == 0))
	no_lock_key "$K"
	no_lease_left
}

@test "-k: two etcd locks all or none" {
	run -0 dlock -S "$S" -k "${K}a" -k "${K}b" sh -c 'echo $DLOCK_KEYS'
	[[ $output == "dlock:${K}a dlock:${K}b" ]]
	no_lock_key "${K}a"
	no_lock_key "${K}b"
}

# ---- inspection and repair ---------------------------------------------------------

@test "status shows the holder, its lease's time left and the waiters in order; JSON too" {
	envjob
	start_bg h -S "$S" -t 20 "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	start_bg w -S "$S" "$K" true
	wait_until 5 n_keys "$K" 2
	run -0 dlock status -S "$S" "$K"
	[[ $output == *"held, exclusive"* ]]
	[[ $output == *"envjob"* ]]
	[[ $output == *"waiting, in queue order"* ]]
	run -0 dlock status -S "$S" --json "$K"
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); l=d["locks"][0]
assert d["engine"] == "etcd"
assert l["state"] == "held" and len(l["holders"]) == 1 and l["waiting"] == 1, l
assert 0 < l["holders"][0]["ttl_ms"] <= 20000, l' "$output"
	run -0 dlock status -S "$S"
	[[ $output == *"$K "*held* ]]
	touch "$T/h.release"
	reap h
	reap w
	run -1 dlock status -S "$S" "$K"
	[[ $output == "$K: free" ]]
}

@test "history: acquired and released with exit status and fence, trimmed to --history" {
	run -3 dlock -S "$S" --history 4 "$K" sh -c 'exit 3'
	for n in 1 2 3 4; do dlock -S "$S" --history 4 "$K" true; done
	run -0 dlock history -S "$S" -n 20 --json "$K"
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); ev=d["events"]
assert 4 <= len(ev) <= 6, len(ev)
assert ev[0]["event"] == "released" and ev[0]["exit"] == 0 and ev[0]["fence"] > 0, ev[0]
assert ev[1]["event"] == "acquired" and ev[1]["fence"] == ev[0]["fence"], ev[1]' "$output"
	# a large N is counted (to trim) by some releases, not all (the count
	# walks every event): it stays within N + N/2
	local n max=0
	for n in $(seq 40); do
		dlock -S "$S" --history 24 "$K" true
		n=$(dlock history -S "$S" -n 1000 --json "$K" | jq '.events | length')
		((n > max)) && max=$n
	done
	echo "# --history 24: at most $max events" >&3
	((max >= 24 && max <= 36)) || fail "--history 24: at most $max events, want 24 to 36"
}

# Lock a/b's history must not sit inside lock a's contenders' range
# (PREFIX a/): there it looked like a holder that never goes, to dlock and
# to etcdctl lock alike.
@test "history -n 1 after a waiter's short command: its 'released', not the 'acquired' written in the same txn" {
	envjob
	start_bg h -S "$S" -t 20 "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	# over before its first renewal: its 'acquired' goes in the release's
	# txn, the same revision as its 'released'
	start_bg w -S "$S" "$K" true
	wait_until 5 n_keys "$K" 2
	touch "$T/h.release"
	reap h
	reap w
	local n
	for n in 1 3; do
		run -0 dlock history -S "$S" --json -n "$n" "$K"
		"$PYTHON" -c 'import json,sys; ev=json.loads(sys.argv[1])["events"]
assert len(ev) == int(sys.argv[2]), ev
assert ev[0]["event"] == "released" and ev[0]["command"] == "true", ev' "$output" "$n"
	done
}

@test "a/b's history is no contender of lock a: a is free, status and history name each lock's own" {
	local b_token a_token
	b_token=$(dlock -S "$S" "$K/b" sh -c 'echo $DLOCK_TOKEN')
	run -0 dlock history -S "$S" --json "$K/b"
	python3 -c 'import json,sys; ev=json.loads(sys.argv[1])["events"]
assert [e["event"] for e in ev] == ["released", "acquired"], ev
assert all(e["token"] == sys.argv[2] for e in ev), ev' "$output" "$b_token"
	# nothing of a/b's is left under a's range, or anywhere under a/b/
	(($(ectl get --prefix "dlock:$K/" --keys-only | wc -c) == 0)) ||
		fail "keys under dlock:$K/: $(ectl get --prefix "dlock:$K/" --keys-only | tr '\0' @)"
	run -0 dlock -S "$S" -n "$K" true
	run -0 timeout 10 etcdctl --endpoints="$EP" lock "dlock:$K" echo etcdctl-ran
	[[ $output == *etcdctl-ran* ]]
	run -1 dlock status -S "$S" "$K"
	[[ $output == "$K: free" ]]
	hold a -S "$S" "$K"
	wait_ready a
	a_token=$(job_var a DLOCK_TOKEN)
	run -0 dlock status -S "$S" --json "$K"
	python3 -c 'import json,sys; l=json.loads(sys.argv[1])["locks"][0]
assert l["state"] == "held" and len(l["holders"]) == 1 and l["waiting"] == 0, l
assert l["holders"][0]["token"] == sys.argv[2], l' "$output" "$a_token"
	run -0 dlock status -S "$S"
	[[ $output == *"$K "*held* ]] || fail "$output"
	[[ $output != *"$K/b"* ]] || fail "$output"
	run -1 dlock status -S "$S" "$K/b"
	[[ $output == "$K/b: free" ]]
	finish a
	((bg_status == 0))
	run -0 dlock history -S "$S" --json "$K"
	python3 -c 'import json,sys; ev=json.loads(sys.argv[1])["events"]
assert [e["event"] for e in ev] == ["released", "acquired"] * 2, ev
assert ev[0]["token"] == sys.argv[2] and sys.argv[3] not in [e["token"] for e in ev], ev' \
		"$output" "$a_token" "$b_token"
	run -0 dlock history -S "$S" --json "$K/b"
	python3 -c 'import json,sys; ev=json.loads(sys.argv[1])["events"]
assert len(ev) == 2 and all(e["token"] == sys.argv[2] for e in ev), ev' "$output" "$b_token"
	no_lock_key "$K"
	no_lease_left
}

# Lock a/b's contenders (PREFIX a/b/HEX) lie inside lock a's range too
# (PREFIX a/): they are another lock's, not a's. (etcdctl lock a still
# waits for them, as concurrency.Mutex does: safe, only more waiting.)
@test "lock a/b's holders are not lock a's: a is free beside them, in every mode; status and --force see a's own" {
	envjob
	start_bg b -S "$S" --limit 2 "$K/b" "$T/envjob" "$T/b"
	wait_until 5 test -e "$T/b.ready"
	start_bg b2 -S "$S" "$K/b/c" "$T/envjob" "$T/b2"
	wait_until 5 test -e "$T/b2.ready"
	run -1 dlock status -S "$S" "$K"
	[[ $output == "$K: free" ]]
	run -0 dlock -S "$S" -n "$K" true
	run -0 dlock -S "$S" -n -s "$K" true
	run -0 dlock -S "$S" -n --limit 3 "$K" true
	run -1 dlock release -S "$S" --force "$K"
	start_bg a -S "$S" "$K" "$T/envjob" "$T/a"
	wait_until 5 test -e "$T/a.ready"
	run -1 dlock -S "$S" -n "$K" true
	start_bg w -S "$S" "$K" touch "$T/w.ran"
	wait_until 5 n_keys "$K" 4	# a's, its waiter's, b's and b/c's
	run -0 dlock status -S "$S" --json "$K" "$K/b"
	python3 -c 'import json,sys; a,b=json.loads(sys.argv[1])["locks"]
assert a["state"] == "held" and len(a["holders"]) == 1 and a["waiting"] == 1, a
assert a["holders"][0]["token"] == sys.argv[2] and a["mode"] == "exclusive", a
assert b["state"] == "held" and len(b["holders"]) == 1 and b["waiting"] == 0, b' \
		"$output" "$(sed -n 's/^DLOCK_TOKEN=//p' "$T/a.env")"
	run -0 dlock status -S "$S"
	[[ $(grep -c held <<<"$output") == 3 ]] || fail "$output"
	run -0 dlock release -S "$S" --force "$K"
	reap a 5
	((bg_status == 75))
	reap w
	((bg_status == 0))
	[[ -e $T/w.ran ]]
	alive "$(<"$T/b.dlock")" && alive "$(<"$T/b2.dlock")" || fail "a/b's holders went"
	touch "$T/b.release" "$T/b2.release"
	reap b
	((bg_status == 0))
	reap b2
	((bg_status == 0))
	no_lock_key "$K"
	no_lease_left
}

@test "release --force deletes the holder's key: it is told at once and exits 75" {
	envjob
	start_bg h -S "$S" -t 60 "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	sleep 0.6
	run -0 dlock release -S "$S" --force "$K"
	[[ $output == *"broken: root@"* || $output == *"broken: "*"@"* ]]
	reap h 5
	((bg_status == 75))
	run -0 dlock history -S "$S" "$K"
	[[ $output == *broken* ]]
	run -1 dlock release -S "$S" --force "$K"
	no_lease_left
}

# break_window's: b holds the lock (envjob), the waiters' keys after it
window_hold() {
	envjob
	start_bg b -S "$S" "$K" "$T/envjob" "$T/b"
	wait_until 5 test -e "$T/b.ready"
}
window_waiting() { n_keys "$K" $(($1 + 1)); }

# A lock broken right after its grant: the holder watches its key from a
# few ms into its job on (a job that ends sooner opens nothing; the watch
# starts at the revision its round read, so a deletion before it is seen
# too), and is told within that and a round of the next holder's start,
# not half a second later (main: 450-490 ms before, 5 of 5). The holder
# breaks its own lock from its job; a waiter in line behind it takes it.
@test "release --force right after the grant: the holder is told within a few ms of the next holder's start" {
	break_window "$S" "$K"
}

@test "acquire, extend and release in separate processes, by the token" {
	run -0 dlock acquire -S "$S" -t 3 "$K"
	token=$output
	run -1 dlock -S "$S" -n "$K" true
	sleep 1.5
	run -0 dlock extend -S "$S" --token "$token" "$K"
	sleep 2	# past the first lease's end: extended
	run -1 dlock -S "$S" -n "$K" true
	run -1 dlock release -S "$S" --token 0123456789abcdef0123456789abcdef "$K"
	run -0 dlock release -S "$S" --token "$token" "$K"
	no_lock_key "$K"
	no_lease_left
	run -1 dlock extend -S "$S" --token "$token" "$K"
	eval "$(dlock acquire -S "$S" --export "$K")"
	run -0 dlock -S "$S" -n "$K" sh -c 'echo $DLOCK_FENCE'
	[[ $output == "$DLOCK_FENCE" ]]
	run -0 dlock release -S "$S" "$K"
}

# lease_ttl KEY-OF-A-HOLDER: the granted TTL of the lease its key is on
lease_ttl() {
	local id
	id=$(ectl get "$1" -w json | python3 -c 'import json,sys; print("%x" % json.load(sys.stdin)["kvs"][0]["lease"])')
	ectl lease timetolive "$id" | sed -n 's/.*granted with TTL(\([0-9]*\)s).*/\1/p'
}

@test "extend -t 30 after acquire -t 3: the key moves to a 30 s lease, keeping its name, fence and place; the token stays" {
	local key vars
	vars=$(dlock acquire -S "$S" --export -t 3 "$K")
	key=$(lock_keys "$K")
	[[ $(lease_ttl "$key") == 3 ]]
	start_bg w -S "$S" -t 3 "$K" touch "$T/w.ran"	# a waiter behind it
	wait_until 5 n_keys "$K" 2
	eval "$vars"
	run -0 --separate-stderr dlock extend -S "$S" -t 30 "$K"
	assert_output ''
	[[ $(lease_ttl "$key") == 30 ]]
	sleep 4	# past the first lease's end
	run -1 env -u DLOCK_KEY -u DLOCK_TOKEN "$DLOCK" -S "$S" -n "$K" true
	[[ ! -e $T/w.ran ]] || fail "the waiter got the lock"
	lock_keys "$K" | grep -qx "$key"
	run -0 dlock status -S "$S" --json "$K"
	python3 -c 'import json,sys; l=json.loads(sys.argv[1])["locks"][0]
h=l["holders"][0]
assert l["waiting"] == 1 and h["token"] == sys.argv[2], l
assert h["fence"] == int(sys.argv[3]) and 20000 < h["ttl_ms"] <= 30000, l' \
		"$output" "$DLOCK_TOKEN" "$DLOCK_FENCE"
	# the token still names it: re-entry, extend and release by it
	run -0 dlock -S "$S" -n "$K" sh -c 'echo $DLOCK_FENCE'
	[[ $output == "$DLOCK_FENCE" ]]
	run -0 dlock extend -S "$S" -t 60 "$K"
	[[ $(lease_ttl "$key") == 60 ]]
	run -0 dlock extend -S "$S" -t 2 "$K"	# never shorter
	[[ $(lease_ttl "$key") == 60 ]]
	run -0 dlock release -S "$S" "$K"
	reap w
	((bg_status == 0))
	[[ -e $T/w.ran ]]
	no_lock_key "$K"
	no_lease_left
	run -1 dlock extend -S "$S" -t 30 "$K"
}

@test "extend -t past the lease of a lock etcdctl lock waits for: it still waits, and gets it after the release" {
	eval "$(dlock acquire -S "$S" --export -t 2 "$K")"
	run -0 dlock extend -S "$S" -t 20 "$K"
	etcdctl --endpoints="$EP" lock "dlock:$K" touch "$T/e.ran" >"$T/e.out" 2>&1 &
	track $!
	wait_until 5 n_keys "$K" 2
	sleep 3	# past the first lease
	[[ ! -e $T/e.ran ]] || fail "etcdctl lock got in"
	run -0 dlock release -S "$S" "$K"
	wait_until 10 test -e "$T/e.ran" || fail "$(cat "$T/e.out")"
}

@test "a job's own dlock extend -t 30 under dlock -t 3: its dlock keeps the new lease alive, then revokes it" {
	run -0 --separate-stderr dlock -S "$S" -t 3 "$K" sh -c '
		"$DLOCK" extend -S "$0" -t 30 "$1" || exit 9
		sleep 4.5
		"$DLOCK" status -S "$0" --json "$1"' "$S" "$K"
	python3 -c 'import json,sys; h=json.loads(sys.argv[1])["locks"][0]["holders"][0]
assert 20000 < h["ttl_ms"] <= 30000, h' "$output"
	[[ -z $stderr ]] || fail "$stderr"
	no_lock_key "$K"
	no_lease_left
	# moved just before the release, no renewal in between
	run -0 dlock -S "$S" -t 30 "$K" sh -c '"$DLOCK" extend -S "$0" -t 60 "$1"' "$S" "$K"
	no_lock_key "$K"
	no_lease_left
}

@test "the README's pipeline holds on etcd: extend -t 900 between its steps" {
	local script
	script=$(sed -n '/^    #!\/bin\/sh$/,/^$/p' "$BATS_TEST_DIRNAME/../README.md" | sed 's/^    //')
	[[ $script == *'dlock extend -t 900 staging'* ]] || fail "README: $script"
	mkdir -p "$T/bin"
	ln -s "$DLOCK" "$T/bin/dlock"
	# the last step shows the lease it runs under
	printf '%s\n' "${script//sleep 1/dlock status --json staging}" >"$T/pipeline.sh"
	DLOCK_SERVERS=$S PATH=$T/bin:$PATH run -0 --separate-stderr sh "$T/pipeline.sh"
	[[ ${lines[0]} == "migrating, fence "[0-9]* && ${lines[1]} == deploying ]] || fail "$output"
	python3 -c 'import json,sys; h=json.loads(sys.argv[1])["locks"][0]["holders"][0]
assert 800000 < h["ttl_ms"] <= 900000, h' "${lines[2]}"
	no_lock_key staging
	no_lease_left
}

# ---- a cluster of three -------------------------------------------------------------

@test "three members: one killed, the job goes on; all killed, 75 holding and 69 acquiring" {
	start_etcd "$T" m1 m2 m3
	CLUSTER="m1 m2 m3"
	local url="etcd://$(<"$T/m1/ep"),$(<"$T/m2/ep"),$(<"$T/m3/ep")"
	envjob
	# a TTL that an election (0.5 s here) and a loaded machine fit in
	start_bg h -S "$url" -t 4 "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready"
	kill -KILL "$(<"$T/m1/pid")"	# the member dlock talks to
	sleep 4.5	# more than a TTL: renewals go to the others
	alive "$(<"$T/h.dlock")" || fail "$(cat "$T/h.err")"
	run -0 dlock status -S "$url" "$K"
	touch "$T/h.release"
	reap h
	((bg_status == 0))

	start_bg h2 -S "$url" -t 4 "$K" "$T/envjob" "$T/h2"
	wait_until 5 test -e "$T/h2.ready"
	kill -KILL "$(<"$T/m2/pid")" "$(<"$T/m3/pid")"
	reap h2 8
	((bg_status == 75))
	run -69 dlock -S "$url" -w 1 "$K" true
}

# ---- credentials and TLS ---------------------------------------------------------------

@test "authentication: the user and password from the URL or --password-file; a wrong one is 77" {
	start_etcd "$T" a1
	CLUSTER=a1
	local ep
	ep=$(<"$T/a1/ep")
	etcdctl --endpoints="$ep" user add root:rootpw >/dev/null
	etcdctl --endpoints="$ep" user add ann:annpw >/dev/null
	etcdctl --endpoints="$ep" role add locker >/dev/null
	etcdctl --endpoints="$ep" role grant-permission locker --prefix=true readwrite dlock: >/dev/null
	etcdctl --endpoints="$ep" user grant-role ann locker >/dev/null
	etcdctl --endpoints="$ep" auth enable >/dev/null
	run -0 dlock -S "etcd://ann:annpw@$ep" "$K" true
	printf 'annpw\n' >"$T/pw"
	run -0 dlock -S "etcd://ann@$ep" --password-file "$T/pw" "$K" true
	run -77 --separate-stderr dlock -S "etcd://ann:wrong@$ep" "$K" true
	[[ $stderr == *"authentication failed"* ]]
	run -77 dlock -S "etcd://$ep" "$K" true
	run -77 dlock -S "etcd://ann:annpw@$ep" --prefix other: "$K" true
}

@test "etcd auth, a user who may only read: status and history work; taking or breaking the lock is 77, one line naming lock, server and user, nothing broken" {
	start_etcd "$T" a2
	CLUSTER=a2
	local ep
	ep=$(<"$T/a2/ep")
	etcdctl --endpoints="$ep" user add root:rootpw >/dev/null
	etcdctl --endpoints="$ep" user add ann:annpw >/dev/null
	etcdctl --endpoints="$ep" user add bob:bobpw >/dev/null
	etcdctl --endpoints="$ep" role add locker >/dev/null
	etcdctl --endpoints="$ep" role add reader >/dev/null
	etcdctl --endpoints="$ep" role grant-permission locker --prefix=true readwrite dlock: >/dev/null
	etcdctl --endpoints="$ep" role grant-permission reader --prefix=true read dlock: >/dev/null
	etcdctl --endpoints="$ep" user grant-role ann locker >/dev/null
	etcdctl --endpoints="$ep" user grant-role bob reader >/dev/null
	etcdctl --endpoints="$ep" auth enable >/dev/null 2>&1
	envjob
	start_bg h -S "etcd://ann:annpw@$ep" -t 30 "$K" "$T/envjob" "$T/h"
	wait_until 5 test -e "$T/h.ready" || fail "$(cat "$T/h.err")"
	run -0 dlock status -S "etcd://bob:bobpw@$ep" "$K"
	[[ $output == *"held, exclusive"* ]]
	run -0 dlock history -S "etcd://bob:bobpw@$ep" "$K"
	[[ $output == *acquired* ]]
	run -77 --separate-stderr dlock release -S "etcd://bob:bobpw@$ep" --force "$K"
	assert_output ''	# no 'broken' line
	[[ $stderr == "dlock: $K: etcd://$ep: etcdserver: permission denied (etcd user bob)" ]] ||
		fail "$stderr"
	run -77 --separate-stderr dlock -S "etcd://bob:bobpw@$ep" -n "${K}b" touch "$T/ran"
	[[ $stderr == "dlock: ${K}b: etcd://$ep: etcdserver: permission denied (etcd user bob)" ]] ||
		fail "$stderr"
	[[ ! -e $T/ran ]]
	run -77 --separate-stderr dlock -S "etcd://nobody:x@$ep" -n "$K" true
	[[ $stderr == *"authentication failed, invalid user ID or password" ]] || fail "$stderr"
	alive "$(<"$T/h.dlock")" || fail "the holder went: $(cat "$T/h.err")"
	touch "$T/h.release"
	reap h
	((bg_status == 0)) || fail "$(cat "$T/h.err")"
}

@test "a member cut off from the majority: 69 (transient), never 70, whatever --node-timeout" {
	start_etcd "$T" m1 m2 m3
	CLUSTER="m1 m2 m3"
	local one="etcd://$(<"$T/m1/ep")"
	kill -STOP "$(<"$T/m2/pid")" "$(<"$T/m3/pid")"
	sleep 1	# two election timeouts: m1 knows it has no leader
	# past etcd's own request timeout: its answer ("context deadline
	# exceeded", gRPC Unknown) is a cluster that cannot serve now
	run -69 --separate-stderr dlock -S "$one" --node-timeout 9 -t 30 -n "$K" touch "$T/ran"
	[[ $stderr == "dlock: $K: $one: "* ]] || fail "$stderr"
	run -69 dlock -S "$one" -n "$K" touch "$T/ran"
	run -69 dlock status -S "$one" --node-timeout 9 "$K"
	[[ ! -e $T/ran ]]
	kill -CONT "$(<"$T/m2/pid")" "$(<"$T/m3/pid")"
	wait_until 10 etcd_up "$T/m1"
	run -0 dlock -S "$one" -n "$K" true
}

# readme_block N: the README's etcd section's Nth code block (1-based),
# unindented, its example members and password file this test's
readme_block() {
	awk -v n="$1" '
		/^### / { inside = ($0 == "### etcd") }
		inside && /^    / { if (!in_block) k++; in_block = 1; if (k == n) print substr($0, 5); next }
		{ in_block = 0 }' "$BATS_TEST_DIRNAME/../README.md" |
		sed "s|10\.0\.0\.1:2379,10\.0\.0\.2:2379,10\.0\.0\.3:2379|$MEMBERS|g; s|/etc/dlock\.pw|$T/dlock.pw|g"
}

@test "the README's etcd examples run as written: the URL of every member, etcdctl lock, the role for auth, etcdctl get and lease timetolive" {
	start_etcd "$T" r1 r2 r3
	CLUSTER="r1 r2 r3"
	MEMBERS="$(<"$T/r1/ep"),$(<"$T/r2/ep"),$(<"$T/r3/ep")"
	local a b c line
	a=$(readme_block 1) b=$(readme_block 2) c=$(readme_block 3)
	[[ $a == *"dlock -S etcd://$MEMBERS nightly ./nightly.sh"* && $b == *"role grant-permission"* &&
		$c == *"lease timetolive"* ]] || fail "README: $a / $b / $c"
	mkdir -p "$T/bin"
	ln -s "$DLOCK" "$T/bin/dlock"
	export PATH=$T/bin:$PATH
	cd "$T"
	printf '#!/bin/sh\necho start >>runs\nsleep 1\necho end >>runs\n' >nightly.sh
	chmod +x nightly.sh
	# 1: dlock and etcdctl lock, each waiting for the other
	while read -r line; do
		bash -c "$line" >>block1.out 2>&1 &
		track $!
		wait_until 5 test -s runs || fail "$line: $(cat block1.out)"
	done <<<"$a"
	wait_until 10 eval '(($(wc -l <runs) == 4))' || fail "$(cat runs block1.out)"
	[[ $(<runs) == $'start\nend\nstart\nend' ]] || fail "runs: $(cat runs)"
	# 2: a role for the prefix, a user with it, dlock as that user
	etcdctl --endpoints="$MEMBERS" user add root:rootpw >/dev/null
	etcdctl --endpoints="$MEMBERS" auth enable >/dev/null 2>&1
	printf 'cronpw\n' >"$T/dlock.pw"
	chmod 600 "$T/dlock.pw"
	: >runs
	ETCDCTL_USER=root:rootpw run -0 bash -e -c "$b"
	[[ $(<runs) == $'start\nend' ]] || fail "$output"
	run -0 dlock history -S "etcd://cron@$MEMBERS" --password-file "$T/dlock.pw" --json nightly
	[[ $output == *'"event":"released"'* ]] || fail "$output"
	# 3: the holder's key first, and its lease's time left
	start_bg h -S "etcd://cron@$MEMBERS" --password-file "$T/dlock.pw" -t 20 nightly sleep 30
	wait_until 10 eval '[[ $(ETCDCTL_USER=root:rootpw etcdctl --endpoints="$MEMBERS" get --prefix --keys-only dlock:nightly/ | grep -c .) == 1 ]]' ||
		fail "$(cat "$T/h.err")"
	start_bg w -S "etcd://cron@$MEMBERS" --password-file "$T/dlock.pw" nightly true
	wait_until 10 eval '[[ $(ETCDCTL_USER=root:rootpw etcdctl --endpoints="$MEMBERS" get --prefix --keys-only dlock:nightly/ | grep -c .) == 2 ]]' ||
		fail "$(cat "$T/h.err" "$T/w.err"; ETCDCTL_USER=root:rootpw etcdctl --endpoints="$MEMBERS" get --prefix dlock:nightly/)"
	ETCDCTL_USER=root:rootpw ETCDCTL_ENDPOINTS=$MEMBERS run -0 bash -e -c "$c"
	[[ ${lines[0]} == dlock:nightly/* && ${lines[1]} == "dlock1 "*" x" && ${lines[2]} == *"sleep 30" ]] ||
		fail "$output"
	[[ ${lines[-1]} == "lease "*" granted with TTL(20s), remaining("*"s)"* ]] || fail "$output"
	kill -TERM "$(<"$T/h.dlock")"
	reap h
	reap w
	((bg_status == 0))
}

@test "etcds://: TLS with a test CA; a server the CA did not sign is refused" {
	command -v openssl >/dev/null || skip_unless_strict "no openssl"
	local d=$T/pki port pport
	mkdir -p "$d"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=testca \
		-keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
		-keyout "$d/srv.key" -out "$d/srv.csr" 2>/dev/null
	printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$d/ext"
	openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
		-CAcreateserial -days 2 -extfile "$d/ext" -out "$d/srv.crt" 2>/dev/null
	port=$(free_port) pport=$(free_port)
	mkdir -p "$T/tls1"
	etcd --name tls1 --data-dir "$T/tls1/data" \
		--listen-client-urls "https://127.0.0.1:$port" \
		--advertise-client-urls "https://127.0.0.1:$port" \
		--listen-peer-urls "http://127.0.0.1:$pport" \
		--initial-advertise-peer-urls "http://127.0.0.1:$pport" \
		--initial-cluster "tls1=http://127.0.0.1:$pport" \
		--cert-file "$d/srv.crt" --key-file "$d/srv.key" \
		--log-level error >"$T/tls1/log" 2>&1 3>&- &
	echo $! >"$T/tls1/pid"
	CLUSTER=tls1
	wait_until 10 etcdctl --endpoints="https://127.0.0.1:$port" --cacert "$d/ca.crt" \
		endpoint health >/dev/null 2>&1
	run -0 dlock -S "etcds://127.0.0.1:$port" --tls-ca "$d/ca.crt" "$K" sh -c 'echo $DLOCK_FENCE'
	[[ $output =~ ^[0-9]+$ ]]
	run -69 --separate-stderr dlock -S "etcds://127.0.0.1:$port" -w 1 "$K" true
	[[ $stderr == *certificate* ]]
	run -0 dlock -S "etcds://localhost:$port" --tls-ca "$d/ca.crt" -t 3 "$K" sleep 1.2
}
