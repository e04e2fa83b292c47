//go:build integration

package store_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rediskube/redis-operator/internal/backup/store"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
	"github.com/rediskube/redis-operator/internal/s3test"
	"github.com/rediskube/redis-operator/internal/snapshot"
)

// The smallest part S3 allows, so that a snapshot of a few MiB is uploaded in several parts.
const partSize = 5 << 20

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newStore(t *testing.T, s *s3test.Server) *store.S3 {
	t.Helper()
	st, err := store.NewS3(store.S3Config{
		Endpoint: s.URL(), Bucket: s.Bucket, Region: s3test.Region, ForcePathStyle: true,
		AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey, PartSize: partSize,
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func redisClient(t *testing.T, s *redistest.Server, password string) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr(), Password: password, DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

const (
	smallKeys = 20_000
	// bigKeys values of random (incompressible) bytes make the RDB span several parts.
	bigKeys  = 14
	bigValue = 1 << 20
)

// load writes small keys, some with a TTL, and big random values; it returns the big values.
func load(ctx context.Context, t *testing.T, c *goredis.Client) map[string][]byte {
	t.Helper()
	for start := 0; start < smallKeys; start += 1000 {
		p := c.Pipeline()
		for i := start; i < start+1000; i++ {
			p.Set(ctx, "k:"+strconv.Itoa(i), "v-"+strconv.Itoa(i), 0)
			if i%500 == 0 {
				p.PExpire(ctx, "k:"+strconv.Itoa(i), time.Hour)
			}
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatalf("load: %v", err)
		}
	}
	big := map[string][]byte{}
	for i := range bigKeys {
		b := make([]byte, bigValue)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		k := "big:" + strconv.Itoa(i)
		big[k] = b
		if err := c.Set(ctx, k, b, 0).Err(); err != nil {
			t.Fatalf("load %s: %v", k, err)
		}
	}
	return big
}

func verify(ctx context.Context, t *testing.T, c *goredis.Client, big map[string][]byte) {
	t.Helper()
	if n, err := c.DBSize(ctx).Result(); err != nil || n != int64(smallKeys+len(big)) {
		t.Fatalf("DBSIZE %d, %v; want %d", n, err, smallKeys+len(big))
	}
	for start := 0; start < smallKeys; start += 1000 {
		p := c.Pipeline()
		gets := make([]*goredis.StringCmd, 0, 1000)
		ttls := make([]*goredis.DurationCmd, 0, 1000)
		for i := start; i < start+1000; i++ {
			gets = append(gets, p.Get(ctx, "k:"+strconv.Itoa(i)))
			ttls = append(ttls, p.PTTL(ctx, "k:"+strconv.Itoa(i)))
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatalf("read back: %v", err)
		}
		for j, g := range gets {
			i := start + j
			if g.Val() != "v-"+strconv.Itoa(i) {
				t.Fatalf("k:%d = %q", i, g.Val())
			}
			ttl := ttls[j].Val()
			if withTTL := i%500 == 0; withTTL != (ttl > 0 && ttl <= time.Hour) {
				t.Fatalf("k:%d PTTL %v", i, ttl)
			}
		}
	}
	for k, want := range big {
		got, err := c.Get(ctx, k).Bytes()
		if err != nil || string(got) != string(want) {
			t.Fatalf("%s: %d bytes, %v; want the %d bytes written", k, len(got), err, len(want))
		}
	}
}

// A snapshot of a real redis-server streamed into the real S3 server in several parts reads
// back byte for byte, with the digest the stream reported, and a new server loading it
// serves every key.
func TestSnapshotRoundTripThroughS3(t *testing.T) {
	ctx := testContext(t)
	s3 := s3test.Start(t, s3test.Options{})
	st := newStore(t, s3)
	const password = "s3cret"
	src := redistest.StartServer(t, redistest.ServerOptions{Password: password})
	big := load(ctx, t, redisClient(t, src, password))

	const key = "backups/ns/rb-1/redis-0.rdb"
	var info snapshot.Info
	obj, err := st.PutFrom(ctx, key, func(w io.Writer) error {
		var err error
		info, err = snapshot.Stream(ctx, src.Endpoint(redis.Auth{Password: password}), w, snapshot.Options{})
		return err
	})
	if err != nil {
		t.Fatalf("put: %v", err)
	}
	if obj.Size != info.Bytes || info.Bytes <= 2*partSize {
		t.Fatalf("uploaded %d bytes, the snapshot was %d; want more than two parts of %d", obj.Size, info.Bytes, partSize)
	}
	if stat, err := st.Stat(ctx, key); err != nil || stat.Size != info.Bytes {
		t.Fatalf("stat: %+v, %v; want %d bytes", stat, err, info.Bytes)
	}
	listed, err := st.List(ctx, "backups/ns/")
	if err != nil || len(listed) != 1 || listed[0].Key != key || listed[0].Size != info.Bytes {
		t.Fatalf("list: %+v, %v; want the one object", listed, err)
	}

	r, err := st.Get(ctx, key)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	path := filepath.Join(t.TempDir(), "dump.rdb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	_ = r.Close()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	if n != info.Bytes || fmt.Sprintf("%x", h.Sum(nil)) != info.SHA256Hex() {
		t.Fatalf("read back %d bytes of digest %x; the stream wrote %d of %s", n, h.Sum(nil), info.Bytes, info.SHA256Hex())
	}
	if check, err := exec.LookPath("redis-check-rdb"); err == nil {
		out, err := exec.CommandContext(ctx, check, path).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "RDB looks OK") {
			t.Fatalf("redis-check-rdb: %v\n%s", err, out)
		}
	} else {
		t.Logf("redis-check-rdb is not on PATH, the restore below checks the file: %v", err)
	}
	restored := redistest.StartServer(t, redistest.ServerOptions{RDB: path})
	verify(ctx, t, redisClient(t, restored, ""), big)

	if err := st.Delete(ctx, key); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := st.Stat(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("stat after delete: %v; want ErrNotFound", err)
	}
	if _, err := st.Get(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after delete: %v; want ErrNotFound", err)
	}
}

// A writer that fails after a few parts leaves no object, and its error comes back.
func TestPutFromFailedWriterLeavesNoObject(t *testing.T) {
	ctx := testContext(t)
	s3 := s3test.Start(t, s3test.Options{})
	st := newStore(t, s3)
	boom := errors.New("the source went away")
	_, err := st.PutFrom(ctx, "partial.rdb", func(w io.Writer) error {
		chunk := make([]byte, 1<<20)
		for range 12 { // more than two parts
			if _, err := w.Write(chunk); err != nil {
				return err
			}
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("put: %v; want the writer's error", err)
	}
	if _, err := st.Stat(ctx, "partial.rdb"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("stat: %v; want ErrNotFound", err)
	}
	if objs, err := st.List(ctx, ""); err != nil || len(objs) != 0 {
		t.Fatalf("list: %+v, %v; want nothing", objs, err)
	}
	// A snapshot whose source fails (a refused AUTH) leaves none either.
	src := redistest.StartServer(t, redistest.ServerOptions{Password: "right"})
	_, err = st.PutFrom(ctx, "refused.rdb", func(w io.Writer) error {
		_, err := snapshot.Stream(ctx, src.Endpoint(redis.Auth{Password: "wrong"}), w, snapshot.Options{})
		return err
	})
	var serr *snapshot.ServerError
	if !errors.As(err, &serr) {
		t.Fatalf("put of a refused snapshot: %v; want a *snapshot.ServerError", err)
	}
	if _, err := st.Stat(ctx, "refused.rdb"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("stat: %v; want ErrNotFound", err)
	}
}

// Wrong credentials are refused with ErrAccessDenied, naming the object and the store and
// not the secret.
func TestWrongCredentials(t *testing.T) {
	ctx := testContext(t)
	s3 := s3test.Start(t, s3test.Options{})
	for name, cfg := range map[string]store.S3Config{
		"unknown key":  {AccessKeyID: "nobody", SecretAccessKey: "not-the-secret"},
		"wrong secret": {AccessKeyID: s3.AccessKey, SecretAccessKey: "not-the-secret"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg.Endpoint, cfg.Bucket, cfg.Region, cfg.ForcePathStyle = s3.URL(), s3.Bucket, s3test.Region, true
			st, err := store.NewS3(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = st.Put(ctx, "x.rdb", strings.NewReader("data"))
			if !errors.Is(err, store.ErrAccessDenied) {
				t.Fatalf("put: %v; want ErrAccessDenied", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "s3://"+s3.Bucket+"/x.rdb") || !strings.Contains(msg, s3.Endpoint) || strings.Contains(msg, "not-the-secret") {
				t.Fatalf("error %q: want the object and the endpoint named, and no secret", msg)
			}
			// A HEAD answer has no body; Stat must still not take a refusal for a missing object.
			if _, err := st.Stat(ctx, "x.rdb"); !errors.Is(err, store.ErrAccessDenied) {
				t.Fatalf("stat: %v; want a refusal", err)
			}
		})
	}
	st := newStore(t, s3)
	if _, err := st.Stat(ctx, "never-written"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("stat with the right credentials: %v; want ErrNotFound", err)
	}
}

// A bucket that does not exist is told apart.
func TestNoSuchBucket(t *testing.T) {
	ctx := testContext(t)
	s3 := s3test.Start(t, s3test.Options{})
	st, err := store.NewS3(store.S3Config{
		Endpoint: s3.URL(), Bucket: "missing", Region: s3test.Region, ForcePathStyle: true,
		AccessKeyID: s3.AccessKey, SecretAccessKey: s3.SecretKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, "x.rdb", strings.NewReader("data")); !errors.Is(err, store.ErrNoBucket) {
		t.Fatalf("put: %v; want ErrNoBucket", err)
	}
}

// An endpoint nothing listens on fails promptly (one attempt) with the endpoint named.
func TestUnreachableEndpoint(t *testing.T) {
	ctx := testContext(t)
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	st, err := store.NewS3(store.S3Config{
		Endpoint: "http://" + addr, Bucket: "backups", Region: s3test.Region, ForcePathStyle: true,
		AccessKeyID: "a", SecretAccessKey: "b", MaxRetries: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = st.Put(ctx, "x.rdb", strings.NewReader("data"))
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("put: %v; want connection refused at %s", err, addr)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Fatalf("put: %v; want a wrapped *net.OpError", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("took %v with one attempt", d)
	}
}

// Over HTTPS the store is verified against the CA bundle given, and refused without it.
func TestTLSStoreVerifiedAgainstCA(t *testing.T) {
	ctx := testContext(t)
	ca := redistest.NewCA(t, "s3-ca")
	files := redistest.WriteTLSFiles(t, ca.CertPEM, ca.Issue(t, s3test.Host))
	s3 := s3test.Start(t, s3test.Options{TLS: &files})
	cfg := store.S3Config{
		Endpoint: s3.URL(), Bucket: s3.Bucket, Region: s3test.Region, ForcePathStyle: true,
		AccessKeyID: s3.AccessKey, SecretAccessKey: s3.SecretKey, MaxRetries: 1,
	}
	withCA := cfg
	withCA.CAPEM = ca.CertPEM
	st, err := store.NewS3(withCA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, "tls.rdb", strings.NewReader("over TLS")); err != nil {
		t.Fatalf("put with the CA: %v", err)
	}
	if info, err := st.Stat(ctx, "tls.rdb"); err != nil || info.Size != int64(len("over TLS")) {
		t.Fatalf("stat with the CA: %+v, %v", info, err)
	}
	other := redistest.NewCA(t, "other-ca")
	for name, caPEM := range map[string][]byte{"system roots": nil, "another CA": other.CertPEM} {
		c := cfg
		c.CAPEM = caPEM
		st, err := store.NewS3(c)
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.Put(ctx, "untrusted.rdb", strings.NewReader("x"))
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s: put %v; want a certificate refusal", name, err)
		}
	}
}

// A store that goes away in the middle of an upload fails PutFrom with the store's error, a
// transient one, not the writer's; once the store is back no object is under the key, and
// AbortIncomplete removes the upload the client could not abort while the store was down.
func TestStoreGoneMidUploadLeavesNoObject(t *testing.T) {
	ctx := testContext(t)
	s3 := s3test.Start(t, s3test.Options{})
	st, err := store.NewS3(store.S3Config{
		Endpoint: s3.URL(), Bucket: s3.Bucket, Region: s3test.Region, ForcePathStyle: true,
		AccessKeyID: s3.AccessKey, SecretAccessKey: s3.SecretKey, PartSize: partSize, MaxRetries: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	const key = "ns/rb/cache-0.rdb"
	chunk := make([]byte, 1<<20)
	_, err = st.PutFrom(ctx, key, func(w io.Writer) error {
		for i := range 24 {
			if i == 7 { // more than a part is sent: the upload is under way
				s3.Stop()
			}
			if _, err := w.Write(chunk); err != nil {
				return fmt.Errorf("snapshot: %w", err)
			}
		}
		return nil
	})
	var source *store.SourceError
	if err == nil || errors.As(err, &source) {
		t.Fatalf("put through a store that went away: %v; want the store's error", err)
	}
	f := store.Classify(s3.Endpoint, err)
	if !f.Transient {
		t.Fatalf("Classify(%v) = %+v; want transient", err, f)
	}
	t.Logf("the store went away: %s", f.Cause)
	s3.Run(t)
	if _, err := st.Stat(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("stat after the failed upload: %v; want ErrNotFound", err)
	}
	left := 0
	for up := range s3.Client(t).ListIncompleteUploads(ctx, s3.Bucket, key, true) {
		if up.Err != nil {
			t.Fatal(up.Err)
		}
		left++
	}
	t.Logf("%d incomplete uploads left by the failed upload", left)
	if err := st.AbortIncomplete(ctx, key); err != nil {
		t.Fatalf("abort incomplete: %v", err)
	}
	for up := range s3.Client(t).ListIncompleteUploads(ctx, s3.Bucket, key, true) {
		t.Errorf("upload %s (%v) still there after AbortIncomplete", up.UploadID, up.Err)
	}
}
