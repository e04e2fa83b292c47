package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/internal/backup/store"
)

// memoryStore is a BackupStore in a map, for the logic around the store.
type memoryStore struct {
	objects   map[string]bool
	deleteErr error
}

func (m *memoryStore) PutFrom(context.Context, string, func(io.Writer) error) (store.ObjectInfo, error) {
	return store.ObjectInfo{}, errors.New("not used")
}

func (m *memoryStore) Stat(context.Context, string) (store.ObjectInfo, error) {
	return store.ObjectInfo{}, errors.New("not used")
}

func (m *memoryStore) Delete(_ context.Context, key string) error {
	if m.deleteErr != nil {
		return m.deleteErr
	}
	delete(m.objects, key)
	return nil
}

func (m *memoryStore) AbortIncomplete(context.Context, string) error { return nil }

func (m *memoryStore) Location(key string) string { return "s3://b/" + key }

// When a shard fails, the objects of the shards that were stored go, and only those.
func TestRemoveShardsOfAFailedBackup(t *testing.T) {
	st := &memoryStore{objects: map[string]bool{"ns/rb/a.rdb": true, "ns/rb/c.rdb": true, "other.rdb": true}}
	shards := []v1alpha1.ShardBackup{{Location: "s3://b/ns/rb/a.rdb"}, {Location: "s3://b/ns/rb/b.rdb"}, {Location: "s3://b/ns/rb/c.rdb"}}
	errs := []error{nil, errors.New("stream failed"), nil}
	if err := (&RedisBackupReconciler{}).removeShards(context.Background(), st, shards, errs); err != nil {
		t.Fatal(err)
	}
	if len(st.objects) != 1 || !st.objects["other.rdb"] {
		t.Errorf("left %v, want only other.rdb", st.objects)
	}
	st.deleteErr = errors.New("store down")
	if err := (&RedisBackupReconciler{}).removeShards(context.Background(), st, shards, errs); err == nil {
		t.Error("a failed removal is not reported")
	}
}

func TestBackupObjectKey(t *testing.T) {
	for _, c := range []struct{ prefix, want string }{
		{"", "ns/nightly/cache-0.rdb"},
		{"team-a", "team-a/ns/nightly/cache-0.rdb"},
		{"/team-a/", "team-a/ns/nightly/cache-0.rdb"},
		{"a/b/", "a/b/ns/nightly/cache-0.rdb"},
	} {
		if got := objectKey(c.prefix, "ns", "nightly", "cache-0"); got != c.want {
			t.Errorf("prefix %q: %q, want %q", c.prefix, got, c.want)
		}
	}
}

func TestBackupObjectDir(t *testing.T) {
	if got := objectDir("", "ns", "nightly"); got != "ns/nightly/" {
		t.Errorf("objectDir without prefix: %q", got)
	}
	if got := objectDir("/a/b/", "ns", "nightly"); got != "a/b/ns/nightly/" {
		t.Errorf("objectDir with prefix: %q", got)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536 << 10: "1.5 MiB", 3 << 30: "3.0 GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// A deleted backup's objects are the ones its shards list in this bucket; one already gone
// counts as deleted, and a store that fails is reported.
func TestDeleteShardsOfADeletedBackup(t *testing.T) {
	st := &memoryStore{objects: map[string]bool{"ns/rb/a.rdb": true, "other.rdb": true}}
	shards := []v1alpha1.ShardBackup{{Location: "s3://b/ns/rb/a.rdb"}, {Location: "s3://b/ns/rb/gone.rdb"}, {Location: "s3://elsewhere/x.rdb"}}
	deleted, err := (&RedisBackupReconciler{}).deleteShards(context.Background(), st, shards)
	if err != nil || deleted != 2 {
		t.Fatalf("deleted %d, %v; want 2", deleted, err)
	}
	if len(st.objects) != 1 || !st.objects["other.rdb"] {
		t.Errorf("left %v, want only other.rdb", st.objects)
	}
	st.deleteErr = errors.New("store down")
	if _, err := (&RedisBackupReconciler{}).deleteShards(context.Background(), st, shards); err == nil {
		t.Error("a failed deletion is not reported")
	}
}

// A transient failure is tried again after each wait in turn, and no more; a permanent one
// never is.
func TestBackupNextAttempt(t *testing.T) {
	retries := []time.Duration{15 * time.Second, 30 * time.Second, 60 * time.Second}
	transient := store.Failure{Transient: true, Cause: "store s3-store:8333 refused the connection"}
	for attempt, want := range map[int32]time.Duration{1: 15 * time.Second, 2: 30 * time.Second, 3: time.Minute} {
		if d, again := nextAttempt(transient, attempt, retries); !again || d != want {
			t.Errorf("after attempt %d: %s, %v; want another in %s", attempt, d, again, want)
		}
	}
	for _, attempt := range []int32{0, 4, 9} {
		if d, again := nextAttempt(transient, attempt, retries); again {
			t.Errorf("after attempt %d of 4: another in %s", attempt, d)
		}
	}
	if d, again := nextAttempt(store.Failure{Cause: "refused the credentials"}, 1, retries); again {
		t.Errorf("a permanent failure is tried again in %s", d)
	}
	if _, again := nextAttempt(transient, 1, nil); again {
		t.Error("without retries, a failure is tried again")
	}
}

// The default schedule stays within what the brief of issue #22 allows: a few attempts over at
// most about two minutes.
func TestBackupDefaultStoreRetriesAreBounded(t *testing.T) {
	var total time.Duration
	for _, d := range DefaultStoreRetries {
		total += d
	}
	if n := len(DefaultStoreRetries) + 1; n < 3 || n > 5 || total > 2*time.Minute {
		t.Errorf("%d attempts over %s", n, total)
	}
}

// An attempt of several shards is retried only when every shard that failed may pass.
func TestBackupClassifyAttemptOfShards(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	denied := fmt.Errorf("snapshot of c-1: %w", minio.ErrorResponse{Code: "AccessDenied", StatusCode: 403})
	if f := classifyAttempt("s3:8333", []error{nil, refused, refused}); !f.Transient || f.Cause != "store s3:8333 refused the connection" {
		t.Errorf("two shards refused: %+v", f)
	}
	if f := classifyAttempt("s3:8333", []error{refused, nil, denied}); f.Transient || !strings.Contains(f.Cause, "refused the credentials") {
		t.Errorf("one shard refused, one denied: %+v; want the permanent denial", f)
	}
}
