package snapshot_test

import (
	"context"
	"io"
	"os/exec"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
	"github.com/rediskube/redis-operator/internal/snapshot"
)

// BenchmarkStream measures snapshots of ~50 MB (50,000 values of 1,000 bytes, uncompressed)
// streamed to io.Discard from a local redis-server, both forms; MB/s is the whole transfer,
// the server's fork and dump included. It is skipped without redis-server on PATH.
func BenchmarkStream(b *testing.B) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		b.Skipf("redis-server is not on PATH: %v", err)
	}
	for _, form := range []struct{ name, diskless string }{{"diskless", "yes"}, {"disk", "no"}} {
		b.Run(form.name, func(b *testing.B) {
			src := redistest.StartServer(b, redistest.ServerOptions{Config: []string{
				"enable-debug-command yes", "rdbcompression no", "repl-diskless-sync " + form.diskless,
			}})
			ep := src.Endpoint(redis.Auth{})
			c := goredis.NewClient(&goredis.Options{Addr: ep.Address(), DisableIdentity: true})
			defer func() { _ = c.Close() }()
			ctx := context.Background()
			if err := c.Do(ctx, "DEBUG", "POPULATE", 50_000, "key", 1000).Err(); err != nil {
				b.Fatalf("DEBUG POPULATE: %v", err)
			}
			var size int64
			for b.Loop() {
				info, err := snapshot.Stream(ctx, ep, io.Discard, snapshot.Options{})
				if err != nil {
					b.Fatal(err)
				}
				size = info.Bytes
			}
			b.SetBytes(size)
		})
	}
}
