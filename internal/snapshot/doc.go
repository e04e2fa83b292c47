// Package snapshot reads a snapshot (an RDB file) of a Redis or Valkey server over the
// network, the way a replica's first sync does and `redis-cli --rdb` does, and streams it to
// an io.Writer: the backup feature's way to take a copy of a node's data.
//
// # Why over the network
//
// The operator never execs into a pod: it would need pods/exec permissions on every
// namespace it manages, the server image would have to ship a shell and tools, and the file
// would cross the API server. A replica's sync needs only the server's port and a user
// allowed to sync; the server produces the RDB from memory, so it is consistent at the
// moment of its fork whatever persistence the node has (none, RDB or AOF).
//
// # The protocol
//
// Stream dials the node (TLS when the endpoint says so), authenticates (AUTH with a password
// or a user and password), and sends:
//
//	REPLCONF capa eof      the client can take the diskless form (see below)
//	REPLCONF rdb-only 1    the RDB only: no replication stream after it (Redis 7.0+, Valkey)
//	SYNC
//
// The server forks and, while its child makes the RDB, sends a newline every second as a
// keepalive. Then it sends the RDB in one of two forms: "$<length>\r\n" and that many bytes
// (repl-diskless-sync no: the child wrote an RDB file in the server's directory, as BGSAVE
// would, which is then sent), or "$EOF:<40 random characters>\r\n", the RDB as the child
// writes it to the socket, and the 40 characters again as end mark (repl-diskless-sync yes,
// the default since Redis 7.0). Stream passes the RDB to the writer as it arrives, through
// buffers of 64 KiB: its memory does not grow with the snapshot. It checks the RDB's header
// ("REDIS" and a 4-digit version, or "VALKEY" and a 3-digit one), its end-of-file opcode
// and, unless the server runs with rdbchecksum no, its CRC-64; it reports the size, the
// SHA-256 of the bytes written, the RDB version and whether the CRC was verified.
//
// # What the server sees
//
// A replica: "Replica ... asks for synchronization", a full resync, a fork (the memory cost
// of a BGSAVE: pages written during the dump are copied), and, once the payload is sent, a
// replica that disconnects. With rdb-only the server sends no write after the RDB and drops
// the replica as soon as it is sent, holding no backlog for it meanwhile; a server before Redis 7.0 ignores rdb-only and
// would stream writes after the RDB, which Stream never reads. A snapshot taken from a
// replica costs its master nothing, but the replica must be in sync: a replica whose link to
// its master is down refuses (NOMASTERLINK, or ERR before Redis 7.0).
//
// # Permissions
//
// The user needs the commands REPLCONF and SYNC (both in the @admin, @slow and @dangerous
// categories), no key or channel permission, for example:
//
//	ACL SETUSER backup on >password +replconf +sync
//
// AUTH is always allowed. A user without them is refused with NOPERM, returned as a
// *ServerError.
package snapshot
