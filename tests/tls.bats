#!/usr/bin/env bats
# tls.bats - rediss:// and rediss-sentinel:// against redis-server's own
# TLS port, with a CA, server and client certificates that setup_file makes
# with openssl: the certificate checked (CA, host name), mutual TLS, the
# lock, its renewal, RedLock, status and a sentinel over TLS; bad TLS input
# refused before anything is taken; a plain run never loads OpenSSL.

load helpers
load redlock_helpers	# dlk, holding, no_lock_keys

# cert NAME CA SUBJECT [SAN]: NAME.pem and NAME.key in $TLS, signed by CA
cert() {
	local name=$1 ca=$2 subj=$3 san=${4:-}
	openssl req -new -newkey rsa:2048 -nodes -keyout "$TLS/$name.key" \
		-out "$TLS/$name.csr" -subj "$subj" 2>/dev/null || return 1
	if [[ $san ]]; then
		printf 'subjectAltName=%s\n' "$san" >"$TLS/$name.ext"
	else
		printf 'extendedKeyUsage=clientAuth\n' >"$TLS/$name.ext"
	fi
	openssl x509 -req -in "$TLS/$name.csr" -CA "$TLS/$ca.pem" -CAkey "$TLS/$ca.key" \
		-CAcreateserial -days 2 -extfile "$TLS/$name.ext" -out "$TLS/$name.pem" 2>/dev/null
}

setup_file() {
	command -v openssl >/dev/null || skip "no openssl to make certificates"
	export TLS=$BATS_FILE_TMPDIR/tls
	mkdir -p "$TLS"
	local ca
	for ca in ca other-ca; do
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=dlock test $ca" \
			-keyout "$TLS/$ca.key" -out "$TLS/$ca.pem" 2>/dev/null ||
			fail "openssl: cannot make $ca"
	done
	cert server ca /CN=localhost 'DNS:localhost,IP:127.0.0.1' &&
		cert two ca /CN=two.test 'DNS:two.test' &&
		cert elsewhere ca /CN=other.example 'DNS:other.example' &&
		cert client ca /CN=dlock-client &&
		cert stranger other-ca /CN=dlock-stranger ||
		fail "openssl: cannot make the certificates"
}

port() { cat "$T/$1/port"; }
url() { echo "rediss://${2:-127.0.0.1}:$(port "$1")"; }	# url NAME [HOST]

# job_checks NAME...: a command that prints, for each server NAME, whether
# it holds dlock:K with the job's own token ("yes"/"no"), and its PTTL
job_checks() {
	local s out=''
	for s; do
		out+="t=\$(redis-cli -s $(sock "$s") get dlock:K); "
		out+="[ \"\$t\" = \"\$DLOCK_TOKEN\" ] && echo yes || echo no; "
	done
	echo "$out"
}

@test "rediss://: certificate and host checked, lock taken, command run, key released" {
	start_redis_tls r
	run -0 --separate-stderr dlk -S "$(url r)" --tls-ca "$TLS/ca.pem" K sh -c "$(job_checks r)"
	assert_output yes
	assert_equal "$stderr" ''
	no_lock_keys r
	# by name: SNI and the certificate's DNS name
	run -0 dlk -S "$(url r localhost)" --tls-ca "$TLS/ca.pem" K sh -c "$(job_checks r)"
	assert_output yes
	no_lock_keys r
}

@test "rediss:// without --tls-ca checks against the system's CAs (SSL_CERT_FILE)" {
	start_redis_tls r
	# The system's store has no test CA: refused.
	run -69 --separate-stderr dlk -n -S "$(url r)" K touch "$T/ran"
	assert_regex "$stderr" "^dlock: K: rediss://127\.0\.0\.1:[0-9]+: TLS handshake: certificate verify failed: .*--tls-ca"
	[[ ! -e $T/ran ]] || fail "the command ran"
	# OpenSSL's default store, moved to the test CA, as an admin would
	# install a CA: accepted.
	SSL_CERT_FILE=$TLS/ca.pem run -0 dlk -S "$(url r localhost)" K sh -c "$(job_checks r)"
	assert_output yes
	no_lock_keys r
}

@test "a certificate from another CA is refused: 69, certificate verify failed, nothing taken" {
	start_redis_tls r
	run -69 --separate-stderr dlk -S "$(url r)" --tls-ca "$TLS/other-ca.pem" K touch "$T/ran"
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" "^dlock: K: rediss://127\.0\.0\.1:[0-9]+: TLS handshake: certificate verify failed: (self-signed certificate in certificate chain|unable to get local issuer certificate) \(is --tls-ca the CA that signed it\?\)$"
	[[ ! -e $T/ran ]] || fail "the command ran"
	no_lock_keys r
	[[ -z $(all_keys r) ]] || fail "keys left: $(all_keys r)"
	# a certificate to fix is no outage: --unavailable run does not run
	run -69 --separate-stderr dlk -S "$(url r)" --tls-ca "$TLS/other-ca.pem" \
		--unavailable run K touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "--unavailable run ran the command"
}

@test "a certificate for another name is refused: 69 naming the mismatch" {
	start_redis_tls r --tls-cert-file "$TLS/elsewhere.pem" --tls-key-file "$TLS/elsewhere.key"
	run -69 --separate-stderr dlk -n -S "$(url r)" --tls-ca "$TLS/ca.pem" K touch "$T/ran"
	assert_regex "$stderr" ": TLS handshake: certificate verify failed: IP address mismatch: the certificate is not for 127\.0\.0\.1$"
	run -69 --separate-stderr dlk -n -S "$(url r localhost)" --tls-ca "$TLS/ca.pem" K touch "$T/ran"
	assert_regex "$stderr" "^dlock: K: rediss://localhost:[0-9]+: TLS handshake: certificate verify failed: hostname mismatch: the certificate is not for localhost$"
	[[ ! -e $T/ran ]] || fail "the command ran"
	[[ -z $(all_keys r) ]] || fail "keys left: $(all_keys r)"
}

# two.test: 127.0.0.1, which refuses, then 127.0.0.2, where the server is
@test "a host name whose first address refuses: the next one, its certificate checked against the name" {
	need_hosts
	printf '127.0.0.1 two.test\n127.0.0.2 two.test\n' >"$T/hosts"
	start_redis_tls r --bind 127.0.0.2 --tls-cert-file "$TLS/two.pem" --tls-key-file "$TLS/two.key"
	run -0 --separate-stderr with_hosts "$DLOCK" -S "$(url r two.test)" --tls-ca "$TLS/ca.pem" \
		K sh -c "$(job_checks r)"
	assert_output yes
	assert_equal "$stderr" ''
	no_lock_keys r
	# a certificate that names the address reached, not the name: refused
	rcli r config set tls-cert-file "$TLS/server.pem" tls-key-file "$TLS/server.key" >/dev/null
	run -69 --separate-stderr with_hosts "$DLOCK" -n -S "$(url r two.test)" --tls-ca "$TLS/ca.pem" \
		K touch "$T/ran"
	assert_regex "$stderr" "^dlock: K: rediss://two\.test:[0-9]+: TLS handshake: certificate verify failed: hostname mismatch: the certificate is not for two\.test$"
	[[ ! -e $T/ran ]] || fail "the command ran"
}

@test "--tls-insecure accepts a certificate from another CA, and one for another name" {
	start_redis_tls r --tls-cert-file "$TLS/elsewhere.pem" --tls-key-file "$TLS/elsewhere.key"
	run -0 --separate-stderr dlk -S "$(url r)" --tls-ca "$TLS/other-ca.pem" --tls-insecure \
		K sh -c "$(job_checks r)"
	assert_output yes
	no_lock_keys r
	printf 'tls-insecure = yes\n' >"$T/conf"
	run -0 dlk --config "$T/conf" -S "$(url r localhost)" K sh -c "$(job_checks r)"
	assert_output yes
}

@test "mutual TLS: accepted with --tls-cert and --tls-key, refused without" {
	start_redis_tls r --tls-auth-clients yes
	run -0 --separate-stderr dlk -S "$(url r)" --tls-ca "$TLS/ca.pem" \
		--tls-cert "$TLS/client.pem" --tls-key "$TLS/client.key" K sh -c "$(job_checks r)"
	assert_output yes
	no_lock_keys r
	local keys; keys=$(all_keys r)	# the fence and history stay
	run -69 --separate-stderr dlk -n -S "$(url r)" --tls-ca "$TLS/ca.pem" K touch "$T/ran"
	assert_regex "$stderr" "^dlock: K: rediss://127\.0\.0\.1:[0-9]+: TLS: .*: the server wants a client certificate \(--tls-cert, --tls-key\)$"
	# a certificate the server's CA did not sign
	run -69 --separate-stderr dlk -n -S "$(url r)" --tls-ca "$TLS/ca.pem" \
		--tls-cert "$TLS/stranger.pem" --tls-key "$TLS/stranger.key" K touch "$T/ran"
	assert_regex "$stderr" "^dlock: K: rediss://127\.0\.0\.1:[0-9]+: TLS"
	[[ ! -e $T/ran ]] || fail "the command ran"
	assert_equal "$(all_keys r)" "$keys"
}

@test "the config file's tls-ca, tls-cert and tls-key; flags win" {
	start_redis_tls r --tls-auth-clients yes
	printf '%s\n' "servers = $(url r)" "tls-ca = $TLS/other-ca.pem" \
		"tls-cert = $TLS/client.pem" "tls-key = $TLS/client.key" >"$T/conf"
	run -69 dlk -n --config "$T/conf" K true
	run -0 dlk --config "$T/conf" --tls-ca "$TLS/ca.pem" K sh -c "$(job_checks r)"
	assert_output yes
	# they serve rediss:// servers, and are left unused without one
	start_redis p
	run -0 dlk --config "$T/conf" -S "$(sock_url p)" K echo plain
	assert_output plain
}

@test "RedLock over 3 TLS servers; one with a bad certificate is one failed server" {
	start_redis_tls r1
	start_redis_tls r2
	start_redis_tls r3
	start_redis_tls r4 --tls-cert-file "$TLS/elsewhere.pem" --tls-key-file "$TLS/elsewhere.key"
	run -0 --separate-stderr dlk -S "$(url r1)" -S "$(url r2 localhost)" -S "$(url r3)" \
		--tls-ca "$TLS/ca.pem" K sh -c "$(job_checks r1 r2 r3)"
	assert_equal "$(echo $output)" "yes yes yes"
	assert_equal "$stderr" ''
	no_lock_keys r1 r2 r3
	# r4's certificate is for another name: 2 of 3 still make a majority
	run -0 --separate-stderr dlk -S "$(url r1)" -S "$(url r4)" -S "$(url r3)" \
		--tls-ca "$TLS/ca.pem" K sh -c "$(job_checks r1 r4 r3)"
	assert_equal "$(echo $output)" "yes no yes"
	no_lock_keys r1 r3 r4
}

@test "the lease is renewed over TLS (-t 2): the key is there mid-job, then released" {
	start_redis_tls r
	run -0 --separate-stderr dlk -S "$(url r)" --tls-ca "$TLS/ca.pem" -t 2 K sh -c "
		sleep 3.5
		$(job_checks r)
		redis-cli -s $(sock r) pttl dlock:K"
	assert_equal "${lines[0]}" yes
	((lines[1] > 0 && lines[1] <= 2000)) || fail "PTTL ${lines[1]} after 3.5 s of a 2 s lease"
	assert_equal "$stderr" ''
	no_lock_keys r
}

@test "status, release --force and the holder's notice over TLS" {
	start_redis_tls r
	local tls=(-S "$(url r)" --tls-ca "$TLS/ca.pem")
	hold h "${tls[@]}" K
	wait_ready h
	run -0 dlk status "${tls[@]}" K
	assert_output --partial 'held'
	run -0 dlk status "${tls[@]}" --json K
	assert_output --partial "\"token\":\"$(job_var h DLOCK_TOKEN)\""
	# the holder is told at once, over its own TLS connection
	run -0 dlk release "${tls[@]}" --force K
	reap h 5
	assert_equal "$bg_status" 75
	run -1 dlk status "${tls[@]}" K
}

@test "rediss-sentinel://: TLS to the sentinel and to the master it names" {
	start_redis_tls m
	# m2's certificate does not name the address the sentinel gives
	start_redis_tls m2 --tls-cert-file "$TLS/elsewhere.pem" --tls-key-file "$TLS/elsewhere.key"
	local d=$T/s port try
	mkdir -p "$d"
	for try in 1 2 3; do
		port=$(free_port)
		printf '%s\n' "port 0" "tls-port $port" "bind 127.0.0.1" "dir $d" \
			"tls-cert-file $TLS/server.pem" "tls-key-file $TLS/server.key" \
			"tls-ca-cert-file $TLS/ca.pem" "tls-auth-clients no" \
			"tls-replication yes" "sentinel monitor m 127.0.0.1 $(port m) 1" \
			"sentinel monitor m2 127.0.0.1 $(port m2) 1" >"$d/sentinel.conf"
		redis-server "$d/sentinel.conf" --sentinel >"$d/log" 2>&1 </dev/null 3>&- &
		echo $! >"$d/pid"
		wait_until 5 sentinel_tls_knows "$port" m && break
		end_pids KILL "$(<"$d/pid")"
	done
	sentinel_tls_knows "$port" m || fail "sentinel did not start: $(cat "$d/log")"
	wait_until 5 sentinel_tls_knows "$port" m2 || fail "sentinel does not know m2: $(cat "$d/log")"
	run -0 --separate-stderr dlk -S "rediss-sentinel://localhost:$port/m" \
		--tls-ca "$TLS/ca.pem" K sh -c "$(job_checks m)"
	assert_output yes
	no_lock_keys m
	run -69 --separate-stderr dlk -n -S "rediss-sentinel://127.0.0.1:$port/m" \
		--tls-ca "$TLS/other-ca.pem" K true
	assert_regex "$stderr" "^dlock: K: rediss-sentinel://127\.0\.0\.1:$port/m: sentinel 127\.0\.0\.1:$port: TLS handshake: certificate verify failed"
	run -69 --separate-stderr dlk -n -S "rediss-sentinel://127.0.0.1:$port/m2" \
		--tls-ca "$TLS/ca.pem" K touch "$T/ran"
	assert_regex "$stderr" "^dlock: K: rediss-sentinel://127\.0\.0\.1:$port/m2: TLS handshake: certificate verify failed: IP address mismatch: the certificate is not for 127\.0\.0\.1$"
	[[ ! -e $T/ran ]] || fail "the command ran"
}
sentinel_tls_knows() {	# sentinel_tls_knows PORT MASTER
	redis-cli --tls --cacert "$TLS/ca.pem" -p "$1" sentinel get-master-addr-by-name "$2" \
		2>/dev/null | head -n 1 | grep -qx 127.0.0.1
}

@test "bad TLS input: one line, 64, nothing taken, the command not run" {
	start_redis_tls r
	local u; u=$(url r)
	bad_tls() {
		run -64 --separate-stderr dlk "$@" K touch "$T/ran"
		assert_equal "${#stderr_lines[@]}" 1
		[[ ! -e $T/ran ]] || fail "the command ran"
	}
	bad_tls -S "$u" --tls-ca "$T/nonesuch.pem"
	assert_equal "$stderr" "dlock: K: --tls-ca $T/nonesuch.pem: no such file or directory"
	bad_tls -S "$u" --tls-ca "$TLS/ca.key"
	assert_regex "$stderr" "^dlock: K: --tls-ca .*/ca\.key: no PEM certificate in it"
	bad_tls -S "$u" --tls-key "$TLS/client.key"
	assert_equal "$stderr" "dlock: --tls-key needs --tls-cert (the client certificate)"
	bad_tls -S "$u" --tls-cert "$TLS/client.pem"
	assert_equal "$stderr" "dlock: --tls-cert needs --tls-key (the client certificate's key)"
	bad_tls -S "$u" --tls-cert "$TLS/client.pem" --tls-key "$TLS/stranger.key"
	assert_regex "$stderr" "^dlock: K: --tls-key .*/stranger\.key: not the key of --tls-cert .*/client\.pem$"
	openssl pkey -in "$TLS/client.key" -aes256 -passout pass:x -out "$T/locked.key"
	bad_tls -S "$u" --tls-cert "$TLS/client.pem" --tls-key "$T/locked.key"
	assert_regex "$stderr" "pass phrase"
	# TLS options with no TLS server: the password would go in clear
	bad_tls -S "redis://127.0.0.1:$(port r)" --tls-ca "$TLS/ca.pem"
	assert_equal "$stderr" "dlock: --tls-ca: no server asks for TLS (rediss://, rediss-sentinel://, postgres://...?sslmode=require, mysql://...?tls=, etcds://; servers from --server)"
	bad_tls -S "$(sock_url r)" --tls-insecure
	printf 'tls-insecure = maybe\n' >"$T/conf"
	bad_tls --config "$T/conf" -S "$u"
	assert_equal "$stderr" "dlock: $T/conf:1: bad tls-insecure 'maybe' (yes or no)"
	[[ -z $(all_keys r) ]] || fail "keys left: $(all_keys r)"
}

@test "rediss:// to a server that does not speak TLS: 69, saying so" {
	start_redis_tcp p
	run -69 --separate-stderr dlk -n --node-timeout 0.3 -t 5 \
		-S "rediss://127.0.0.1:$(port p)" K touch "$T/ran"
	assert_regex "$stderr" "does the server speak TLS on that port\?"
	[[ ! -e $T/ran ]] || fail "the command ran"
}

# libssl_mapped: the command reports whether its dlock (its parent) has
# libssl mapped
libssl_mapped='grep -q libssl /proc/$PPID/maps && echo mapped || echo not'

@test "OpenSSL is loaded only for rediss://: a plain run never maps it" {
	start_redis_tls r
	start_redis p
	run -0 dlk -S "$(sock_url p)" K sh -c "$libssl_mapped"
	assert_output not
	run -0 dlk -S "$(url r)" --tls-ca "$TLS/ca.pem" K sh -c "$libssl_mapped"
	assert_output mapped
}

@test "libssl.so.3 missing: 69, one line saying so, before any server" {
	[[ $(id -u) == 0 ]] && command -v unshare >/dev/null ||
		skip "needs root and unshare(1) to hide libssl.so.3"
	local lib
	lib=$(ldconfig -p | awk '$1 == "libssl.so.3" { print $NF; exit }')
	[[ -n $lib ]] || skip "no libssl.so.3 in ldconfig's cache"
	start_redis_tls r
	: >"$T/empty"
	run -69 --separate-stderr unshare -m --propagation private sh -c \
		'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh "$T/empty" "$lib" \
		"$DLOCK" -S "$(url r)" --tls-ca "$TLS/ca.pem" K touch "$T/ran"
	assert_regex "$stderr" "^dlock: K: TLS needs OpenSSL 3: .*libssl\.so\.3"
	assert_equal "${#stderr_lines[@]}" 1
	[[ ! -e $T/ran ]] || fail "the command ran"
}

# tls_cluster: a 3-master Redis Cluster over TLS, node I on 127.0.0.I,
# each with a certificate that names its own address only (nodeI.pem);
# ports in $T/cluster/ports, PIDs tracked.
cluster_node_port() {	# a free port on 127.0.0.$1 whose bus port is free too
	"$PYTHON" -c 'import socket, random, sys
for _ in range(100):
    p = random.randint(20000, 55535)
    try:
        for q in (p, p + 10000):
            s = socket.socket(); s.bind((sys.argv[1], q)); s.close()
    except OSError:
        continue
    print(p); break' "127.0.0.$1"
}
tls_cluster_up() {
	local i p
	for i in 1 2 3; do
		p=$(sed -n "${i}p" "$T/cluster/ports")
		redis-cli --tls --cacert "$TLS/ca.pem" -h "127.0.0.$i" -p "$p" cluster info 2>/dev/null |
			tr -d '\r' | grep -qx 'cluster_state:ok' || return 1
	done
}
tls_cluster() {
	local i p nodes=()
	mkdir -p "$T/cluster"
	for i in 1 2 3; do
		cert "node$i" ca "/CN=node $i" "IP:127.0.0.$i" || fail "openssl: node$i"
		p=$(cluster_node_port "$i")
		mkdir -p "$T/cluster/$i"
		redis-server --port 0 --tls-port "$p" --bind "127.0.0.$i" --dir "$T/cluster/$i" \
			--tls-cert-file "$TLS/node$i.pem" --tls-key-file "$TLS/node$i.key" \
			--tls-ca-cert-file "$TLS/ca.pem" --tls-auth-clients no --tls-cluster yes \
			--cluster-enabled yes --cluster-announce-ip "127.0.0.$i" \
			--save '' --appendonly no >"$T/cluster/$i/log" 2>&1 </dev/null 3>&- &
		track $!
		echo "$p" >>"$T/cluster/ports"
		nodes+=("127.0.0.$i:$p")
	done
	for i in 1 2 3; do
		p=$(sed -n "${i}p" "$T/cluster/ports")
		wait_until 5 redis-cli --tls --cacert "$TLS/ca.pem" -h "127.0.0.$i" -p "$p" ping >/dev/null ||
			fail "cluster node $i did not start: $(cat "$T/cluster/$i/log")"
	done
	redis-cli --tls --cacert "$TLS/ca.pem" --cluster create "${nodes[@]}" --cluster-yes \
		>"$T/cluster/create.log" 2>&1 || fail "cluster create: $(cat "$T/cluster/create.log")"
	wait_until 20 tls_cluster_up || fail "the TLS cluster is not up"
}

@test "Cluster over TLS: a node a MOVED names is checked against its own address" {
	tls_cluster
	local p1 k
	p1=$(head -n 1 "$T/cluster/ports")
	# a lock whose slot another node (127.0.0.2 or .3) serves
	for k in a b c d e f g h ''; do
		[[ -n $k ]] || fail "no lock of a..h is served by another node"
		redis-cli --tls --cacert "$TLS/ca.pem" -h 127.0.0.1 -p "$p1" exists "dlock:$k" |
			grep -q MOVED && break
	done
	run -0 --separate-stderr dlk -S "rediss://127.0.0.1:$p1" --tls-ca "$TLS/ca.pem" \
		"$k" sh -c 'echo "$DLOCK_KEY"'
	assert_output "dlock:$k"
	# and a seed whose certificate does not name it still fails the check
	run -69 --separate-stderr dlk -S "rediss://localhost:$p1" --tls-ca "$TLS/ca.pem" \
		-n "$k" touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "the command ran"
}
