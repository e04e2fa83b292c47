//go:build integration

package s3test_test

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/rediskube/redis-operator/internal/s3test"
)

// The server answers signed requests in its bucket, and its posix backend keeps the object
// as a file of the bucket's folder.
func TestServerStoresObjects(t *testing.T) {
	s := s3test.Start(t, s3test.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := s.Client(t)
	body := []byte("hello, bucket")
	if _, err := c.PutObject(ctx, s.Bucket, "a/b.txt", bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("put: %v", err)
	}
	obj, err := c.GetObject(ctx, s.Bucket, "a/b.txt", minio.GetObjectOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	defer func() { _ = obj.Close() }()
	got, err := io.ReadAll(obj)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("read back %q, want %q", got, body)
	}
	if ok, err := c.BucketExists(ctx, "no-such-bucket"); err != nil || ok {
		t.Fatalf("BucketExists(no-such-bucket) = %v, %v; want false, nil", ok, err)
	}
}
