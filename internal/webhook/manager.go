// Package webhook serves the conversion webhook of the operator's CRDs and manages the
// certificate it serves with: without cert-manager, the operator makes its own CA and serving
// certificate, keeps them in a Secret of its namespace (so that every replica serves the same
// one), injects the CA into the CRDs' conversion stanza and renews both before they expire.
package webhook

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// ConvertPath is where the conversion webhook is served.
const ConvertPath = "/convert"

// CRDNames are the CRDs whose conversion the operator serves.
var CRDNames = []string{
	"redis.redis.redis.opstreelabs.in",
	"redisclusters.redis.redis.opstreelabs.in",
	"redisreplications.redis.redis.opstreelabs.in",
	"redissentinels.redis.redis.opstreelabs.in",
}

// The operator's permissions for serving conversion: the CRDs (only ours, by name) to inject
// the CA bundle into. Its certificate Secret is covered by the Secrets rule of the controllers.
//
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;update;patch,resourceNames=redis.redis.redis.opstreelabs.in;redisclusters.redis.redis.opstreelabs.in;redisreplications.redis.redis.opstreelabs.in;redissentinels.redis.redis.opstreelabs.in

// CertOptions configure where the webhook is reached and where its certificate comes from.
type CertOptions struct {
	// Namespace is the operator's namespace: the Secret's and the Service's.
	Namespace string
	// ServiceName is the Service the API server calls; ServicePort its port.
	ServiceName string
	ServicePort int32
	// DNSDomain is the cluster's DNS domain, the end of the Service's full name on the
	// certificate; "" is cluster.local.
	DNSDomain string
	// URL, when set, replaces the Service: the API server calls this URL (for an operator
	// running outside the cluster, and for tests). Its host is the certificate's name.
	URL string
	// SecretName is the Secret that holds the certificates. A Secret without a CA key (one
	// that cert-manager issued, say) is used as it is and never renewed by the operator.
	SecretName string
	// CertDir, when set, is a directory with tls.crt and tls.key (and ca.crt) that something
	// else keeps current, such as a mounted cert-manager Secret; the operator then makes no
	// certificate and injects ca.crt from it.
	CertDir string
	// Validity of the serving certificates the operator makes (the CA lives ten times longer).
	Validity time.Duration
	// CRDNames are the CRDs to inject the CA bundle into (default CRDNames).
	CRDNames []string
	// ResyncInterval bounds how long a missed change goes unnoticed (default one minute).
	ResyncInterval time.Duration
}

// CertManager keeps the webhook's serving certificate and the CRDs' CA bundle current. It runs
// on every replica: each serves the certificate of the Secret; only the elected one writes the
// Secret and the CRDs, so that replicas never race to replace each other's certificates.
type CertManager struct {
	opts    CertOptions
	client  client.WithWatch
	elected <-chan struct{}
	now     func() time.Time

	mu      sync.RWMutex
	current *tls.Certificate
	bundle  []byte
}

// NewCertManager returns a CertManager. c must not be a cached client: the operator may read
// only its own CRDs and Secret. elected closes when this replica may write (leader election).
func NewCertManager(c client.WithWatch, elected <-chan struct{}, opts CertOptions) (*CertManager, error) {
	if opts.Namespace == "" && opts.URL == "" {
		return nil, errors.New("webhook: the operator's namespace is unknown: set --operator-namespace or POD_NAMESPACE")
	}
	if opts.SecretName == "" && opts.CertDir == "" {
		return nil, errors.New("webhook: name a certificate Secret or a certificate directory")
	}
	if opts.Validity <= 0 {
		opts.Validity = 365 * 24 * time.Hour
	}
	if opts.CRDNames == nil {
		opts.CRDNames = CRDNames
	}
	if opts.ResyncInterval <= 0 {
		opts.ResyncInterval = time.Minute
	}
	return &CertManager{opts: opts, client: c, elected: elected, now: time.Now}, nil
}

// Hosts are the names the serving certificate must carry: the Service's DNS names, or the
// URL's host.
func (m *CertManager) Hosts() []string {
	if m.opts.URL != "" {
		if u, err := url.Parse(m.opts.URL); err == nil {
			return []string{u.Hostname()}
		}
	}
	svc, ns, domain := m.opts.ServiceName, m.opts.Namespace, cmp.Or(m.opts.DNSDomain, "cluster.local")
	return []string{svc + "." + ns + ".svc", svc + "." + ns + ".svc." + domain, svc + "." + ns, svc}
}

// GetCertificate hands the TLS server the current serving certificate.
func (m *CertManager) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.current == nil {
		return nil, errors.New("webhook: no serving certificate yet")
	}
	return m.current, nil
}

// Ready fails until a serving certificate is loaded.
func (m *CertManager) Ready() error {
	if m.opts.CertDir != "" {
		return nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.current == nil {
		return errors.New("no webhook serving certificate loaded yet")
	}
	return nil
}

// NeedLeaderElection is false: every replica serves the webhook.
func (*CertManager) NeedLeaderElection() bool { return false }

// Start keeps the certificate current until ctx ends: on every change of the Secret, when a
// certificate is due for renewal, and every ResyncInterval.
func (m *CertManager) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("webhook-certs")
	ctx = log.IntoContext(ctx, logger)
	events := m.watchSecret(ctx)
	for {
		next, err := m.Sync(ctx)
		if err != nil {
			logger.Error(err, "keep the webhook certificate current; retrying")
			next = m.now().Add(5 * time.Second)
		}
		wait := min(next.Sub(m.now()), m.opts.ResyncInterval)
		timer := time.NewTimer(max(wait, 100*time.Millisecond))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-events:
		case <-timer.C:
		case <-m.electedNow():
			// Just elected: look again at once, as the writer now.
		}
		timer.Stop()
	}
}

// electedNow is a channel that fires once when this replica becomes the writer.
func (m *CertManager) electedNow() <-chan struct{} {
	if m.isElected() {
		return nil
	}
	return m.elected
}

func (m *CertManager) isElected() bool {
	select {
	case <-m.elected:
		return true
	default:
		return false
	}
}

// watchSecret signals changes of the certificate Secret; it re-establishes the watch when the
// API server ends it.
func (m *CertManager) watchSecret(ctx context.Context) <-chan struct{} {
	out := make(chan struct{}, 1)
	if m.opts.SecretName == "" {
		return out
	}
	go func() {
		for ctx.Err() == nil {
			w, err := m.client.Watch(ctx, &corev1.SecretList{}, client.InNamespace(m.opts.Namespace),
				client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", m.opts.SecretName)})
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(5 * time.Second):
				}
				continue
			}
			for ev := range w.ResultChan() {
				if ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted {
					select {
					case out <- struct{}{}:
					default:
					}
				}
			}
			w.Stop()
		}
	}()
	return out
}

// Sync loads the certificate, makes or renews it when this replica is the writer, and injects
// the CA bundle. It returns when to look again.
func (m *CertManager) Sync(ctx context.Context) (time.Time, error) {
	if m.opts.CertDir != "" {
		return m.syncFromDir(ctx)
	}
	now := m.now()
	var secret corev1.Secret
	exists := true
	err := m.client.Get(ctx, client.ObjectKey{Namespace: m.opts.Namespace, Name: m.opts.SecretName}, &secret)
	switch {
	case apierrors.IsNotFound(err):
		secret, exists = corev1.Secret{}, false
	case err != nil:
		return time.Time{}, fmt.Errorf("read Secret %s/%s: %w", m.opts.Namespace, m.opts.SecretName, err)
	}
	set := certSetFrom(secret.Data)
	external := exists && len(set.caKey) == 0
	if !external && m.isElected() {
		if reason, caRenew := set.problem(m.Hosts(), now); reason != "" {
			next, err := m.renew(ctx, &secret, exists, set, caRenew, now)
			if err != nil {
				return time.Time{}, fmt.Errorf("renew the webhook certificate (%s): %w", reason, err)
			}
			log.FromContext(ctx).Info("webhook certificate renewed", "reason", reason, "secret", m.opts.SecretName)
			set = next
		}
	}
	if len(set.serving.certPEM) == 0 {
		// Not made yet; the elected replica will, and the watch will tell.
		return now.Add(m.opts.ResyncInterval), nil
	}
	renewAt, err := m.load(set.serving, set.caBundle)
	if err != nil {
		return time.Time{}, err
	}
	if m.isElected() {
		if err := m.inject(ctx, set.caBundle); err != nil {
			return time.Time{}, err
		}
	}
	return renewAt, nil
}

// renew writes a renewed certificate set. The CRDs learn the new CA bundle (which still holds
// the previous CA) before any replica can load a certificate signed by the new CA.
func (m *CertManager) renew(ctx context.Context, secret *corev1.Secret, exists bool, set certSet, caRenew bool, now time.Time) (certSet, error) {
	// Certificates in use by other replicas stay trusted during the switch.
	m.mu.RLock()
	inUse := m.bundle
	m.mu.RUnlock()
	if len(set.caBundle) == 0 {
		set.caBundle = inUse
	}
	next, err := set.renew(m.Hosts(), caRenew, now, m.opts.Validity)
	if err != nil {
		return certSet{}, err
	}
	if err := m.inject(ctx, next.caBundle); err != nil {
		return certSet{}, err
	}
	if !exists {
		secret.Name, secret.Namespace = m.opts.SecretName, m.opts.Namespace
		secret.Type = corev1.SecretTypeTLS
		secret.Labels = map[string]string{"app.kubernetes.io/managed-by": "redis-operator", "app.kubernetes.io/component": "webhook"}
		if err := m.ownByService(ctx, secret); err != nil {
			return certSet{}, err
		}
		secret.Data = next.data()
		if err := m.client.Create(ctx, secret); err != nil {
			return certSet{}, fmt.Errorf("create Secret %s/%s: %w", secret.Namespace, secret.Name, err)
		}
		return next, nil
	}
	secret.Data = next.data()
	if err := m.client.Update(ctx, secret); err != nil {
		return certSet{}, fmt.Errorf("update Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return next, nil
}

// ownByService makes the webhook Service the owner of the certificate Secret, so that removing
// the installation (kubectl delete -k, helm uninstall) removes the Secret with it.
func (m *CertManager) ownByService(ctx context.Context, secret *corev1.Secret) error {
	if m.opts.URL != "" {
		return nil
	}
	var svc corev1.Service
	err := m.client.Get(ctx, client.ObjectKey{Namespace: m.opts.Namespace, Name: m.opts.ServiceName}, &svc)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the webhook Service %s/%s: %w", m.opts.Namespace, m.opts.ServiceName, err)
	}
	secret.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID}}
	return nil
}

// load makes a serving certificate the one served; it returns when it is due for renewal.
func (m *CertManager) load(serving keyPair, bundle []byte) (time.Time, error) {
	pair, err := tls.X509KeyPair(serving.certPEM, serving.keyPEM)
	if err != nil {
		return time.Time{}, fmt.Errorf("load the webhook serving certificate: %w", err)
	}
	cert, _, err := parsePair(serving)
	if err != nil {
		return time.Time{}, err
	}
	m.mu.Lock()
	m.current, m.bundle = &pair, bundle
	m.mu.Unlock()
	return renewalTime(cert), nil
}

func (m *CertManager) syncFromDir(ctx context.Context) (time.Time, error) {
	next := m.now().Add(m.opts.ResyncInterval)
	if !m.isElected() {
		return next, nil
	}
	ca, err := os.ReadFile(filepath.Join(m.opts.CertDir, keyCACert))
	if errors.Is(err, os.ErrNotExist) {
		return next, nil // the CA bundle is injected by whoever issued the certificate
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read the webhook CA: %w", err)
	}
	return next, m.inject(ctx, ca)
}

// inject sets the conversion stanza of each CRD: the webhook, reached through the Service (or
// the URL), trusted through bundle. Nothing is written when it is already so.
func (m *CertManager) inject(ctx context.Context, bundle []byte) error {
	want := m.conversion(bundle)
	for _, name := range m.opts.CRDNames {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := m.client.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
			return fmt.Errorf("read CRD %s: %w", name, err)
		}
		if conversionEqual(crd.Spec.Conversion, want) {
			continue
		}
		patch := client.MergeFrom(crd.DeepCopy())
		crd.Spec.Conversion = want.DeepCopy()
		if err := m.client.Patch(ctx, &crd, patch); err != nil {
			return fmt.Errorf("set the conversion webhook of CRD %s: %w", name, err)
		}
		log.FromContext(ctx).Info("conversion webhook set", "crd", name)
	}
	return nil
}

func (m *CertManager) conversion(bundle []byte) *apiextensionsv1.CustomResourceConversion {
	cc := &apiextensionsv1.WebhookClientConfig{CABundle: bundle}
	if m.opts.URL != "" {
		cc.URL = &m.opts.URL
	} else {
		path := ConvertPath
		cc.Service = &apiextensionsv1.ServiceReference{Namespace: m.opts.Namespace, Name: m.opts.ServiceName, Path: &path, Port: &m.opts.ServicePort}
	}
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook:  &apiextensionsv1.WebhookConversion{ClientConfig: cc, ConversionReviewVersions: []string{"v1"}},
	}
}

func conversionEqual(got, want *apiextensionsv1.CustomResourceConversion) bool {
	if got == nil || got.Strategy != want.Strategy || got.Webhook == nil || got.Webhook.ClientConfig == nil {
		return false
	}
	g, w := got.Webhook.ClientConfig, want.Webhook.ClientConfig
	if string(g.CABundle) != string(w.CABundle) || (g.URL == nil) != (w.URL == nil) || (g.URL != nil && *g.URL != *w.URL) {
		return false
	}
	if (g.Service == nil) != (w.Service == nil) {
		return false
	}
	if g.Service != nil {
		gs, ws := g.Service, w.Service
		if gs.Namespace != ws.Namespace || gs.Name != ws.Name || derefOr(gs.Path, "") != derefOr(ws.Path, "") || derefOr(gs.Port, 443) != derefOr(ws.Port, 443) {
			return false
		}
	}
	return len(got.Webhook.ConversionReviewVersions) > 0 && got.Webhook.ConversionReviewVersions[0] == "v1"
}

func derefOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
