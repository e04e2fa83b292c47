package controller

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/status"
)

// ReasonTLSReloaded is the event of pods that took a renewed certificate or CA bundle in place.
const ReasonTLSReloaded = "TLSReloaded"

// TLSHashAnnotation on a pod is the digest (redis.TLSMaterial.Hash) of the CA bundle and
// certificate its process was confirmed to serve and trust. It is on the pod, not the pod
// template, so that a renewal replaces no pod.
const TLSHashAnnotation = "redis.opstreelabs.in/tls-hash"

// tlsVolumeRefreshWindow is how long after the operator first saw a Secret's content a pod's
// Secret volume is taken to hold it: a kubelet refreshes Secret volumes within its sync
// period (a minute by default) plus its cache's lifetime. It matters only when a reload cannot
// show by itself that it read new files (a CA bundle changed, the certificate did not).
const tlsVolumeRefreshWindow = 2 * time.Minute

// tlsReloadRetry is how soon a pod whose files are not yet refreshed is reloaded again.
const tlsReloadRetry = 5 * time.Second

// tlsSettings are a resource's resolved TLS settings: the client configuration the operator
// dials its pods with, the material it was made from, and where the pods read the certificate.
type tlsSettings struct {
	config   *tls.Config
	material redis.TLSMaterial
	hash     string
	certPath string
	// firstSeen is when this operator first resolved this content.
	firstSeen time.Time
	// certChanged says that the content this one replaced, in this operator, had another
	// certificate: a pod that started before and serves this one has read its files since they
	// changed, the CA bundle with them (the kubelet swaps a Secret volume's files at once).
	certChanged bool

	// runningBefore holds, per sentinel StatefulSet, the pods that ran when the sentinel roll
	// first saw this content: those must restart to load it, any later pod mounted it. (Pod
	// start times have a second's precision, too coarse to tell.)
	runningBeforeMu sync.Mutex
	runningBefore   map[string]map[types.UID]bool
	// restarted is, per sentinel StatefulSet, the pod the roll deleted last.
	restarted map[string]*corev1.Pod
}

// recordRestart remembers the pod of set that the roll deletes.
func (t *tlsSettings) recordRestart(set string, pod *corev1.Pod) {
	t.runningBeforeMu.Lock()
	defer t.runningBeforeMu.Unlock()
	if t.restarted == nil {
		t.restarted = map[string]*corev1.Pod{}
	}
	t.restarted[set] = pod.DeepCopy()
}

// lastRestarted is the pod of set the roll deleted last, if any.
func (t *tlsSettings) lastRestarted(set string) (*corev1.Pod, bool) {
	t.runningBeforeMu.Lock()
	defer t.runningBeforeMu.Unlock()
	pod, ok := t.restarted[set]
	return pod, ok
}

// podsRunningBefore returns the UIDs of the pods of set that ran when this content was first
// looked at for it, recording pods (the set's current ones) on the first call.
func (t *tlsSettings) podsRunningBefore(set string, pods []corev1.Pod) map[types.UID]bool {
	t.runningBeforeMu.Lock()
	defer t.runningBeforeMu.Unlock()
	if uids, ok := t.runningBefore[set]; ok {
		return uids
	}
	uids := make(map[types.UID]bool, len(pods))
	for i := range pods {
		uids[pods[i].UID] = true
	}
	if t.runningBefore == nil {
		t.runningBefore = map[string]map[types.UID]bool{}
	}
	t.runningBefore[set] = uids
	return uids
}

// clientConfig is nil for a resource without TLS.
func (t *tlsSettings) clientConfig() *tls.Config {
	if t == nil {
		return nil
	}
	return t.config
}

// tlsCache keeps one client configuration per TLS Secret and content, so that the pool keeps
// one client per pod while the Secret is unchanged, and a change gives a new configuration
// (the pool's clients of the old one are closed). The operator's is Memory.tls.
type tlsCache struct {
	mu      sync.Mutex
	entries map[string]*tlsSettings // namespace/secret/keys -> current settings
}

// TLSSecretError says what is wrong with a TLS Secret; the user must fix it.
type TLSSecretError struct {
	Name string
	Err  error
}

func (e *TLSSecretError) Error() string { return fmt.Sprintf("TLS Secret %s: %v", e.Name, e.Err) }

func (e *TLSSecretError) Unwrap() error { return e.Err }

// readTLS reads and checks the Secret of spec and returns the settings for its content.
func readTLS(ctx context.Context, c client.Reader, cache *tlsCache, pool *redis.Pool, namespace string, spec *v1beta2.TLSConfig) (*tlsSettings, error) {
	if spec == nil {
		return nil, nil
	}
	name := spec.Secret.SecretName
	if name == "" {
		return nil, &TLSSecretError{Name: "(unnamed)", Err: errors.New("TLS.secret.secretName is required")}
	}
	var secret corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &secret); err != nil {
		return nil, &TLSSecretError{Name: name, Err: err}
	}
	caKey, certKey, keyKey := builder.TLSKeys(spec)
	var m redis.TLSMaterial
	for _, k := range []struct {
		key string
		dst *[]byte
	}{{caKey, &m.CA}, {certKey, &m.Cert}, {keyKey, &m.Key}} {
		v, ok := secret.Data[k.key]
		if !ok || len(v) == 0 {
			return nil, &TLSSecretError{Name: name, Err: fmt.Errorf("no key %q", k.key)}
		}
		*k.dst = v
	}
	hash := m.Hash()
	id := namespace + "/" + name + "/" + caKey + "/" + certKey + "/" + keyKey
	cache.mu.Lock()
	defer cache.mu.Unlock()
	if cur := cache.entries[id]; cur != nil && cur.hash == hash && string(cur.material.Key) == string(m.Key) {
		return cur, nil
	}
	cfg, err := redis.NewTLSConfig(m)
	if err != nil {
		return nil, &TLSSecretError{Name: name, Err: err}
	}
	if old := cache.entries[id]; old != nil && pool != nil {
		// Connections already open keep working (Redis keeps their sessions); new ones must
		// trust the new bundle.
		pool.EvictTLS(old.config)
	}
	next := &tlsSettings{config: cfg, material: m, hash: hash, certPath: builder.TLSCertPath(spec), firstSeen: time.Now()}
	if old := cache.entries[id]; old != nil {
		next.certChanged = !bytes.Equal(old.material.Cert, m.Cert)
	}
	cache.entries[id] = next
	return next, nil
}

// resolveTLSOf reads the resource's TLS Secret; a Secret the user must fix stops the reconcile
// with a condition and an event (the Secret watch brings it back).
func (d *Dependencies) resolveTLSOf(ctx context.Context, obj client.Object, spec *v1beta2.TLSConfig, conditions status.Conditions) (*tlsSettings, bool, error) {
	rec := d.Recorder
	settings, err := readTLS(ctx, d.Client, d.Memory.tls, d.Redis, obj.GetNamespace(), spec)
	var invalid *TLSSecretError
	if errors.As(err, &invalid) {
		conditions.Degraded(status.ReasonTLSSecretInvalid, invalid.Error())
		rec.Eventf(obj, nil, corev1.EventTypeWarning, status.ReasonTLSSecretInvalid, "ReadTLS", "%s", invalid.Error())
		return nil, true, nil
	}
	return settings, false, err
}

// tlsReload brings the TLS Secret's current content into the running Redis processes of a
// resource, in place: for each running pod whose annotation does not show the content, it
// reloads the files (CONFIG SET tls-cert-file), checks with a new handshake that the process
// serves the Secret's certificate, and records the content on the pod. A process whose files
// the kubelet has not refreshed yet serves the old certificate; it is reloaded again shortly.
type tlsReload struct {
	client client.Client
	// node is the pod at an endpoint, servedCertificate the certificate a handshake with it
	// shows (Dependencies.redisNode, servedCertificate).
	node              func(redis.Endpoint) (RedisNode, error)
	servedCertificate func(ctx context.Context, ep redis.Endpoint, timeout time.Duration) (*x509.Certificate, error)
	recorder          recorder.EventRecorder
}

// tlsFilesReloader is a pod told to read its TLS files again.
type tlsFilesReloader interface {
	ReloadTLS(ctx context.Context, certFile string) error
}

func (t tlsReload) reload(ctx context.Context, w *workloadScope, pods []corev1.Pod) error {
	owner, settings, port, auth, requeue := w.spec.owner, w.tls, w.spec.port, w.auth(), w.Requeuer(ctx)
	if settings == nil {
		return nil
	}
	leaf, err := settings.material.Leaf()
	if err != nil {
		return fmt.Errorf("TLS Secret certificate: %w", err)
	}
	var renewed []string
	var first *corev1.Pod
	var waiting []string
	for i := range pods {
		pod := &pods[i]
		previous := pod.Annotations[TLSHashAnnotation]
		if previous == settings.hash || pod.Status.PodIP == "" || pod.Status.Phase != corev1.PodRunning {
			continue
		}
		ep := podEndpoint(pod, port, auth).WithTLS(settings.config)
		before, err := t.servedCertificate(ctx, ep, 5*time.Second)
		if err != nil {
			// Starting, or stopping: the pod's watch brings the reconcile back.
			log.FromContext(ctx).V(1).Info("cannot check the certificate a pod serves", "pod", pod.Name, "error", err.Error())
			waiting = append(waiting, pod.Name)
			continue
		}
		node, err := t.node(ep)
		if err != nil {
			return err
		}
		var c tlsFilesReloader = node
		if err := c.ReloadTLS(ctx, settings.certPath); err != nil {
			log.FromContext(ctx).Info("reloading TLS files failed", "pod", pod.Name, "error", err.Error())
			waiting = append(waiting, pod.Name)
			continue
		}
		after, err := t.servedCertificate(ctx, ep, 5*time.Second)
		if err != nil {
			waiting = append(waiting, pod.Name)
			continue
		}
		// A pod started after this content was first seen mounted it as it is. The annotation
		// alone cannot say so: the cache may not show the one written a moment ago.
		mountedCurrent := previous == "" && pod.Status.StartTime != nil && pod.Status.StartTime.After(settings.firstSeen)
		fresh := after.Equal(leaf) &&
			(!before.Equal(leaf) || // the reload read the new certificate, and the CA beside it
				mountedCurrent ||
				// The certificate changed and the process serves the new one: it read the new
				// files, at its start or at an earlier reload left unconfirmed (its reply or
				// the check after it failed).
				settings.certChanged ||
				time.Since(settings.firstSeen) > tlsVolumeRefreshWindow)
		if !fresh {
			waiting = append(waiting, pod.Name)
			continue
		}
		if err := setPodAnnotation(ctx, t.client, pod, TLSHashAnnotation, settings.hash); err != nil {
			return err
		}
		if !mountedCurrent {
			renewed = append(renewed, pod.Name)
			if first == nil || pod.Name < first.Name {
				first = pod
			}
		}
	}
	if len(renewed) > 0 {
		slices.Sort(renewed)
		// Related to a pod it names: events that differ only in their note are one series to
		// the event recorder, which keeps the first note, so a second pass's event about the
		// same resource would not show. Each pass names other pods.
		t.recorder.Eventf(owner, first, corev1.EventTypeNormal, ReasonTLSReloaded, "ReloadTLS",
			"pods %v reloaded the TLS Secret in place and serve certificate serial %s", renewed, leaf.SerialNumber.Text(16))
	}
	if len(waiting) > 0 {
		requeue(tlsReloadRetry, fmt.Sprintf("pods %v do not yet serve the TLS Secret's current content", waiting))
	}
	return nil
}

// setPodAnnotation sets one annotation of a pod, writing only when it differs.
func setPodAnnotation(ctx context.Context, c client.Client, pod *corev1.Pod, key, value string) error {
	if pod.Annotations[key] == value {
		return nil
	}
	original := pod.DeepCopy()
	annotations := make(map[string]string, len(pod.Annotations)+1)
	for k, v := range pod.Annotations {
		annotations[k] = v
	}
	annotations[key] = value
	pod.Annotations = annotations
	if err := c.Patch(ctx, pod, client.MergeFrom(original)); err != nil {
		return fmt.Errorf("annotate pod %s %s: %w", pod.Name, key, err)
	}
	return nil
}
