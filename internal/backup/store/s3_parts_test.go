package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// partsStore is a store that takes multipart uploads and keeps, of each part's PUT, the
// payload hash it was signed with and the SHA-256 of the body it received.
type partsStore struct {
	mu    sync.Mutex
	parts []sentPart
	body  []byte
}

type sentPart struct {
	contentSHA256, bodySHA256 string
	signedHeaders             string
	size                      int
}

func (s *partsStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodPost && q.Has("uploads"):
		_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult>`+
			`<Bucket>backups</Bucket><Key>k</Key><UploadId>u1</UploadId></InitiateMultipartUploadResult>`)
	case r.Method == http.MethodPut && q.Has("partNumber"):
		sum := sha256.Sum256(body)
		_, signed, _ := strings.Cut(r.Header.Get("Authorization"), "SignedHeaders=")
		signed, _, _ = strings.Cut(signed, ",")
		s.mu.Lock()
		s.parts = append(s.parts, sentPart{contentSHA256: r.Header.Get("X-Amz-Content-Sha256"), bodySHA256: hex.EncodeToString(sum[:]),
			signedHeaders: signed, size: len(body)})
		s.body = append(s.body, body...)
		s.mu.Unlock()
		w.Header().Set("ETag", fmt.Sprintf(`"etag-%s"`, q.Get("partNumber")))
	case r.Method == http.MethodPost && q.Has("uploadId"):
		_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult>`+
			`<Bucket>backups</Bucket><Key>k</Key><ETag>"whole-2"</ETag></CompleteMultipartUploadResult>`)
	default:
		w.WriteHeader(http.StatusNotImplemented)
	}
}

// Over plain HTTP every part is signed with the SHA-256 of its payload (the store refuses a
// part changed on the way); over HTTPS, as minio-go does, the payload goes unsigned. Either
// way the parts carry the bytes written, in order.
func TestPutFromSignsEachPartsPayloadOverPlainHTTP(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), (minPartSize+minPartSize/2)/16) // a part and a half
	for _, tc := range []struct {
		name       string
		newServer  func(http.Handler) *httptest.Server
		wantSigned bool
	}{
		{"http", httptest.NewServer, true},
		{"https", httptest.NewTLSServer, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &partsStore{}
			srv := tc.newServer(store)
			defer srv.Close()
			st, err := NewS3(S3Config{Endpoint: srv.URL, Bucket: "backups", Region: "us-east-1", ForcePathStyle: true,
				AccessKeyID: "id", SecretAccessKey: "secret", MaxRetries: 1, PartSize: minPartSize, Transport: srv.Client().Transport})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			info, err := st.PutFrom(ctx, "k", func(w io.Writer) error {
				for rest := data; len(rest) > 0; rest = rest[min(len(rest), 100_000):] {
					if _, err := w.Write(rest[:min(len(rest), 100_000)]); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil || info.Size != int64(len(data)) {
				t.Fatalf("PutFrom: %+v, %v; want %d bytes", info, err, len(data))
			}
			if len(store.parts) != 2 || !bytes.Equal(store.body, data) {
				t.Fatalf("%d parts of %d bytes; want 2 holding the %d written", len(store.parts), len(store.body), len(data))
			}
			for i, p := range store.parts {
				if !strings.Contains(p.signedHeaders, "x-amz-content-sha256") {
					t.Errorf("part %d: the payload hash header is not signed (SignedHeaders=%s)", i+1, p.signedHeaders)
				}
				want := "UNSIGNED-PAYLOAD"
				if tc.wantSigned {
					want = p.bodySHA256
				}
				if p.contentSHA256 != want {
					t.Errorf("part %d of %d bytes: X-Amz-Content-Sha256 %q, want %q", i+1, p.size, p.contentSHA256, want)
				}
			}
		})
	}
}
