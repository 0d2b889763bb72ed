#!/usr/bin/env bats
# interop.bats - dlock and redis-py's Lock exclude each other on one key.

load helpers

setup() {
	common_setup
	"$PYTHON" -c 'import redis' 2>/dev/null ||
		skip_unless_strict "$PYTHON has no redis module (python3-redis)"
	start_redis r
	U=$(sock_url r)
	cat >"$T/pylock" <<'EOF'
# pylock SOCK NAME MODE P [TIMEOUT]: a redis-py Lock on NAME.
#   hold: acquire, touch P.ready, release once P.release exists (60 s max)
#   hold-and-die: acquire, touch P.ready, exit without releasing
#   try: print whether a non-blocking acquire succeeded (then release)
#   owned TOKEN: print whether TOKEN owns NAME
import os, sys, time
import redis
sock, name, mode, p = sys.argv[1:5]
r = redis.Redis(unix_socket_path=sock)
lock = r.lock(name, timeout=float(sys.argv[5]) if len(sys.argv) > 5 and mode != "owned" else 30)
if mode in ("hold", "hold-and-die"):
    if not lock.acquire(blocking=False):
        sys.exit("pylock: could not acquire " + name)
    open(p + ".ready", "w").close()
    if mode == "hold-and-die":
        sys.exit(0)
    end = time.monotonic() + 60
    while not os.path.exists(p + ".release") and time.monotonic() < end:
        time.sleep(0.05)
    lock.release()
elif mode == "try":
    got = lock.acquire(blocking=False)
    print(got)
    if got:
        lock.release()
elif mode == "owned":
    lock.local.token = sys.argv[5].encode()
    print(lock.owned())
EOF
}

pylock() { "$PYTHON" "$T/pylock" "$(sock r)" "$@"; }

@test "a redis-py holder makes dlock -n exit 1, then lets it in" {
	"$PYTHON" "$T/pylock" "$(sock r)" dlock:K hold "$T/py" </dev/null 3>&- &
	local py=$!
	track $py
	wait_until 5 test -e "$T/py.ready" || fail "redis-py did not get the lock"
	run -1 dlock -S "$U" -n K touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "the command ran"
	touch "$T/py.release"
	wait_until 5 dead $py || fail "redis-py did not finish"
	wait $py
	run -0 dlock -S "$U" -n K touch "$T/ran"
	[[ -e $T/ran ]]
}

@test "a dlock holder makes redis-py's non-blocking acquire fail" {
	hold h -S "$U" K
	wait_ready h
	run -0 pylock dlock:K try "$T/py"
	assert_output False
	finish h
	assert_equal "$bg_status" 0
	run -0 pylock dlock:K try "$T/py"
	assert_output True
}

@test "redis-py sees dlock's token as the owner's" {
	hold h -S "$U" K
	wait_ready h
	run -0 pylock dlock:K owned "$T/py" "$(job_var h DLOCK_TOKEN)"
	assert_output True
	run -0 pylock dlock:K owned "$T/py" 0123456789abcdef0123456789abcdef
	assert_output False
	finish h
}

@test "a waiting dlock notices redis-py's release (no notification)" {
	"$PYTHON" "$T/pylock" "$(sock r)" dlock:K hold "$T/py" </dev/null 3>&- &
	local py=$!
	track $py
	wait_until 5 test -e "$T/py.ready" || fail "redis-py did not get the lock"
	local n0; n0=$(nclients r)
	start_bg w -S "$U" -w 10 K touch "$T/w.ran"
	wait_until 5 more_clients r "$n0" || fail "the waiter never connected"
	[[ ! -e $T/w.ran ]] || fail "the waiter ran while redis-py held the lock"
	touch "$T/py.release"
	reap w 11
	assert_equal "$bg_status" 0
	[[ -e $T/w.ran ]]
}

@test "a waiting dlock notices a redis-py lock expiring" {
	run -0 pylock dlock:K hold-and-die "$T/py" 1
	key_exists r dlock:K
	run -0 dlock -S "$U" -w 10 K sh -c 'redis-cli -s "$1" get dlock:K; echo "$DLOCK_TOKEN"' sh "$(sock r)"
	assert_equal "${lines[0]}" "${lines[1]}"	# ours now, not redis-py's
}
