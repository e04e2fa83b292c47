// Package registry runs a real OCI registry for the sandbox: distribution's registry (the
// one behind most self-hosted registries), in-process, on a loopback port. Releases push
// their image and charts to it, and the sandbox's kubelets pull from it, so that a test runs
// what a release ships rather than the binary of the working tree.
package registry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
	"github.com/sirupsen/logrus"
)

// Options configure a registry.
type Options struct {
	// Dir holds the registry's blobs and manifests; empty keeps them in memory, lost when
	// the registry stops.
	Dir string
	// Addr is the loopback address to listen on; empty picks a free port on 127.0.0.1.
	Addr string
	// Log receives the registry's own log; nil discards it.
	Log io.Writer
}

// Registry is a running registry.
type Registry struct {
	// Addr is its host:port, the registry part of the references it serves.
	Addr string

	srv  *http.Server
	app  *handlers.App
	done chan error
}

// logMu serializes changes to logrus's standard logger, the only one distribution logs to.
var logMu sync.Mutex

// Start starts a registry and returns once it accepts connections.
func Start(ctx context.Context, opts Options) (*Registry, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("registry address %q: %w", addr, err)
	}
	// The registry has no authentication: it must not be reachable from anywhere else.
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("registry address %q is not on loopback", addr)
	}
	setLog(opts.Log)
	cfg, err := config(opts.Dir)
	if err != nil {
		return nil, err
	}
	app, err := newApp(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		_ = app.Shutdown()
		return nil, fmt.Errorf("registry listen on %s: %w", addr, err)
	}
	r := &Registry{
		Addr: ln.Addr().String(),
		srv:  &http.Server{Handler: app, ReadHeaderTimeout: 30 * time.Second},
		app:  app,
		done: make(chan error, 1),
	}
	go func() { r.done <- r.srv.Serve(ln) }()
	return r, nil
}

// config is the registry's configuration: storage in dir (or memory; the blank imports
// register those two drivers), no upload purging
// (the sandbox's registry lives for hours, not weeks), deletes allowed so that tests can
// make a tag unknown again.
func config(dir string) (*configuration.Configuration, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("registry secret: %w", err)
	}
	cfg := &configuration.Configuration{}
	cfg.HTTP.Secret = string(secret)
	cfg.Storage = configuration.Storage{
		"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}},
		"delete":      configuration.Parameters{"enabled": true},
	}
	if dir == "" {
		cfg.Storage["inmemory"] = configuration.Parameters{}
	} else {
		cfg.Storage["filesystem"] = configuration.Parameters{"rootdirectory": dir}
	}
	return cfg, nil
}

// newApp builds distribution's handler, which panics on a configuration it cannot use.
func newApp(ctx context.Context, cfg *configuration.Configuration) (app *handlers.App, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("registry configuration: %v", p)
		}
	}()
	return handlers.NewApp(ctx, cfg), nil
}

// setLog points distribution's logger (logrus's standard logger: it has no other) at w.
func setLog(w io.Writer) {
	logMu.Lock()
	defer logMu.Unlock()
	if w == nil {
		w = io.Discard
	}
	logrus.SetOutput(w)
}

// stopGrace bounds the wait for requests in flight: Shutdown counts a connection a client
// opened but never used (Go's transport dials ahead) as busy for 5 s, and a request on
// loopback ends well within this.
const stopGrace = time.Second

// Stop stops serving, waits a moment for the requests in flight, and closes the rest.
func (r *Registry) Stop(ctx context.Context) error {
	graceCtx, cancel := context.WithTimeout(ctx, stopGrace)
	err := r.srv.Shutdown(graceCtx)
	cancel()
	if errors.Is(err, context.DeadlineExceeded) {
		err = r.srv.Close()
	}
	if serveErr := <-r.done; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
		err = serveErr
	}
	if shutErr := r.app.Shutdown(); shutErr != nil && err == nil {
		err = shutErr
	}
	if err != nil {
		return fmt.Errorf("registry %s stop: %w", r.Addr, err)
	}
	return nil
}
