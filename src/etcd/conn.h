/* conn.h - one connection to an etcd cluster's JSON gateway: its
 * members tried in turn, the user authenticated, each call bounded by a
 * deadline, errors mapped to dlock's exit statuses. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>
#include "engine.h"
#include "http.h"
#include "url.h"

/* gRPC codes the gateway passes on in "code" ("grpc_code" in a stream) */
#define GRPC_CANCELLED 1
#define GRPC_UNKNOWN 2
#define GRPC_INVALID_ARGUMENT 3
#define GRPC_DEADLINE_EXCEEDED 4
#define GRPC_NOT_FOUND 5
#define GRPC_PERMISSION_DENIED 7
#define GRPC_RESOURCE_EXHAUSTED 8
#define GRPC_FAILED_PRECONDITION 9
#define GRPC_ABORTED 10
#define GRPC_UNAVAILABLE 14
#define GRPC_DATA_LOSS 15
#define GRPC_UNAUTHENTICATED 16

/* What the clients of one lock share: the cluster, its addresses (looked
 * up once, on the main thread), the credentials and the auth token. */
struct etcd_cluster {
	const struct etcd_url *url;
	const struct tls_options *tls;
	const char *user, *password;	/* NULL: no authentication */
	struct net_addrs addr[ETCD_MAX_ENDPOINTS];
	bool resolved[ETCD_MAX_ENDPOINTS];
	char resolve_err[ETCD_MAX_ENDPOINTS][320];
	bool resolved_all;
	char *token;		/* etcd's auth token; NULL: none yet */
	size_t cur;		/* the member that answered last */
	bool tls_refused;	/* a TLS handshake failed on a certificate */
	bool too_old;		/* a member is older than dlock needs */
	bool busy;		/* a member answered that it cannot serve now
				 * (HTTP 429 or 503, too many requests, no
				 * leader): set by calls, cleared by the
				 * engine's try */
	/* One URL, one cluster: the cluster_id of the first answer (a
	 * uint64 in decimal, as etcd writes it; "": none yet) and the
	 * member that gave it; every later answer must carry the same.
	 * members_checked: the URL's other members were matched to that
	 * cluster's, or asked, once (a URL of several members only). */
	char cluster_id[24];
	size_t cluster_ep;
	bool members_checked;
};

struct etcd_client {
	struct etcd_cluster *cl;
	struct http_conn conn;
	size_t ep;		/* the member conn is to */
	bool fresh;		/* conn has carried no request yet */
	/* a stream (watch): its answer so far */
	struct http_resp stream;
	bool streaming;
	size_t stream_at;	/* how much of stream.body is read */
};

void etcd_cluster_init(struct etcd_cluster *cl, const struct etcd_url *url,
		       const struct tls_options *tls, const char *password);
void etcd_cluster_free(struct etcd_cluster *cl);
/* The names of every member looked up, where not done yet (main thread). */
void etcd_cluster_resolve(struct etcd_cluster *cl);

void etcd_client_init(struct etcd_client *c, struct etcd_cluster *cl);
void etcd_client_close(struct etcd_client *c);

/* POST path with the JSON body; the answer's JSON in *reply (json_object_put
 * it). 0, or -1 with err (69 unreachable or timed out, 77 credentials,
 * 70 an answer not understood or an error etcd gave) and *code, etcd's
 * gRPC code (-1 when it gave none). */
int etcd_call(struct etcd_client *c, const char *path, json_object *body,
	      int64_t deadline_ms, json_object **reply, int *code,
	      struct error *err);

/* Starts a stream (a watch): connects afresh and sends; its messages are
 * read by etcd_stream_next. */
int etcd_stream_start(struct etcd_client *c, const char *path, json_object *body,
		      int64_t deadline_ms, struct error *err);
/* The next whole message of the stream, without waiting: 1 with *msg, 0
 * none yet, -1 the stream ended or failed (err says). */
int etcd_stream_next(struct etcd_client *c, json_object **msg, struct error *err);

/* An error etcd gave (its gRPC code and words) as dlock's exit status:
 * 77 credentials and rights, 69 a cluster that cannot serve now, 70 the
 * rest. */
int etcd_exit_of(int code, const char *msg);

/* "etcd://host:port" of member i, for messages. */
const char *etcd_member_text(const struct etcd_cluster *cl, size_t i, char *buf,
			     size_t len);
