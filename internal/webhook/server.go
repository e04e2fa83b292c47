package webhook

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

// Options configure the conversion webhook.
type Options struct {
	CertOptions
	// Port the webhook server listens on.
	Port int
}

// Webhook is the conversion webhook: its HTTPS server and the manager of its certificate.
type Webhook struct {
	certs  *CertManager
	server webhook.Server
}

// New prepares the conversion webhook. Hand Server to the manager's options, then call AddTo.
func New(cfg *rest.Config, opts Options) (*Webhook, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("register built-in kinds: %w", err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("register CRD kinds: %w", err)
	}
	// Uncached: the operator may read only its own CRDs and Secret, not list them all.
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("create the webhook's client: %w", err)
	}
	certs, err := NewCertManager(c, nil, opts.CertOptions)
	if err != nil {
		return nil, err
	}
	serverOpts := webhook.Options{
		Port: opts.Port,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) {
			// HTTP/1.1 only: the API server needs no more, and HTTP/2 adds attack surface.
			c.NextProtos = []string{"http/1.1"}
			c.MinVersion = tls.VersionTLS12
		}},
	}
	if opts.CertDir != "" {
		serverOpts.CertDir = opts.CertDir
	} else {
		serverOpts.TLSOpts = append(serverOpts.TLSOpts, func(c *tls.Config) { c.GetCertificate = certs.GetCertificate })
	}
	return &Webhook{certs: certs, server: webhook.NewServer(serverOpts)}, nil
}

// Server is the HTTPS server to give the manager (ctrl.Options.WebhookServer).
func (w *Webhook) Server() webhook.Server { return w.server }

// Certs is the certificate manager.
func (w *Webhook) Certs() *CertManager { return w.certs }

// AddTo serves conversion on mgr's webhook server for the kinds of mgr's scheme, runs the
// certificate manager (on every replica; it writes only once mgr is elected) and adds a
// readiness check that passes once the webhook can serve.
func (w *Webhook) AddTo(mgr manager.Manager) error {
	w.certs.elected = mgr.Elected()
	mgr.GetWebhookServer().Register(ConvertPath, conversion.NewWebhookHandler(mgr.GetScheme(), mgr.GetConverterRegistry()))
	if err := mgr.Add(w.certs); err != nil {
		return fmt.Errorf("add the webhook certificate manager: %w", err)
	}
	started := mgr.GetWebhookServer().StartedChecker()
	if err := mgr.AddReadyzCheck("webhook", func(req *http.Request) error {
		return errors.Join(w.certs.Ready(), started(req))
	}); err != nil {
		return fmt.Errorf("add the webhook readiness check: %w", err)
	}
	return nil
}

// URL is the URL the webhook is called at when set by CertOptions.URL, "" otherwise.
func (w *Webhook) URL() string { return w.certs.opts.URL }
