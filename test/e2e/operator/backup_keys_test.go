package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1alpha1"
)

// The keys a backup test writes: before-N (one in three with an hour's TTL) before the backup,
// the sequence seq-N through it, after-N once it completed.
const (
	keysBeforeBackup = 500
	keysAfterBackup  = 100
)

// writeKeysBeforeBackup writes before-0 … before-(keysBeforeBackup-1), one in three with an
// hour's TTL.
func writeKeysBeforeBackup(t *testing.T, c goredis.Cmdable) {
	t.Helper()
	for i := range keysBeforeBackup {
		ttl := time.Duration(0)
		if i%3 == 0 {
			ttl = time.Hour
		}
		if err := c.Set(context.Background(), fmt.Sprintf("before-%d", i), i, ttl).Err(); err != nil {
			t.Fatalf("SET before-%d: %v", i, err)
		}
	}
}

// writeKeysAfterBackup writes after-0 … after-(keysAfterBackup-1): none may be restored.
func writeKeysAfterBackup(t *testing.T, c goredis.Cmdable) {
	t.Helper()
	for i := range keysAfterBackup {
		if err := c.Set(context.Background(), fmt.Sprintf("after-%d", i), i, 0).Err(); err != nil {
			t.Fatalf("SET after-%d: %v", i, err)
		}
	}
}

// sequenceWriter writes seq-0, seq-1, … without gaps (a failed write is written again) until
// stopped: the last key acknowledged before a backup is asked for must be in it.
type sequenceWriter struct {
	acked atomic.Int64
	stop  chan struct{}
	wg    sync.WaitGroup
}

// startSequence starts writing the sequence through c and returns once writes have run for
// 2 s; the test fails if none was acknowledged by then.
func startSequence(t *testing.T, c goredis.Cmdable) *sequenceWriter {
	t.Helper()
	w := &sequenceWriter{stop: make(chan struct{})}
	w.acked.Store(-1)
	w.wg.Go(func() {
		for n := int64(0); ; n++ {
			select {
			case <-w.stop:
				return
			default:
			}
			if err := c.Set(context.Background(), fmt.Sprintf("seq-%d", n), n, 0).Err(); err != nil {
				n-- // written again: a sequence without gaps
				time.Sleep(50 * time.Millisecond)
				continue
			}
			w.acked.Store(n)
		}
	})
	time.Sleep(2 * time.Second)
	if w.acked.Load() < 0 {
		t.Fatal("no write of the sequence was acknowledged in 2 s")
	}
	return w
}

// ackedSoFar is the last number of the sequence acknowledged so far.
func (w *sequenceWriter) ackedSoFar() int64 { return w.acked.Load() }

// halt stops the writer and waits for it.
func (w *sequenceWriter) halt() {
	close(w.stop)
	w.wg.Wait()
}

// sampleStoreStorage is the spec.storage of a backup into the sample store.
const sampleStoreStorage = `    s3:
      endpoint: http://s3-store:8333
      bucket: backups
      forcePathStyle: true
      credentialsSecret: {name: s3-store-credentials}
`

// takeBackup asks for a RedisBackup of the kind's target into the sample store of ns and waits
// until it is Completed; it fails the test as soon as the backup fails.
func takeBackup(t *testing.T, ns, kind, target string) *v1alpha1.RedisBackup {
	t.Helper()
	return takeBackupInto(t, ns, kind, target, sampleStoreStorage)
}

// takeBackupInto is takeBackup into storage, the lines of spec.storage (indented by four).
func takeBackupInto(t *testing.T, ns, kind, target, storage string) *v1alpha1.RedisBackup {
	t.Helper()
	name := target + "-backup"
	sb.Apply(t, ns, fmt.Sprintf(`apiVersion: redis.redis.opstreelabs.in/v1alpha1
kind: RedisBackup
metadata:
  name: %s
spec:
  target: {kind: %s, name: %s}
  storage:
%s`, name, kind, target, storage))
	b := &v1alpha1.RedisBackup{}
	sb.WaitFor(t, ns, "RedisBackup "+name+" Completed", 4*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		if b.Status.Phase == v1alpha1.BackupFailed {
			return false, "", fmt.Errorf("the backup failed: %+v", b.Status.Conditions)
		}
		return b.Status.Phase == v1alpha1.BackupCompleted, fmt.Sprintf("phase %q, conditions %+v", b.Status.Phase, b.Status.Conditions), nil
	})
	return b
}

// requireRestoredKeys checks, through c, that every before- key and the sequence up to
// ackedBefore read back as written, the before- keys with their TTL (an hour, less the time
// since, for one in three; none for the others), and that no after- key is there.
func requireRestoredKeys(t *testing.T, c goredis.Cmdable, where string, ackedBefore int64) {
	t.Helper()
	ctx := context.Background()
	var missing []string
	for i := range keysBeforeBackup {
		key := fmt.Sprintf("before-%d", i)
		got, err := c.Get(ctx, key).Int()
		if err != nil || got != i {
			missing = append(missing, fmt.Sprintf("%s=%d (%v)", key, got, err))
			continue
		}
		ttl, err := c.PTTL(ctx, key).Result()
		switch {
		case err != nil:
			t.Errorf("%s: PTTL %s: %v", where, key, err)
		case i%3 == 0 && (ttl <= 0 || ttl > time.Hour):
			t.Errorf("%s: %s restored with TTL %s, want its hour (less the time since)", where, key, ttl)
		case i%3 != 0 && ttl != -1: // go-redis gives PTTL's -1 (no TTL) as -1 ns
			t.Errorf("%s: %s restored with TTL %s, want none", where, key, ttl)
		}
	}
	for n := range ackedBefore + 1 {
		key := fmt.Sprintf("seq-%d", n)
		if got, err := c.Get(ctx, key).Int64(); err != nil || got != n {
			missing = append(missing, fmt.Sprintf("%s=%d (%v)", key, got, err))
		}
	}
	if len(missing) > 0 {
		t.Errorf("%s: %d keys acknowledged before the backup are not restored as written, e.g. %s", where, len(missing), strings.Join(missing[:min(len(missing), 10)], ", "))
	}
	for i := range keysAfterBackup {
		key := fmt.Sprintf("after-%d", i)
		if err := c.Get(ctx, key).Err(); !errors.Is(err, goredis.Nil) {
			t.Errorf("%s: %s, written after the backup completed, reads %v, want no such key", where, key, err)
		}
	}
}
