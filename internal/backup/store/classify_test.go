package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// closedAddr is a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// storeAt is a client of endpoint that tries each request once, as the table wants the
// first answer, not ten.
func storeAt(t *testing.T, endpoint string) *S3 {
	t.Helper()
	st, err := NewS3(S3Config{Endpoint: endpoint, Bucket: "backups", Region: "us-east-1", ForcePathStyle: true,
		AccessKeyID: "id", SecretAccessKey: "not-shown", MaxRetries: 1, PartSize: minPartSize})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// answering is a store that answers every request with status and an S3 error of code.
func answering(t *testing.T, status int, code string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s said by the test</Message>`+
			`<Resource>%s</Resource><RequestId>1</RequestId></Error>`, code, code, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// put uploads a little through the client, returning the store's error.
func put(t *testing.T, st *S3) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := st.PutFrom(ctx, "ns/rb/cache-0.rdb", func(w io.Writer) error {
		_, err := w.Write([]byte("REDIS0011 payload"))
		return err
	})
	if err == nil {
		t.Fatal("the upload succeeded")
	}
	return err
}

// Each failure is classified as the error minio-go (or the network) really returns it, wrapped
// as the controller wraps it: what may pass with time is transient, the rest permanent, and
// the cause names the store and the failure without a credential.
func TestClassifyBackupStoreErrors(t *testing.T) {
	refused := closedAddr(t)
	// A store that takes the request and closes the connection without an answer.
	hangUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	defer hangUp.Close()
	// A store that accepts and never answers.
	silent, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = silent.Close() }()
	go func() {
		for {
			conn, err := silent.Accept()
			if err != nil {
				return
			}
			defer func() { _ = conn.Close() }()
		}
	}()
	tlsStore := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsStore.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point
	tlsStore.StartTLS()
	defer tlsStore.Close()

	timeoutErr := func() error {
		st := storeAt(t, "http://"+silent.Addr().String())
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := st.Stat(ctx, "x")
		return err
	}
	_, dialErr := (&net.Dialer{}).DialContext(context.Background(), "tcp", refused)
	_, lookupErr := net.DefaultResolver.LookupHost(context.Background(), "s3-store.no-such-namespace.invalid")

	for _, tc := range []struct {
		name      string
		err       error
		transient bool
		cause     string
	}{
		{"connection refused, through minio-go", put(t, storeAt(t, "http://"+refused)), true, "refused the connection"},
		{"connection refused, a dial's net.OpError", fmt.Errorf("snapshot of cache-0: %w", dialErr), true, "refused the connection"},
		{"ECONNREFUSED in an OpError", &net.OpError{Op: "dial", Net: "tcp",
			Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}, true, "refused the connection"},
		{"connection closed without an answer", put(t, storeAt(t, hangUp.URL)), true, "dropped the connection"},
		{"connection reset mid-upload", fmt.Errorf("s3 put: %w", &net.OpError{Op: "write", Net: "tcp",
			Err: &os.SyscallError{Syscall: "write", Err: syscall.ECONNRESET}}), true, "dropped the connection"},
		{"request timed out", timeoutErr(), true, "did not answer in time"},
		{"context.DeadlineExceeded", fmt.Errorf("s3 stat: %w", context.DeadlineExceeded), true, "did not answer in time"},
		{"i/o timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, true, "did not answer in time"},
		{"name not found yet", &net.OpError{Op: "dial", Net: "tcp",
			Err: &net.DNSError{Err: "no such host", Name: "s3-store.team-a", IsNotFound: true}}, true, "does not resolve (not found yet)"},
		{"a real lookup that fails", lookupErr, true, "does not resolve"},
		{"503 SlowDown", put(t, storeAt(t, answering(t, http.StatusServiceUnavailable, "SlowDown"))), true, "answered 503 SlowDown"},
		{"500 InternalError", put(t, storeAt(t, answering(t, http.StatusInternalServerError, "InternalError"))), true, "answered 500 InternalError"},
		{"403 AccessDenied", put(t, storeAt(t, answering(t, http.StatusForbidden, "AccessDenied"))), false, "refused the credentials or their rights (403 AccessDenied)"},
		{"403 InvalidAccessKeyId", put(t, storeAt(t, answering(t, http.StatusForbidden, "InvalidAccessKeyId"))), false, "refused the credentials"},
		{"403 SignatureDoesNotMatch", put(t, storeAt(t, answering(t, http.StatusForbidden, "SignatureDoesNotMatch"))), false, "refused the credentials"},
		{"404 NoSuchBucket", put(t, storeAt(t, answering(t, http.StatusNotFound, "NoSuchBucket"))), false, "the bucket does not exist"},
		{"400 EntityTooLarge", put(t, storeAt(t, answering(t, http.StatusBadRequest, "EntityTooLarge"))), false, "refused the object's size"},
		{"507 quota (a 5xx no retry helps)", put(t, storeAt(t, answering(t, http.StatusInsufficientStorage, "XMinioStorageFull"))), false, "has no space left for the object"},
		{"403 QuotaExceeded", put(t, storeAt(t, answering(t, http.StatusForbidden, "QuotaExceeded"))), false, "has no space left for the object"},
		{"400 BadDigest", put(t, storeAt(t, answering(t, http.StatusBadRequest, "BadDigest"))), false, "checksum wrong"},
		{"certificate of an unknown CA", put(t, storeAt(t, tlsStore.URL)), false, "certificate that is not trusted"},
		{"the snapshot's side failed", &SourceError{Err: fmt.Errorf("snapshot of 10.0.0.7:6379: %w", dialErr)}, false, "reading the snapshot failed"},
		{"an error of no known kind", errors.New("the store holds 10 bytes, the snapshot was 12"), false, "the store failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("no error to classify")
			}
			f := Classify("s3-store:8333", tc.err)
			if f.Transient != tc.transient || !strings.Contains(f.Cause, tc.cause) {
				t.Errorf("Classify(%v) = %+v; want transient %v, a cause saying %q", tc.err, f, tc.transient, tc.cause)
			}
			if strings.Contains(f.Cause, "not-shown") {
				t.Errorf("the cause %q shows the secret", f.Cause)
			}
		})
	}
}

// When the upload fails first, PutFrom returns the store's error, not the writer's (which
// only followed from it), so that it is classified as the store's.
func TestPutFromReturnsTheStoresFailure(t *testing.T) {
	st := storeAt(t, answering(t, http.StatusServiceUnavailable, "SlowDown"))
	_, err := st.PutFrom(context.Background(), "k", func(w io.Writer) error {
		for {
			if _, err := w.Write(make([]byte, 1<<20)); err != nil {
				return fmt.Errorf("snapshot: %w", err)
			}
		}
	})
	var source *SourceError
	if errors.As(err, &source) || !Classify("h", err).Transient {
		t.Fatalf("PutFrom: %v; want the store's 503", err)
	}
	// A store that starts the upload and fails anything else: the writer fails first.
	starts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch {
		case r.Method == http.MethodPost && r.URL.Query().Has("uploads"):
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult>`+
				`<Bucket>backups</Bucket><Key>k</Key><UploadId>u1</UploadId></InitiateMultipartUploadResult>`)
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer starts.Close()
	boom := errors.New("the source went away")
	_, err = storeAt(t, starts.URL).PutFrom(context.Background(), "k", func(io.Writer) error { return boom })
	if !errors.As(err, &source) || !errors.Is(err, boom) {
		t.Fatalf("PutFrom of a failing writer: %v; want a *SourceError of its error", err)
	}
}

func TestEndpointHost(t *testing.T) {
	for in, want := range map[string]string{
		"http://s3-store.team-a:8333": "s3-store.team-a:8333", "https://s3.amazonaws.com/": "s3.amazonaws.com",
		"minio:9000": "minio:9000", "ftp://x": "ftp://x",
	} {
		if got := EndpointHost(in); got != want {
			t.Errorf("EndpointHost(%q) = %q, want %q", in, got, want)
		}
	}
}
