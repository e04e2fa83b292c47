// Package store keeps backups' objects in an S3-compatible object store (AWS S3, MinIO,
// SeaweedFS, versitygw, ...) through minio-go: uploads streamed from a reader of unknown size
// in multipart parts of bounded size, reads, stats, deletes and listings by prefix. It holds
// no state of its own beyond the client it is given the settings of; the caller resolves the
// credentials (a Secret's values) and passes them in.
package store

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// DefaultPartSize is the size of the parts of an upload unless S3Config says otherwise: half
// the memory one PutFrom holds (the part being sent, and the next being written), and with
// S3's limit of 10,000 parts an object of up to about 156 GiB.
const DefaultPartSize = 16 << 20

// maxParts is S3's limit on the parts of a multipart upload.
const maxParts = 10000

// maxPartSize is S3's largest part.
const maxPartSize = 5 << 30

// minPartSize is S3's smallest part but the last.
const minPartSize = 5 << 20

// Errors a caller can tell apart with errors.Is.
var (
	// ErrNotFound: no object under the key.
	ErrNotFound = errors.New("no such object")
	// ErrNoBucket: the bucket does not exist.
	ErrNoBucket = errors.New("no such bucket")
	// ErrAccessDenied: the store refused the credentials or their rights.
	ErrAccessDenied = errors.New("access denied")
)

// unknownUserCode is what versitygw answers (with 404) for an access key it does not know,
// where AWS answers InvalidAccessKeyId.
const unknownUserCode = "XAdminUserNotFound"

// S3Config is where the store is and how to sign in, resolved by the caller.
type S3Config struct {
	// Endpoint is "https://host[:port]", "http://host[:port]", or "host[:port]" (HTTPS).
	Endpoint string
	Bucket   string
	// Region is the bucket's region; "" lets the client ask the store.
	Region string
	// ForcePathStyle addresses the bucket in the path (endpoint/bucket/key), as most
	// self-hosted stores need, rather than as a host name (bucket.endpoint/key).
	ForcePathStyle bool
	// AccessKeyID and SecretAccessKey sign the requests.
	AccessKeyID, SecretAccessKey string
	// CAPEM, when set, is the PEM bundle the store's certificate is verified against instead
	// of the system's roots.
	CAPEM []byte
	// PartSize is the size of an upload's parts; 0: DefaultPartSize. At least 5 MiB.
	PartSize uint64
	// MaxRetries bounds the attempts of each request; 0: the client's default (10).
	MaxRetries int
	// Transport overrides the HTTP transport (tests); CAPEM is then ignored.
	Transport http.RoundTripper
}

// S3 is a bucket of an S3-compatible store.
type S3 struct {
	client   *minio.Client
	bucket   string
	endpoint string
	secure   bool
	partSize uint64
}

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Key  string
	Size int64
	ETag string
}

// NewS3 makes the client of cfg's bucket. It does not reach the store.
func NewS3(cfg S3Config) (*S3, error) {
	host, secure, err := parseEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if cfg.Bucket == "" {
		return nil, errors.New("s3: no bucket")
	}
	if cfg.AccessKeyID == "" || cfg.SecretAccessKey == "" {
		return nil, errors.New("s3: no access key id or secret access key")
	}
	partSize := cfg.PartSize
	if partSize == 0 {
		partSize = DefaultPartSize
	}
	if partSize < minPartSize {
		return nil, fmt.Errorf("s3: part size %d is below S3's minimum of %d", partSize, minPartSize)
	}
	if partSize > maxPartSize {
		return nil, fmt.Errorf("s3: part size %d is above S3's maximum of %d", partSize, uint64(maxPartSize))
	}
	transport := cfg.Transport
	if transport == nil {
		transport, err = newTransport(secure, cfg.CAPEM)
		if err != nil {
			return nil, err
		}
	}
	lookup := minio.BucketLookupAuto
	if cfg.ForcePathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		Secure:       secure,
		Region:       cfg.Region,
		BucketLookup: lookup,
		Transport:    transport,
		MaxRetries:   cfg.MaxRetries,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 client of %s: %w", host, err)
	}
	scheme := "http"
	if secure {
		scheme = "https"
	}
	return &S3{client: client, bucket: cfg.Bucket, endpoint: scheme + "://" + host, secure: secure, partSize: partSize}, nil
}

// EndpointHost is the host[:port] of an endpoint, to name the store in statuses; the
// endpoint as it is when it cannot be parsed.
func EndpointHost(endpoint string) string {
	host, _, err := parseEndpoint(endpoint)
	if err != nil {
		return endpoint
	}
	return host
}

// parseEndpoint splits an endpoint into host[:port] and whether it speaks TLS.
func parseEndpoint(endpoint string) (host string, secure bool, err error) {
	if endpoint == "" {
		return "", false, errors.New("s3: no endpoint")
	}
	if !strings.Contains(endpoint, "://") {
		return strings.TrimSuffix(endpoint, "/"), true, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", false, fmt.Errorf("s3 endpoint %q: %w", endpoint, err)
	}
	if u.Path != "" && u.Path != "/" {
		return "", false, fmt.Errorf("s3 endpoint %q: a path is not supported", endpoint)
	}
	switch u.Scheme {
	case "https":
		return u.Host, true, nil
	case "http":
		return u.Host, false, nil
	}
	return "", false, fmt.Errorf("s3 endpoint %q: scheme must be http or https", endpoint)
}

func newTransport(secure bool, caPEM []byte) (http.RoundTripper, error) {
	t, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("s3 transport: %w", err)
	}
	if secure && len(caPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("s3: the CA bundle holds no PEM certificate")
		}
		if t.TLSClientConfig == nil {
			t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		t.TLSClientConfig.RootCAs = pool
	}
	return t, nil
}

// Location is the object's URL-like name, s3://bucket/key, for statuses and logs.
func (s *S3) Location(key string) string { return "s3://" + s.bucket + "/" + key }

// Put uploads r, of unknown size, under key in parts of the configured size, one part in
// memory at a time. When r fails, or the context ends, the upload is aborted: no object
// appears under key (an object already there stays as it was).
func (s *S3) Put(ctx context.Context, key string, r io.Reader) (ObjectInfo, error) {
	up, err := s.client.PutObject(ctx, s.bucket, key, r, -1, minio.PutObjectOptions{
		PartSize:    s.partSize,
		ContentType: "application/octet-stream",
	})
	if err != nil {
		return ObjectInfo{}, s.wrap("put", key, err)
	}
	return ObjectInfo{Key: up.Key, Size: up.Size, ETag: up.ETag}, nil
}

// PutFrom uploads what write writes, as Put does: write runs beside the upload, and when it
// fails the upload is aborted and its error returned, as a *SourceError. When the upload
// fails first, the store's error is returned (the writer's, which only followed from it, is
// dropped), so that a caller can tell a store that could not be reached from a snapshot that
// could not be read.
//
// The writer runs up to a part ahead of the upload (partQueue): a part's upload and the
// writing of the next overlap, so an upload holds two parts of memory.
func (s *S3) PutFrom(ctx context.Context, key string, write func(w io.Writer) error) (ObjectInfo, error) {
	q := newPartQueue(int(s.partSize), !s.secure) //nolint:gosec // G115: at most 5 GiB, checked in NewS3
	sink := &pipeSink{w: q}
	writeErr := make(chan error, 1)
	go func() {
		err := write(sink)
		// A failed writer hands over no more parts, which aborts the upload.
		q.CloseWrite(err)
		writeErr <- err
	}()
	info, err := s.uploadParts(ctx, key, q)
	// A failed upload makes the writer's next write fail, so that it returns.
	q.Stop(cmpErr(err, errors.New("upload ended")))
	werr := <-writeErr
	switch {
	case err != nil && (werr == nil || sink.failed):
		// The upload ended first: the queue refused the writer only once the upload stopped.
		return ObjectInfo{}, err
	case werr != nil && sink.failed:
		return ObjectInfo{}, fmt.Errorf("write %s: the upload ended before the writer: %w", s.Location(key), werr)
	case werr != nil:
		return ObjectInfo{}, &SourceError{Err: fmt.Errorf("write %s: %w", s.Location(key), werr)}
	}
	return info, nil
}

// uploadParts sends q's parts as a multipart upload under key and completes it once the
// writer closed without an error; on any failure it aborts the upload, as minio-go's
// PutObject does.
//
// Over plain HTTP each part's request carries the SHA-256 of its payload, signed with the
// rest (SigV4): the store refuses a part changed on the way. minio-go's PutObject signs the
// same payload in 64 KiB chunks (aws-chunked) instead, which costs the same hashing plus
// three more copies of every byte. Over HTTPS, as PutObject does, the payload is left
// unsigned: TLS protects it.
func (s *S3) uploadParts(ctx context.Context, key string, q *partQueue) (ObjectInfo, error) {
	core := minio.Core{Client: s.client}
	uploadID, err := core.NewMultipartUpload(ctx, s.bucket, key, minio.PutObjectOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return ObjectInfo{}, s.wrap("put", key, err)
	}
	fail := func(err error) (ObjectInfo, error) {
		// Even once ctx ended: an upload left incomplete holds its parts' space.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = core.AbortMultipartUpload(actx, s.bucket, key, uploadID)
		return ObjectInfo{}, err
	}
	var parts []minio.CompletePart
	var size int64
	for {
		part, ok := q.Next()
		if !ok {
			break
		}
		if len(parts) == maxParts {
			return fail(fmt.Errorf("s3 put %s at %s: more than %d parts of %d bytes", s.Location(key), s.endpoint, maxParts, s.partSize))
		}
		// Sha256Hex empty (HTTPS): UNSIGNED-PAYLOAD.
		opts := minio.PutObjectPartOptions{DisableContentSha256: true, Sha256Hex: hex.EncodeToString(part.sha256)}
		p, err := core.PutObjectPart(ctx, s.bucket, key, uploadID, len(parts)+1, bytes.NewReader(part.data), int64(len(part.data)), opts)
		if err != nil {
			return fail(s.wrap("put", key, err))
		}
		parts = append(parts, minio.CompletePart{PartNumber: p.PartNumber, ETag: p.ETag})
		size += int64(len(part.data))
		q.Sent(part.data)
	}
	if err := q.WriteErr(); err != nil {
		return fail(err)
	}
	up, err := core.CompleteMultipartUpload(ctx, s.bucket, key, uploadID, parts, minio.PutObjectOptions{})
	if err != nil {
		return fail(s.wrap("put", key, err))
	}
	return ObjectInfo{Key: key, Size: size, ETag: up.ETag}, nil
}

// pipeSink is the writer PutFrom's writer writes to; failed says a write was refused, which
// happens only once the upload has ended. The writer's goroutine sets it before PutFrom reads
// it, after the writer returned.
type pipeSink struct {
	w      io.Writer
	failed bool
}

func (p *pipeSink) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if err != nil {
		p.failed = true
	}
	return n, err
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// Get opens the object under key for reading; the caller closes it.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.wrap("get", key, err)
	}
	// GetObject is lazy: Stat makes the request, so that a missing object fails here.
	if _, err := obj.Stat(); err != nil {
		_ = obj.Close()
		return nil, s.wrap("get", key, err)
	}
	return obj, nil
}

// Stat describes the object under key; ErrNotFound when there is none.
func (s *S3) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	st, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		err = s.wrap("stat", key, err)
		if errors.Is(err, ErrNotFound) {
			// A HEAD answer has no body: a store that answers an unknown access key with 404
			// (versitygw) looks like a missing object. A listing's answer says which.
			if _, lerr := s.list(ctx, key, 1); lerr != nil {
				return ObjectInfo{}, lerr
			}
		}
		return ObjectInfo{}, err
	}
	return ObjectInfo{Key: st.Key, Size: st.Size, ETag: st.ETag}, nil
}

// AbortIncomplete aborts the multipart uploads under key that were never completed nor
// aborted (an upload whose store went away before it could be aborted): their parts use
// space and are no object. None is no error.
func (s *S3) AbortIncomplete(ctx context.Context, key string) error {
	if err := s.client.RemoveIncompleteUpload(ctx, s.bucket, key); err != nil {
		return s.wrap("abort the incomplete uploads of", key, err)
	}
	return nil
}

// Delete removes the object under key; removing a missing object is no error.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return s.wrap("delete", key, err)
	}
	return nil
}

// List returns the objects whose keys start with prefix, in every "folder" below it, in
// key order.
func (s *S3) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	return s.list(ctx, prefix, 0)
}

// list lists up to limit objects (0: all).
func (s *S3) list(ctx context.Context, prefix string, limit int) ([]ObjectInfo, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing's goroutine when we stop early
	var out []ObjectInfo
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true, MaxKeys: limit}) {
		if obj.Err != nil {
			return nil, s.wrap("list", prefix, obj.Err)
		}
		out = append(out, ObjectInfo{Key: obj.Key, Size: obj.Size, ETag: obj.ETag})
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out, nil
}

// wrap names the operation and object, and marks the errors callers tell apart.
func (s *S3) wrap(op, key string, err error) error {
	var kind error
	switch minio.ToErrorResponse(err).Code {
	case minio.NoSuchKey:
		kind = ErrNotFound
	case minio.NoSuchBucket:
		kind = ErrNoBucket
	case minio.AccessDenied, minio.InvalidAccessKeyID, minio.SignatureDoesNotMatch, unknownUserCode:
		kind = ErrAccessDenied
	}
	if kind != nil {
		return fmt.Errorf("s3 %s %s at %s: %w: %w", op, s.Location(key), s.endpoint, kind, err)
	}
	return fmt.Errorf("s3 %s %s at %s: %w", op, s.Location(key), s.endpoint, err)
}

// InNamespace qualifies an endpoint whose host is a bare Service name (no dot, not an IP,
// not localhost) with namespace, the namespace of the resource that names it: the operator
// reaches the store from its own pod, where a bare name would resolve in the operator's
// namespace, not in the one the user meant. Anything else is returned as it is.
func InNamespace(endpoint, namespace string) string {
	scheme, rest := "", endpoint
	if i := strings.Index(endpoint, "://"); i >= 0 {
		scheme, rest = endpoint[:i+3], endpoint[i+3:]
	}
	hostPort, path, _ := strings.Cut(rest, "/")
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		host, port = hostPort, ""
	}
	if namespace == "" || host == "" || strings.Contains(host, ".") || strings.Contains(host, ":") ||
		host == "localhost" || net.ParseIP(host) != nil {
		return endpoint
	}
	qualified := host + "." + namespace
	if port != "" {
		qualified = net.JoinHostPort(qualified, port)
	}
	if path != "" || strings.HasSuffix(rest, "/") {
		qualified += "/" + path
	}
	return scheme + qualified
}
