//go:build integration

package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/minio/minio-go/v7"
	goredis "github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/backup/store"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/restore"
	"github.com/rediskube/redis-operator/internal/s3test"
)

// The fault tests' data: values of random bytes (RDB compression cannot shrink them), so
// that the snapshot is larger than two of the store client's 16 MiB parts and its upload,
// slowed by a storeFront, takes seconds.
const (
	bigKeys      = 320
	bigValueSize = 128 << 10
	bigBytes     = bigKeys * bigValueSize
	// slowUpload is the rate a slowed front lets upload bodies through: about 10 s for the
	// whole snapshot.
	slowUpload = 4 << 20
)

// writeBigValues writes bigKeys keys of random values and returns them, by key.
func writeBigValues(ctx context.Context, t *testing.T, rdb *goredis.Client) map[string][]byte {
	t.Helper()
	rng := rand.NewChaCha8([32]byte{'b', 'a', 'c', 'k', 'u', 'p'})
	values := make(map[string][]byte, bigKeys)
	for i := range bigKeys {
		v := make([]byte, bigValueSize)
		_, _ = rng.Read(v)
		values["big:"+strconv.Itoa(i)] = v
	}
	p := rdb.Pipeline()
	n := 0
	for k, v := range values {
		p.Set(ctx, k, v, 0)
		if n++; n%32 == 0 {
			if _, err := p.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	return values
}

// checkBigValues reads every key back and compares it with what was written.
func checkBigValues(ctx context.Context, t *testing.T, rdb *goredis.Client, values map[string][]byte) {
	t.Helper()
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != int64(len(values)) {
		t.Fatalf("DBSIZE %d, %v; want %d", n, err, len(values))
	}
	for k, want := range values {
		got, err := rdb.Get(ctx, k).Bytes()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes, %v; want the %d written", k, len(got), err, len(want))
		}
	}
}

// storeFront is an HTTP front of a real versitygw: requests pass through unchanged (the Host
// header kept, so that their signatures hold), but the bodies of PUTs (objects and parts)
// can be slowed to rate bytes per second, and a bucket quota can be imposed: a PUT whose body
// would bring what was accepted beyond quota is answered as versitygw's posix backend answers
// a write its filesystem refuses for a quota (EDQUOT): 403 QuotaExceeded. versitygw v1.8.0 has
// no quota setting of its own (it maps the filesystem's EDQUOT and ENOSPC, which a test would
// need a mount to cause), so the quota is the front's.
type storeFront struct {
	srv   *httptest.Server
	rate  int64
	quota int64

	mu sync.Mutex
	// accepted is the bytes of the PUT bodies passed on while a quota is set.
	accepted int64
	// received counts the bytes of PUT bodies passed on so far; refused the PUTs refused.
	received, refused atomic.Int64
	// dropAborts, while set, refuses the aborts of multipart uploads (403 AccessDenied, which
	// the client does not retry): the operator stopped as a killed process stops, sending none.
	dropAborts atomic.Bool
}

func newStoreFront(t *testing.T, s3 *s3test.Server, rate, quota int64) *storeFront {
	t.Helper()
	target, err := url.Parse(s3.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target) // keeps the Host the client signed
	f := &storeFront{rate: rate, quota: quota}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete && r.URL.Query().Has("uploadId") && f.dropAborts.Load() {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+
				`<Error><Code>AccessDenied</Code><Message>The front drops aborts.</Message>`+
				`<Resource>%s</Resource><RequestId>front</RequestId></Error>`, r.URL.Path)
			return
		}
		if r.Method == http.MethodPut && r.Body != nil {
			if f.overQuota(bodySize(r)) {
				_, _ = io.Copy(io.Discard, r.Body) // read, as a store does, so the client reads the answer
				f.refused.Add(1)
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusForbidden)
				_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+
					`<Error><Code>QuotaExceeded</Code><Message>The bucket's quota leaves no room for this upload.</Message>`+
					`<Resource>%s</Resource><RequestId>front</RequestId></Error>`, r.URL.Path)
				return
			}
			r.Body = &slowBody{ReadCloser: r.Body, rate: f.rate, start: time.Now(), count: &f.received}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the front's endpoint, to name in a backup's storage.
func (f *storeFront) URL() string { return f.srv.URL }

// Endpoint is the front's host:port, as statuses name the store.
func (f *storeFront) Endpoint() string { return strings.TrimPrefix(f.srv.URL, "http://") }

// overQuota counts size against the quota, or says it does not fit.
func (f *storeFront) overQuota(size int64) bool {
	if f.quota <= 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.accepted+size > f.quota {
		return true
	}
	f.accepted += size
	return false
}

// bodySize is the size of the payload of a PUT: without the chunk signatures of a streamed one.
func bodySize(r *http.Request) int64 {
	if v := r.Header.Get("X-Amz-Decoded-Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return r.ContentLength
}

// slowBody passes a body on at rate bytes per second (0: unslowed), counting what it passed.
type slowBody struct {
	io.ReadCloser
	rate  int64
	start time.Time
	n     int64
	count *atomic.Int64
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.rate > 0 && len(p) > 32<<10 {
		p = p[:32<<10]
	}
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	b.count.Add(int64(n))
	if b.rate > 0 {
		time.Sleep(time.Until(b.start.Add(time.Duration(b.n * int64(time.Second) / b.rate))))
	}
	return n, err
}

// logCapture keeps every line the operator's manager logs, at every verbosity.
type logCapture struct {
	mu    sync.Mutex
	lines []string
}

func (c *logCapture) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.lines = append(c.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 10})
}

func (c *logCapture) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...)
}

// faultOperator makes the test's namespace and starts an operator, with the default backup
// retries, whose log is captured.
func faultOperator(t *testing.T, options ...operatorOption) (ns string, c client.Client, logs *logCapture, op *operator) {
	t.Helper()
	ns = testNamespace(t)
	c = newClient(t)
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	logs = &logCapture{}
	return ns, c, logs, startOperator(t, ns, append(options, withLogger(logs.logger()))...)
}

// withSmallestParts uploads in S3's smallest parts: the operator then reads little more
// than two parts (the one uploading, the one read ahead) before the store receives a byte, so
// a fault made once the upload has begun lands while the server still streams the snapshot.
// (With the default 16 MiB parts, a 40 MiB snapshot can be whole in the operator and the
// kernel's socket buffers by then: the source's loss would then cut nothing short.)
func withSmallestParts() operatorOption {
	return withStores(func(cfg store.S3Config) (BackupStore, error) {
		cfg.PartSize = 5 << 20
		return store.NewS3(cfg)
	})
}

// checkNoCredential fails the test if secret shows in the status of a RedisBackup or Redis
// of the namespace, in one of its events, or in a line the operator logged; the log must
// hold the backups' own lines (else nothing was captured to look at).
func checkNoCredential(t *testing.T, c client.Client, ns, secret string, logs *logCapture) {
	t.Helper()
	ctx := context.Background()
	var backups v1alpha1.RedisBackupList
	if err := c.List(ctx, &backups, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, b := range backups.Items {
		if data, _ := json.Marshal(b.Status); bytes.Contains(data, []byte(secret)) {
			t.Errorf("the status of RedisBackup %s shows the secret", b.Name)
		}
	}
	var redises v1beta2.RedisList
	if err := c.List(ctx, &redises, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, r := range redises.Items {
		if data, _ := json.Marshal(r.Status); bytes.Contains(data, []byte(secret)) {
			t.Errorf("the status of Redis %s shows the secret", r.Name)
		}
	}
	var events eventsv1.EventList
	if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if data, _ := json.Marshal(e); bytes.Contains(data, []byte(secret)) {
			t.Errorf("event %s %s of %s shows the secret", e.Reason, e.Name, e.Regarding.Name)
		}
	}
	lines := logs.all()
	started := false
	for _, line := range lines {
		if strings.Contains(line, secret) {
			t.Errorf("the operator logged the secret: %s", strings.ReplaceAll(line, secret, "<secret>"))
		}
		started = started || strings.Contains(line, `"backup started"`)
	}
	if !started {
		t.Errorf("no \"backup started\" among the %d lines captured of the operator's log", len(lines))
	}
}

// incompleteUploads lists the multipart uploads of the bucket never completed nor aborted.
func (f *backupFixture) incompleteUploads() []string {
	f.t.Helper()
	var keys []string
	for up := range f.s3.Client(f.t).ListIncompleteUploads(context.Background(), f.s3.Bucket, "", true) {
		if up.Err != nil {
			f.t.Fatal(up.Err)
		}
		keys = append(keys, up.Key+" ("+up.UploadID+")")
	}
	return keys
}

// waitUploading waits until the front has passed at least n bytes of upload bodies on.
func waitUploading(t *testing.T, front *storeFront, n int64) {
	t.Helper()
	waitUntil(t, 60*time.Second, "the upload under way", func() error {
		if got := front.received.Load(); got < n {
			return fmt.Errorf("%d bytes uploaded", got)
		}
		return nil
	})
}

// The operator stopped (its context cancelled, as a killed process's work stops, and its
// abort of the upload kept from the store, as a killed process sends none) while a backup
// streams its snapshot into the store: the backup stays Running, not Completed with what was
// sent so far, no object is there, only the unfinished upload; the next operator takes the
// backup again from a fresh snapshot and aborts that upload: Completed at attempt 2 with one
// whole object, whose size and SHA-256 are the status's and which serves every key, and no
// upload of the interrupted attempt left in the bucket.
func TestBackupOfAnOperatorStoppedMidStreamIsTakenAgainWhole(t *testing.T) {
	t.Parallel()
	ns, c, logs, first := faultOperator(t)
	ctx := context.Background()
	_, kubelet := runReadyStandalone(ctx, t, c, ns, "big")
	rdb := goredis.NewClient(&goredis.Options{Addr: kubelet.pod("big-0").addr(builder.DefaultRedisPort)})
	defer func() { _ = rdb.Close() }()
	values := writeBigValues(ctx, t, rdb)

	f := newBackupFixture(t, c, ns)
	front := newStoreFront(t, f.s3, slowUpload, 0)
	f.endpoint = front.URL()
	b := f.create("interrupted", v1alpha1.TargetRedis, "big", "", "s3-credentials")
	waitUploading(t, front, 2<<20)
	// A killed process aborts nothing: the client's abort of the upload (which minio-go sends
	// even after its context ended) is refused, so that the upload stays as a kill leaves it.
	front.dropAborts.Store(true)
	if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
		t.Fatal(err)
	}
	if b.Status.Phase != v1alpha1.BackupRunning || attemptsOf(b) != 1 {
		t.Fatalf("while uploading: phase %q, attempts %d", b.Status.Phase, attemptsOf(b))
	}
	first.stop()
	sent := front.received.Load()
	if sent >= bigBytes {
		t.Fatalf("%d bytes uploaded when the operator stopped: the whole snapshot (%d), not mid-stream", sent, bigBytes)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
		t.Fatal(err)
	}
	if b.Status.Phase != v1alpha1.BackupRunning || len(b.Status.Shards) != 0 {
		t.Fatalf("after the operator stopped %d bytes in: phase %q, shards %+v; want Running, none", sent, b.Status.Phase, b.Status.Shards)
	}
	if objects := f.objects(); len(objects) != 0 {
		t.Errorf("objects %v after the operator stopped mid-stream", objects)
	}
	if left := f.incompleteUploads(); len(left) != 1 {
		t.Errorf("incomplete uploads %v after the operator stopped mid-stream; want the one it left", left)
	}
	t.Logf("the operator stopped %d of about %d bytes in", sent, bigBytes)
	front.dropAborts.Store(false)

	startOperator(t, ns, withLogger(logs.logger()))
	f.waitPhase(b, v1alpha1.BackupCompleted)
	if attemptsOf(b) != 2 || len(b.Status.Shards) != 1 || b.Status.Shards[0].Bytes < bigBytes {
		t.Errorf("attempts %d, shards %+v; want attempt 2, one shard of more than %d bytes", attemptsOf(b), b.Status.Shards, bigBytes)
	}
	if objects := f.objects(); len(objects) != 1 || "s3://"+f.s3.Bucket+"/"+objects[0] != b.Status.Shards[0].Location {
		t.Errorf("objects %v, want only %s", objects, b.Status.Shards[0].Location)
	}
	if left := f.incompleteUploads(); len(left) != 0 {
		t.Errorf("incomplete uploads left beside the object: %v", left)
	}
	if n := countEvents(t, c, ns, b.Name, ReasonBackupFailed); n != 0 {
		t.Errorf("%d BackupFailed events", n)
	}
	checkBigValues(ctx, t, f.restore(b), values) // f.restore checks size and SHA-256 first
	checkNoCredential(t, c, ns, f.s3.SecretKey, logs)
}

// The source pod deleted, its redis-server killed, while its snapshot streams: the snapshot
// is cut short, so the backup ends Failed with the cause naming the node, at its first
// attempt (a snapshot that could not be read is not retried), and the upload begun is
// aborted: no object, no incomplete upload.
func TestBackupWhoseSourcePodGoesMidStreamFails(t *testing.T) {
	t.Parallel()
	ns, c, logs, _ := faultOperator(t, withSmallestParts())
	ctx := context.Background()
	_, kubelet := runReadyStandalone(ctx, t, c, ns, "big")
	rdb := goredis.NewClient(&goredis.Options{Addr: kubelet.pod("big-0").addr(builder.DefaultRedisPort)})
	defer func() { _ = rdb.Close() }()
	writeBigValues(ctx, t, rdb)

	f := newBackupFixture(t, c, ns)
	front := newStoreFront(t, f.s3, slowUpload, 0)
	f.endpoint = front.URL()
	b := f.create("source-gone", v1alpha1.TargetRedis, "big", "", "s3-credentials")
	waitUploading(t, front, 2<<20)
	kubelet.deletePod(ctx, ns, "big-0", syscall.SIGKILL)
	t.Logf("big-0 killed and deleted %d of about %d bytes in", front.received.Load(), bigBytes)

	f.waitPhase(b, v1alpha1.BackupFailed) // fails the test at once should it end Completed
	cond := meta.FindStatusCondition(b.Status.Conditions, v1beta2.ConditionReady)
	t.Logf("conditions %s", describeConditions(b.Status.Conditions))
	if cond == nil || cond.Reason != ReasonBackupFailed || !strings.HasPrefix(cond.Message, "reading the snapshot failed: ") ||
		!strings.Contains(cond.Message, "snapshot of big-0 into s3://"+f.s3.Bucket+"/") {
		t.Errorf("conditions %s; want Failed, the snapshot of big-0 not read", describeConditions(b.Status.Conditions))
	}
	if attemptsOf(b) != 1 || len(b.Status.Shards) != 0 || b.Status.TotalBytes != 0 {
		t.Errorf("attempts %d, shards %+v, %d bytes; want attempt 1, nothing stored", attemptsOf(b), b.Status.Shards, b.Status.TotalBytes)
	}
	if n := countEvents(t, c, ns, b.Name, ReasonBackupRetrying); n != 0 {
		t.Errorf("%d Retrying events, want none", n)
	}
	if objects := f.objects(); len(objects) != 0 {
		t.Errorf("objects %v after the failed backup", objects)
	}
	if left := f.incompleteUploads(); len(left) != 0 {
		t.Errorf("incomplete uploads after the failed backup: %v", left)
	}
	if sent := front.received.Load(); sent >= bigBytes {
		t.Errorf("%d bytes uploaded: the whole snapshot (%d) went before the pod did", sent, bigBytes)
	}
	checkNoCredential(t, c, ns, f.s3.SecretKey, logs)
}

// A bucket whose quota is reached mid-upload (the store took the first 16 MiB part, refuses
// the second with 403 QuotaExceeded): the backup ends Failed at its first attempt, without
// waiting for a retry, with a cause saying the store has no space left; the part stored is
// aborted with its upload. The quota is the storeFront's (see there).
func TestBackupIntoAFullBucketFailsAtOnce(t *testing.T) {
	t.Parallel()
	ns, c, logs, _ := faultOperator(t) // the default retries: a retry would wait 15 s
	ctx := context.Background()
	_, kubelet := runReadyStandalone(ctx, t, c, ns, "big")
	rdb := goredis.NewClient(&goredis.Options{Addr: kubelet.pod("big-0").addr(builder.DefaultRedisPort)})
	defer func() { _ = rdb.Close() }()
	writeBigValues(ctx, t, rdb)

	f := newBackupFixture(t, c, ns)
	front := newStoreFront(t, f.s3, 0, 20<<20)
	f.endpoint = front.URL()
	b := f.create("full-bucket", v1alpha1.TargetRedis, "big", "", "s3-credentials")
	f.waitPhase(b, v1alpha1.BackupFailed)
	cond := meta.FindStatusCondition(b.Status.Conditions, v1beta2.ConditionReady)
	t.Logf("conditions %s", describeConditions(b.Status.Conditions))
	wantCause := fmt.Sprintf("store %s has no space left for the object: a quota or its storage is full (403 QuotaExceeded): ", front.Endpoint())
	if cond == nil || cond.Reason != ReasonBackupFailed || !strings.HasPrefix(cond.Message, wantCause) {
		t.Errorf("conditions %s; want Failed, %q...", describeConditions(b.Status.Conditions), wantCause)
	}
	if attemptsOf(b) != 1 || b.Status.NextAttemptAt != nil || len(b.Status.Shards) != 0 {
		t.Errorf("attempts %d, next %v, shards %+v; want Failed at attempt 1, nothing stored", attemptsOf(b), b.Status.NextAttemptAt, b.Status.Shards)
	}
	if took := b.Status.CompletedAt.Sub(b.Status.StartedAt.Time); took >= DefaultStoreRetries[0] {
		t.Errorf("the backup took %s to fail, as long as a retry's wait", took)
	}
	if n := countEvents(t, c, ns, b.Name, ReasonBackupRetrying); n != 0 {
		t.Errorf("%d Retrying events, want none", n)
	}
	front.mu.Lock()
	accepted := front.accepted
	front.mu.Unlock()
	if front.refused.Load() == 0 || accepted == 0 {
		t.Errorf("the front took %d bytes and refused %d uploads; want a part taken, then one refused", accepted, front.refused.Load())
	}
	if objects := f.objects(); len(objects) != 0 {
		t.Errorf("objects %v after the refused backup", objects)
	}
	if left := f.incompleteUploads(); len(left) != 0 {
		t.Errorf("incomplete uploads after the refused backup (the part the store took): %v", left)
	}
	checkNoCredential(t, c, ns, f.s3.SecretKey, logs)
}

// A backup's object changed in the store after the backup (bytes flipped at the same size,
// cut short, made longer): the restore init container of a Redis restored from it, run with
// the arguments and environment its StatefulSet gives it, refuses each with the size or
// SHA-256 it found against the recorded one, and leaves the data directory empty; with the
// object put back, the same container restores it and the Redis serves every key. The
// container takes the store's credentials from the Secret by reference, never in its
// arguments.
func TestRestoreFromATamperedObjectIsRefused(t *testing.T) {
	t.Parallel()
	ns, c, logs, _ := faultOperator(t)
	ctx := context.Background()
	_, kubelet := runReadyStandalone(ctx, t, c, ns, "source")
	rdb := goredis.NewClient(&goredis.Options{Addr: kubelet.pod("source-0").addr(builder.DefaultRedisPort)})
	defer func() { _ = rdb.Close() }()
	writeBackupKeys(ctx, t, rdb)
	f := newBackupFixture(t, c, ns)
	b := f.create("nightly", v1alpha1.TargetRedis, "source", "", "s3-credentials")
	f.waitPhase(b, v1alpha1.BackupCompleted)
	shard := b.Status.Shards[0]
	key := strings.TrimPrefix(shard.Location, "s3://"+f.s3.Bucket+"/")
	s3c := f.s3.Client(t)
	obj, err := s3c.GetObject(ctx, f.s3.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	original, err := io.ReadAll(obj)
	_ = obj.Close()
	if err != nil || int64(len(original)) != shard.Bytes {
		t.Fatalf("read %s: %d bytes, %v; the status says %d", key, len(original), err, shard.Bytes)
	}
	put := func(data []byte) {
		t.Helper()
		if _, err := s3c.PutObject(ctx, f.s3.Bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	restored := restoringRedis(ns, "restored", "nightly")
	if err := c.Create(ctx, restored); err != nil {
		t.Fatal(err)
	}
	var sts appsv1.StatefulSet
	waitUntil(t, 30*time.Second, "StatefulSet restored", func() error {
		return c.Get(ctx, client.ObjectKeyFromObject(restored), &sts)
	})
	checkRestoreInitHidesSecret(t, &sts, f.s3.SecretKey)

	flipped := bytes.Clone(original)
	flipped[len(flipped)/2] ^= 0x5a
	for _, tc := range []struct {
		name   string
		object []byte
		says   string
	}{
		{"same size, bytes changed", flipped, fmt.Sprintf(", the backup recorded %s", shard.SHA256)},
		{"cut short", original[:len(original)/2], fmt.Sprintf("%d bytes or more, the backup recorded %d", len(original)/2, shard.Bytes)},
		{"longer", append(bytes.Clone(original), "tail"...), fmt.Sprintf("%d bytes or more, the backup recorded %d", shard.Bytes+1, shard.Bytes)},
	} {
		put(tc.object)
		dir := t.TempDir()
		args, env, ok := kubelet.restoreInit(ctx, &sts, "restored-0", dir)
		if !ok {
			t.Fatal("the restored StatefulSet has no restore init container")
		}
		var out bytes.Buffer
		err := restore.RunCommand(ctx, args, func(name string) string { return env[name] }, &out)
		if !errors.Is(err, restore.ErrMismatch) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: the restore said %v (output %q); want a mismatch saying %q", tc.name, err, out.String(), tc.says)
		}
		if err != nil && strings.Contains(err.Error()+out.String(), f.s3.SecretKey) {
			t.Errorf("%s: the restore's message shows the secret", tc.name)
		}
		if entries, rerr := os.ReadDir(dir); rerr != nil || len(entries) != 0 {
			t.Errorf("%s: the refused restore left %v in the data directory (%v)", tc.name, entries, rerr)
		}
	}

	// The object as the backup stored it: the same container restores it.
	put(original)
	kubelet.runStatefulSet(ctx, ns, "restored")
	waitStandaloneReady(t, c, restored)
	restoredClient := goredis.NewClient(&goredis.Options{Addr: kubelet.pod("restored-0").addr(builder.DefaultRedisPort)})
	defer func() { _ = restoredClient.Close() }()
	checkBackupKeys(ctx, t, restoredClient)
	checkNoCredential(t, c, ns, f.s3.SecretKey, logs)
}

// checkRestoreInitHidesSecret fails the test if the restore init container shows the secret in
// its command, arguments or environment values: its credentials come from Secret references.
func checkRestoreInitHidesSecret(t *testing.T, sts *appsv1.StatefulSet, secret string) {
	t.Helper()
	found := false
	for _, init := range sts.Spec.Template.Spec.InitContainers {
		if init.Name != "restore" {
			continue
		}
		found = true
		if strings.Contains(strings.Join(append(init.Command, init.Args...), " "), secret) {
			t.Error("the restore init container's arguments show the secret")
		}
		refs := 0
		for _, e := range init.Env {
			if strings.Contains(e.Value, secret) {
				t.Errorf("the restore init container's variable %s holds the secret", e.Name)
			}
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				refs++
			}
		}
		if refs != 2 {
			t.Errorf("the restore init container's env %+v; want the two credentials from Secret references", init.Env)
		}
	}
	if !found {
		t.Fatal("the restored StatefulSet has no restore init container")
	}
}
