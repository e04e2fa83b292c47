//go:build integration

package snapshot_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
	"github.com/rediskube/redis-operator/internal/snapshot"
)

const (
	datasetKeys = 50_000
	// ttlEvery: every ttlEvery-th key, of every type in turn, expires in an hour.
	ttlEvery = 997
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func client(t *testing.T, s *redistest.Server, auth redis.Auth) *goredis.Client {
	t.Helper()
	ep := s.Endpoint(auth)
	c := goredis.NewClient(&goredis.Options{
		Addr: ep.Address(), Username: auth.Username, Password: auth.Password, TLSConfig: ep.TLS,
		ReadTimeout: time.Minute, DisableIdentity: true,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// entry i of the dataset: its key and how to write and check it, one type of five in turn,
// then a few large values in the encodings small ones do not use.
func key(i int) string {
	return [...]string{"s", "h", "l", "S", "z"}[i%5] + ":" + strconv.Itoa(i)
}

func write(ctx context.Context, p goredis.Pipeliner, i int) {
	k, n := key(i), strconv.Itoa(i)
	switch i % 5 {
	case 0:
		p.Set(ctx, k, "value-"+n, 0)
	case 1:
		p.HSet(ctx, k, "n", n, "name", "hash-"+n, "empty", "")
	case 2:
		p.RPush(ctx, k, "a"+n, "b"+n, n)
	case 3:
		p.SAdd(ctx, k, "m"+n, "x", n)
	case 4:
		p.ZAdd(ctx, k, goredis.Z{Score: float64(i), Member: "a"}, goredis.Z{Score: -2.5, Member: "b" + n})
	}
	if i%ttlEvery == 0 {
		p.PExpire(ctx, k, time.Hour)
	}
}

// check queues the reads of entry i and returns what to compare once the pipeline ran.
func check(ctx context.Context, p goredis.Pipeliner, i int) func() error {
	k, n := key(i), strconv.Itoa(i)
	var got, want string
	var read func() string
	switch i % 5 {
	case 0:
		c := p.Get(ctx, k)
		read, want = func() string { return c.Val() }, "value-"+n
	case 1:
		c := p.HGetAll(ctx, k)
		read = func() string {
			v := c.Val()
			return v["n"] + "|" + v["name"] + "|" + v["empty"] + "|" + strconv.Itoa(len(v))
		}
		want = n + "|hash-" + n + "||3"
	case 2:
		c := p.LRange(ctx, k, 0, -1)
		read, want = func() string { return fmt.Sprint(c.Val()) }, fmt.Sprint([]string{"a" + n, "b" + n, n})
	case 3:
		c := p.SMIsMember(ctx, k, "m"+n, "x", n, "y")
		card := p.SCard(ctx, k)
		read = func() string { return fmt.Sprint(c.Val(), card.Val()) }
		want = "[true true true false] 3"
	case 4:
		c := p.ZRangeWithScores(ctx, k, 0, -1)
		read = func() string { return fmt.Sprint(c.Val()) }
		want = fmt.Sprint([]goredis.Z{{Score: -2.5, Member: "b" + n}, {Score: float64(i), Member: "a"}})
	}
	pttl := p.PTTL(ctx, k)
	return func() error {
		if got = read(); got != want {
			return fmt.Errorf("%s: %q, want %q", k, got, want)
		}
		ttl := pttl.Val()
		if i%ttlEvery == 0 && (ttl <= 0 || ttl > time.Hour) {
			return fmt.Errorf("%s: PTTL %v, want an hour or a little less", k, ttl)
		}
		if i%ttlEvery != 0 && ttl != -1 {
			return fmt.Errorf("%s: PTTL %v, want none", k, ttl)
		}
		return nil
	}
}

// large values, in the encodings the small ones do not reach.
var large = map[string]func(context.Context, goredis.Pipeliner){
	"big:string": func(ctx context.Context, p goredis.Pipeliner) { p.Set(ctx, "big:string", bigString(), 0) },
	"big:hash": func(ctx context.Context, p goredis.Pipeliner) {
		for f := range 2000 {
			p.HSet(ctx, "big:hash", "f"+strconv.Itoa(f), f)
		}
	},
	"big:list": func(ctx context.Context, p goredis.Pipeliner) {
		for e := range 10000 {
			p.RPush(ctx, "big:list", e)
		}
	},
	"big:zset": func(ctx context.Context, p goredis.Pipeliner) {
		for m := range 1000 {
			p.ZAdd(ctx, "big:zset", goredis.Z{Score: float64(m) / 3, Member: "m" + strconv.Itoa(m)})
		}
	},
	"big:intset": func(ctx context.Context, p goredis.Pipeliner) {
		for m := range 300 {
			p.SAdd(ctx, "big:intset", m*7)
		}
	},
}

func bigString() string {
	b := make([]byte, 300<<10)
	for i := range b {
		b[i] = byte('a' + i*7%26)
	}
	return string(b)
}

func checkLarge(ctx context.Context, t *testing.T, c *goredis.Client) {
	t.Helper()
	if v, err := c.Get(ctx, "big:string").Result(); err != nil || v != bigString() {
		t.Errorf("big:string: %d bytes, %v", len(v), err)
	}
	if v, err := c.HGet(ctx, "big:hash", "f1999").Result(); err != nil || v != "1999" || c.HLen(ctx, "big:hash").Val() != 2000 {
		t.Errorf("big:hash: %q, %v, %d fields", v, err, c.HLen(ctx, "big:hash").Val())
	}
	if v, err := c.LIndex(ctx, "big:list", 9999).Result(); err != nil || v != "9999" || c.LLen(ctx, "big:list").Val() != 10000 {
		t.Errorf("big:list: %q, %v", v, err)
	}
	if v, err := c.ZScore(ctx, "big:zset", "m999").Result(); err != nil || v != 333 || c.ZCard(ctx, "big:zset").Val() != 1000 {
		t.Errorf("big:zset: %v, %v", v, err)
	}
	if ok, err := c.SIsMember(ctx, "big:intset", 7*299).Result(); err != nil || !ok || c.SCard(ctx, "big:intset").Val() != 300 {
		t.Errorf("big:intset: %v, %v", ok, err)
	}
}

// load writes the dataset in pipelines of 1000 commands.
func load(ctx context.Context, t *testing.T, c *goredis.Client) {
	t.Helper()
	for start := 0; start < datasetKeys; start += 1000 {
		p := c.Pipeline()
		for i := start; i < start+1000; i++ {
			write(ctx, p, i)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatalf("load: %v", err)
		}
	}
	for name, fill := range large {
		p := c.Pipeline()
		fill(ctx, p)
		if _, err := p.Exec(ctx); err != nil {
			t.Fatalf("load %s: %v", name, err)
		}
	}
}

// verify checks every key of the dataset on c, and that it holds nothing else.
func verify(ctx context.Context, t *testing.T, c *goredis.Client) {
	t.Helper()
	if n, err := c.DBSize(ctx).Result(); err != nil || n != int64(datasetKeys+len(large)) {
		t.Fatalf("DBSIZE %d, %v; want %d", n, err, datasetKeys+len(large))
	}
	for start := 0; start < datasetKeys; start += 1000 {
		p := c.Pipeline()
		var checks []func() error
		for i := start; i < start+1000; i++ {
			checks = append(checks, check(ctx, p, i))
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatalf("read back: %v", err)
		}
		for _, ch := range checks {
			if err := ch(); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkLarge(ctx, t, c)
}

// roundTrip loads the dataset into src, streams a snapshot of it into a file, starts a new
// server of the same binary on that file and checks every key there.
func roundTrip(t *testing.T, src *redistest.Server, c roundTripCase) snapshot.Info {
	t.Helper()
	ctx := testContext(t)
	loadAuth := c.auth
	if c.loadAuth != nil {
		loadAuth = *c.loadAuth
	}
	load(ctx, t, client(t, src, loadAuth))
	auth := c.auth

	path := filepath.Join(t.TempDir(), "snapshot.rdb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	info, err := snapshot.Stream(ctx, src.Endpoint(auth), f, snapshot.Options{})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	t.Logf("%d bytes, RDB %d, diskless %v, checksum %v, in %v", info.Bytes, info.RDBVersion, info.Diskless, info.Checksum, time.Since(start))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) != info.Bytes || sha256.Sum256(data) != info.SHA256 {
		t.Fatalf("the file holds %d bytes of digest %x; Info says %d, %s", len(data), sha256.Sum256(data), info.Bytes, info.SHA256Hex())
	}
	if info.Checksum != snapshot.ChecksumVerified {
		t.Errorf("checksum %v", info.Checksum)
	}
	// The server counted a replica during the transfer and none once it is over.
	srcClient := client(t, src, loadAuth)
	deadline := time.Now().Add(5 * time.Second)
	for {
		repl, err := srcClient.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(repl, "connected_slaves:0") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server still counts a replica after the snapshot: %v\n%s", err, repl)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The restored server: same binary, no password or TLS needed to read it back.
	restored := redistest.StartServer(t, redistest.ServerOptions{Binary: c.opts.Binary, RDB: path})
	verify(ctx, t, client(t, restored, redis.Auth{}))
	return info
}

type roundTripCase struct {
	name string
	opts redistest.ServerOptions
	// auth is the backup's credentials; loadAuth, when set, the user that writes the dataset.
	auth     redis.Auth
	loadAuth *redis.Auth
	diskless bool
}

func TestStreamRoundTrip(t *testing.T) {
	const password = "s3cret"
	ca := redistest.NewCA(t, "snapshot-ca")
	tlsFiles := redistest.WriteTLSFiles(t, ca.CertPEM, ca.Issue(t, "redis.example.internal"))
	cases := []roundTripCase{
		{name: "diskless", opts: redistest.ServerOptions{Config: []string{"repl-diskless-sync yes"}}, diskless: true},
		{name: "disk", opts: redistest.ServerOptions{Config: []string{"repl-diskless-sync no"}}},
		{name: "password", opts: redistest.ServerOptions{Password: password}, auth: redis.Auth{Password: password}, diskless: true},
		{
			name: "ACL user with replconf and sync only",
			opts: redistest.ServerOptions{Config: []string{
				"user backup on >backup-pw +replconf +sync",
				"user loader on >loader-pw ~* &* +@all",
				"user default off",
			}},
			auth:     redis.Auth{Username: "backup", Password: "backup-pw"},
			loadAuth: &redis.Auth{Username: "loader", Password: "loader-pw"},
			diskless: true,
		},
		{name: "TLS", opts: redistest.ServerOptions{Password: password, TLS: &tlsFiles}, auth: redis.Auth{Password: password}, diskless: true},
	}
	if valkey, err := exec.LookPath("valkey-server"); err == nil {
		cases = append(cases,
			roundTripCase{name: "valkey diskless", opts: redistest.ServerOptions{Binary: valkey, Config: []string{"repl-diskless-sync yes"}}, diskless: true},
			roundTripCase{name: "valkey disk", opts: redistest.ServerOptions{Binary: valkey, Config: []string{"repl-diskless-sync no"}}},
		)
	} else {
		t.Logf("valkey-server is not on PATH, its cases are left out: %v", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info := roundTrip(t, redistest.StartServer(t, c.opts), c)
			if info.Diskless != c.diskless {
				t.Errorf("diskless %v, want %v", info.Diskless, c.diskless)
			}
		})
	}
}

// Refusals come back as *ServerError with the server's code and the command refused.
func TestStreamRefused(t *testing.T) {
	src := redistest.StartServer(t, redistest.ServerOptions{Config: []string{
		"requirepass s3cret",
		"user nosync on >pw +replconf",
		"user noreplconf on >pw +sync",
	}})
	unsynced := redistest.StartServer(t, redistest.ServerOptions{Config: []string{"replicaof 127.0.0.1 1"}})
	cases := []struct {
		name string
		s    *redistest.Server
		auth redis.Auth
		cmd  string
		code string
	}{
		{"no password", src, redis.Auth{}, "REPLCONF", "NOAUTH"},
		{"wrong password", src, redis.Auth{Password: "nope"}, "AUTH", "WRONGPASS"},
		{"user without sync", src, redis.Auth{Username: "nosync", Password: "pw"}, "SYNC", "NOPERM"},
		{"user without replconf", src, redis.Auth{Username: "noreplconf", Password: "pw"}, "REPLCONF", "NOPERM"},
		{"replica without its master", unsynced, redis.Auth{}, "SYNC", "NOMASTERLINK"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var n countingWriter
			_, err := snapshot.Stream(testContext(t), c.s.Endpoint(c.auth), &n, snapshot.Options{IdleTimeout: 10 * time.Second})
			var serr *snapshot.ServerError
			if !errors.As(err, &serr) || serr.Command != c.cmd || serr.Code() != c.code {
				t.Fatalf("err %v, want %s refused with %s", err, c.cmd, c.code)
			}
			t.Logf("%v", err)
			if n.n != 0 {
				t.Fatalf("%d bytes written", n.n)
			}
		})
	}
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// A snapshot of ~200 MB goes through without the heap growing with it.
func TestStreamMemoryStaysFlat(t *testing.T) {
	const keys, size = 200_000, 1000
	ctx := testContext(t)
	src := redistest.StartServer(t, redistest.ServerOptions{Config: []string{
		"enable-debug-command yes",
		"rdbcompression no", // DEBUG POPULATE's values are padded with zeros: keep their size
		"repl-diskless-sync yes",
	}})
	c := client(t, src, redis.Auth{})
	if err := c.Do(ctx, "DEBUG", "POPULATE", keys, "key", size).Err(); err != nil {
		t.Fatalf("DEBUG POPULATE: %v", err)
	}

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := before.HeapInuse
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapInuse)
			}
		}
	})
	var out countingWriter
	start := time.Now()
	info, err := snapshot.Stream(ctx, src.Endpoint(redis.Auth{}), &out, snapshot.Options{})
	elapsed := time.Since(start)
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if info.Bytes < keys*size || out.n != info.Bytes || info.Checksum != snapshot.ChecksumVerified {
		t.Fatalf("info %+v, %d bytes written", info, out.n)
	}
	growth := int64(peak) - int64(before.HeapInuse)
	t.Logf("%d MB in %v (%.0f MB/s); heap in use %d MB before, peak growth %.1f MB",
		info.Bytes>>20, elapsed.Round(time.Millisecond), float64(info.Bytes)/1e6/elapsed.Seconds(),
		before.HeapInuse>>20, float64(growth)/(1<<20))
	if growth > 32<<20 {
		t.Fatalf("the heap grew by %d MB while streaming %d MB", growth>>20, info.Bytes>>20)
	}
}

var _ io.Writer = (*countingWriter)(nil)
