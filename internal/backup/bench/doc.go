// Package bench holds the backup and restore benchmark (make bench-backup): a test tagged
// bench, kept out of the unit and integration tiers, that times a RedisBackup's path (a
// node's snapshot streamed into a real S3 server) against `redis-cli --rdb`, and a restore
// (the restore subcommand, then redis-server loading what it placed) against a plain
// redis-server loading the same snapshot from disk. It needs redis-server, redis-cli and the
// versitygw binary (VERSITYGW); not the Kubernetes sandbox.
package bench
