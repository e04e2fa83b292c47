//go:build integration

package restore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	goredis "github.com/redis/go-redis/v9"

	"github.com/rediskube/redis-operator/internal/redis/redistest"
	"github.com/rediskube/redis-operator/internal/restore"
	"github.com/rediskube/redis-operator/internal/s3test"
)

const keys = 200

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func clientOf(t *testing.T, s *redistest.Server) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// snapshotOf makes an RDB with a real redis-server: keys+i with value i, every other one
// with a TTL of about an hour.
func snapshotOf(t *testing.T) []byte {
	t.Helper()
	ctx := testContext(t)
	s := redistest.StartServer(t, redistest.ServerOptions{})
	c := clientOf(t, s)
	for i := range keys {
		ttl := time.Duration(0)
		if i%2 == 0 {
			ttl = time.Hour
		}
		if err := c.Set(ctx, fmt.Sprintf("key:%d", i), fmt.Sprint(i), ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	rdb, err := os.ReadFile(filepath.Join(s.Dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	return rdb
}

// verifyKeys starts a redis-server on dir and reads every key and TTL back.
func verifyKeys(t *testing.T, dir string, appendOnly bool) {
	t.Helper()
	ctx := testContext(t)
	config := []string{"dir " + dir}
	if appendOnly {
		config = append(config, "appendonly yes")
	}
	s := redistest.StartServer(t, redistest.ServerOptions{Config: config})
	c := clientOf(t, s)
	if n, err := c.DBSize(ctx).Result(); err != nil || n != keys {
		t.Fatalf("DBSIZE = %d, %v; want %d", n, err, keys)
	}
	for i := range keys {
		k := fmt.Sprintf("key:%d", i)
		if v, err := c.Get(ctx, k).Result(); err != nil || v != fmt.Sprint(i) {
			t.Fatalf("GET %s = %q, %v; want %d", k, v, err, i)
		}
		ttl, err := c.TTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 && (ttl < 50*time.Minute || ttl > time.Hour) {
			t.Fatalf("TTL %s = %v, want about an hour", k, ttl)
		}
		if i%2 == 1 && ttl != -1 {
			t.Fatalf("TTL %s = %v, want none", k, ttl)
		}
	}
}

type fixture struct {
	store *s3test.Server
	rdb   []byte
	sum   string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	f := fixture{store: s3test.Start(t, s3test.Options{}), rdb: snapshotOf(t)}
	h := sha256.Sum256(f.rdb)
	f.sum = hex.EncodeToString(h[:])
	f.put(t, "backups/ns/b1/redis-0.rdb", f.rdb)
	return f
}

func (f fixture) put(t *testing.T, key string, data []byte) {
	t.Helper()
	_, err := f.store.Client(t).PutObject(testContext(t), f.store.Bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// run runs the subcommand as the init container does.
func (f fixture) run(t *testing.T, dir, key, sum string, size int, appendOnly bool) error {
	t.Helper()
	args := []string{"--endpoint", f.store.URL(), "--bucket", f.store.Bucket, "--region", s3test.Region, "--force-path-style",
		"--key", key, "--sha256", sum, "--bytes", fmt.Sprint(size), "--data-dir", dir}
	if appendOnly {
		args = append(args, "--appendonly")
	}
	env := map[string]string{restore.EnvAccessKeyID: f.store.AccessKey, restore.EnvSecretAccessKey: f.store.SecretKey}
	var out bytes.Buffer
	err := restore.RunCommand(testContext(t), args, func(k string) string { return env[k] }, &out)
	t.Logf("restore: %s %v", strings.TrimSpace(out.String()), err)
	return err
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestRestoreIntoRedis(t *testing.T) {
	f := newFixture(t)
	for _, appendOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("appendonly=%v", appendOnly), func(t *testing.T) {
			dir := t.TempDir()
			if err := f.run(t, dir, "backups/ns/b1/redis-0.rdb", f.sum, len(f.rdb), appendOnly); err != nil {
				t.Fatal(err)
			}
			if appendOnly {
				// Loaded from the AOF, whose base the snapshot is: the dump.rdb beside it,
				// which a Redis with appendonly no would load, is the same snapshot.
				sum, err := os.ReadFile(filepath.Join(dir, "dump.rdb"))
				if err != nil || !bytes.Equal(sum, f.rdb) {
					t.Fatalf("dump.rdb beside the AOF: %v", err)
				}
				if err := os.Remove(filepath.Join(dir, "dump.rdb")); err != nil {
					t.Fatal(err)
				}
			}
			verifyKeys(t, dir, appendOnly)
			// Redis has run on the data since: a second run (a restarted pod) leaves it alone.
			before := listDir(t, dir)
			if err := f.run(t, dir, "backups/ns/b1/redis-0.rdb", f.sum, len(f.rdb), appendOnly); err != nil {
				t.Fatalf("second run: %v", err)
			}
			if after := listDir(t, dir); strings.Join(before, ",") != strings.Join(after, ",") {
				t.Errorf("second run changed the data dir: %v, then %v", before, after)
			}
		})
	}
}

func TestRestoreRefusesAnotherObject(t *testing.T) {
	f := newFixture(t)
	tampered := bytes.Clone(f.rdb)
	tampered[len(tampered)/2] ^= 0xff
	f.put(t, "backups/ns/b1/tampered.rdb", tampered)
	for _, tc := range []struct {
		name string
		key  string
		size int
	}{
		{"checksum", "backups/ns/b1/tampered.rdb", len(f.rdb)},
		{"longer", "backups/ns/b1/redis-0.rdb", len(f.rdb) - 1},
		{"shorter", "backups/ns/b1/redis-0.rdb", len(f.rdb) + 1},
	} {
		for _, appendOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/appendonly=%v", tc.name, appendOnly), func(t *testing.T) {
				dir := t.TempDir()
				err := f.run(t, dir, tc.key, f.sum, tc.size, appendOnly)
				if !errors.Is(err, restore.ErrMismatch) {
					t.Fatalf("err = %v, want ErrMismatch", err)
				}
				if names := listDir(t, dir); len(names) != 0 {
					t.Errorf("the refused restore left %v", names)
				}
			})
		}
	}
}

func TestRestoreRefusesADataDirWithData(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name string
		make func(dir string) error
	}{
		{"another dump.rdb", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "dump.rdb"), []byte("REDIS0011 other"), 0o600)
		}},
		{"an appendonlydir", func(dir string) error { return os.Mkdir(filepath.Join(dir, "appendonlydir"), 0o700) }},
	} {
		for _, appendOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/appendonly=%v", tc.name, appendOnly), func(t *testing.T) {
				dir := t.TempDir()
				if err := tc.make(dir); err != nil {
					t.Fatal(err)
				}
				before := listDir(t, dir)
				err := f.run(t, dir, "backups/ns/b1/redis-0.rdb", f.sum, len(f.rdb), appendOnly)
				if !errors.Is(err, restore.ErrDataPresent) {
					t.Fatalf("err = %v, want ErrDataPresent", err)
				}
				if after := listDir(t, dir); strings.Join(before, ",") != strings.Join(after, ",") {
					t.Errorf("the refused restore changed the data dir: %v, then %v", before, after)
				}
			})
		}
	}
}

func TestRestoreMissingObject(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	if err := f.run(t, dir, "backups/ns/b1/none.rdb", f.sum, len(f.rdb), false); err == nil {
		t.Fatal("a restore of a missing object succeeded")
	}
	if names := listDir(t, dir); len(names) != 0 {
		t.Errorf("the failed restore left %v", names)
	}
}
