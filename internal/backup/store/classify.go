package store

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/minio/minio-go/v7"
)

// SourceError is the failure of what PutFrom's writer read (the snapshot), not of the store.
type SourceError struct{ Err error }

func (e *SourceError) Error() string { return e.Err.Error() }
func (e *SourceError) Unwrap() error { return e.Err }

// Failure is what an error of a store says to its caller: whether trying again later may
// succeed, and why it failed in words for a status.
type Failure struct {
	// Transient: the store could not be reached or was overloaded for now (connection
	// refused or reset, a timeout, a name that does not resolve yet, a 5xx answer); the same
	// request may succeed later. Anything else is permanent: trying again fails the same way.
	Transient bool
	// Cause names the failure for people: "store s3-store:8333 refused the connection". It
	// holds no credential, and no detail of the error (the caller adds that where it fits).
	Cause string
}

// Codes of S3 answers that no retry changes.
var (
	credentialCodes = map[string]bool{
		minio.AccessDenied: true, minio.InvalidAccessKeyID: true, minio.SignatureDoesNotMatch: true,
		unknownUserCode: true, "InvalidToken": true, "AccountProblem": true, "AllAccessDisabled": true,
	}
	sizeCodes = map[string]bool{"EntityTooLarge": true}
	// Codes of a store or bucket that is full (a quota reached, its disks full): the object
	// is not too big in itself, but no retry within minutes frees the space.
	spaceCodes = map[string]bool{
		"QuotaExceeded": true, "XMinioAdminBucketQuotaExceeded": true,
		"InsufficientStorage": true, "XMinioStorageFull": true,
	}
	checksumCodes = map[string]bool{
		"BadDigest": true, "InvalidDigest": true, "XAmzContentSHA256Mismatch": true, "XAmzContentChecksumMismatch": true,
	}
	// Codes a store answers when it is overloaded or restarting, whatever their HTTP status.
	busyCodes = map[string]bool{
		"SlowDown": true, "SlowDownWrite": true, "SlowDownRead": true, "ServiceUnavailable": true,
		"InternalError": true, "RequestTimeout": true, "Throttling": true, "ThrottlingException": true,
		"RequestLimitExceeded": true, "RequestThrottled": true, "XMinioServerNotInitialized": true,
	}
)

// Classify tells whether err, of a request to the store at host (host[:port]), may pass
// with time, and names its cause. It looks only at the error's chain: the same error is
// always classified the same way. An error it does not know is permanent, as a backup
// failed before retries existed: retrying what may never work only delays the verdict.
func Classify(host string, err error) Failure {
	store := "store " + host
	var source *SourceError
	if errors.As(err, &source) {
		// The Redis side keeps the behaviour it had: the backup fails with the error.
		return Failure{Cause: "reading the snapshot failed"}
	}
	// An S3 answer first: it is the store speaking, whatever the connection did before.
	var answer minio.ErrorResponse
	if errors.As(err, &answer) && (answer.Code != "" || answer.StatusCode != 0) {
		return classifyAnswer(store, answer)
	}
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	if errors.As(err, &unknownCA) || errors.As(err, &badHost) || errors.As(err, &invalid) || errors.As(err, &verify) {
		return Failure{Cause: store + " presented a certificate that is not trusted"}
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		// A new Service's name resolves only once the cluster's DNS has it: a name that is
		// not found yet is worth waiting for, as a lookup that timed out is.
		return Failure{Transient: true, Cause: fmt.Sprintf("the name of %s does not resolve (%s)", store, dnsWhy(dns))}
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return Failure{Transient: true, Cause: store + " refused the connection"}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return Failure{Transient: true, Cause: store + " dropped the connection"}
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTDOWN):
		return Failure{Transient: true, Cause: store + " is unreachable"}
	case closedByStore(err):
		return Failure{Transient: true, Cause: store + " dropped the connection"}
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return Failure{Transient: true, Cause: store + " did not answer in time"}
	}
	return Failure{Cause: "the store failed"}
}

func classifyAnswer(store string, answer minio.ErrorResponse) Failure {
	said := answerName(answer)
	switch {
	case credentialCodes[answer.Code]:
		return Failure{Cause: fmt.Sprintf("%s refused the credentials or their rights (%s)", store, said)}
	case answer.Code == minio.NoSuchBucket:
		return Failure{Cause: fmt.Sprintf("the bucket does not exist on %s (%s)", store, said)}
	case spaceCodes[answer.Code] || answer.StatusCode == http.StatusInsufficientStorage:
		return Failure{Cause: fmt.Sprintf("%s has no space left for the object: a quota or its storage is full (%s)", store, said)}
	case sizeCodes[answer.Code] || answer.StatusCode == http.StatusRequestEntityTooLarge:
		return Failure{Cause: fmt.Sprintf("%s refused the object's size (%s)", store, said)}
	case checksumCodes[answer.Code]:
		return Failure{Cause: fmt.Sprintf("%s found the upload's checksum wrong (%s)", store, said)}
	case busyCodes[answer.Code] || answer.StatusCode >= 500 || answer.StatusCode == http.StatusTooManyRequests ||
		answer.StatusCode == http.StatusRequestTimeout:
		return Failure{Transient: true, Cause: fmt.Sprintf("%s answered %s", store, said)}
	}
	return Failure{Cause: fmt.Sprintf("%s refused the request (%s)", store, said)}
}

// answerName is "503 SlowDown": the status and the code an answer has.
func answerName(answer minio.ErrorResponse) string {
	parts := make([]string, 0, 2)
	if answer.StatusCode != 0 {
		parts = append(parts, fmt.Sprint(answer.StatusCode))
	}
	if answer.Code != "" {
		parts = append(parts, answer.Code)
	}
	return strings.Join(parts, " ")
}

func dnsWhy(dns *net.DNSError) string {
	switch {
	case dns.IsNotFound:
		return "not found yet"
	case dns.IsTimeout:
		return "the lookup timed out"
	}
	return "the lookup failed"
}

// closedByStore: minio-go replaces the EOF of a connection the server closed before it
// answered with an error of its own, whose words are all that is left of it.
func closedByStore(err error) bool {
	var u *url.Error
	return errors.As(err, &u) && u.Err != nil && strings.HasPrefix(u.Err.Error(), "Connection closed by foreign host")
}

func isTimeout(err error) bool {
	var timeout interface{ Timeout() bool }
	return errors.As(err, &timeout) && timeout.Timeout()
}
