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
