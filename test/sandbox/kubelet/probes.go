package kubelet

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// lifecycle runs the postStart hook and the probes of one run of a container until ctx ends
// (the container exited or the pod stops).
func (c *container) lifecycle(ctx context.Context, spec *corev1.Container) {
	sb := c.sb
	if spec.Lifecycle != nil && spec.Lifecycle.PostStart != nil {
		if out, err := c.runHandler(ctx, spec.Lifecycle.PostStart, spec); err != nil {
			if ctx.Err() != nil {
				return
			}
			sb.event(corev1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed: %v %s", err, out)
			go c.stop(time.Now().Add(sb.gracePeriod()), "FailedPostStartHook")
			return
		}
	}
	if spec.StartupProbe != nil {
		if !c.probeLoop(ctx, spec, spec.StartupProbe, "Startup", true) {
			return
		}
	}
	c.markStarted()
	if spec.LivenessProbe != nil {
		go c.probeLoop(ctx, spec, spec.LivenessProbe, "Liveness", false)
	}
	if spec.ReadinessProbe != nil {
		c.probeLoop(ctx, spec, spec.ReadinessProbe, "Readiness", false)
		return
	}
	c.setReady(true)
}

func (c *container) markStarted() {
	c.sb.mu.Lock()
	c.started = true
	c.sb.mu.Unlock()
	c.startedOnce.Do(func() { close(c.startedCh) })
	c.sb.changed()
}

func (c *container) setReady(ready bool) {
	c.sb.mu.Lock()
	changed := c.ready != ready && c.proc != nil
	if c.proc != nil {
		c.ready = ready
	}
	c.sb.mu.Unlock()
	if changed {
		c.sb.changed()
	}
}

// probeLoop runs one probe with its thresholds. A startup probe returns true once it
// succeeds; liveness and startup failures restart the container; readiness results set the
// container's readiness.
func (c *container) probeLoop(ctx context.Context, spec *corev1.Container, probe *corev1.Probe, kind string, startup bool) bool {
	period := seconds(probe.PeriodSeconds, 10)
	successThreshold := max(probe.SuccessThreshold, 1)
	failureThreshold := max(probe.FailureThreshold, 1)
	if probe.InitialDelaySeconds > 0 && !sleepCtx(ctx, time.Duration(probe.InitialDelaySeconds)*time.Second) {
		return false
	}
	var successes, failures int32
	for {
		ok, out := c.probe(ctx, probe, spec)
		if ctx.Err() != nil {
			return false
		}
		if ok {
			successes++
			failures = 0
		} else {
			failures++
			successes = 0
			c.sb.event(corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", kind, strings.TrimSpace(out))
		}
		switch kind {
		case "Readiness":
			if successes >= successThreshold {
				c.setReady(true)
			} else if failures >= failureThreshold {
				c.setReady(false)
			}
		case "Startup", "Liveness":
			if ok && startup {
				return true
			}
			if failures >= failureThreshold {
				grace := c.sb.gracePeriod()
				if probe.TerminationGracePeriodSeconds != nil {
					grace = time.Duration(*probe.TerminationGracePeriodSeconds) * time.Second
				}
				c.sb.event(corev1.EventTypeNormal, "Killing", "Container %s failed %s probe, will be restarted", c.name, strings.ToLower(kind))
				go c.stop(time.Now().Add(grace), "Stopping container")
				return false
			}
		}
		if !sleepCtx(ctx, period) {
			return false
		}
	}
}

func seconds(v int32, def int) time.Duration {
	if v <= 0 {
		return time.Duration(def) * time.Second
	}
	return time.Duration(v) * time.Second
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// probe runs one probe attempt from the host, against the pod's IP (TCP, HTTP) or inside
// the container (exec).
func (c *container) probe(ctx context.Context, probe *corev1.Probe, spec *corev1.Container) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, seconds(probe.TimeoutSeconds, 1))
	defer cancel()
	h := probe.ProbeHandler
	switch {
	case h.Exec != nil:
		out, err := c.execCapture(ctx, h.Exec.Command)
		if err != nil {
			if ctx.Err() != nil {
				return false, fmt.Sprintf("command timed out after %s: %s", seconds(probe.TimeoutSeconds, 1), out)
			}
			return false, fmt.Sprintf("%v: %s", err, out)
		}
		return true, out
	case h.TCPSocket != nil:
		addr, err := c.address(h.TCPSocket.Host, h.TCPSocket.Port, spec)
		if err != nil {
			return false, err.Error()
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return false, err.Error()
		}
		_ = conn.Close()
		return true, ""
	case h.HTTPGet != nil:
		return c.httpGet(ctx, h.HTTPGet, spec)
	case h.GRPC != nil:
		return false, "gRPC probes are not supported by the sandbox"
	}
	return false, "probe has no handler"
}

func (c *container) address(host string, port intstr.IntOrString, spec *corev1.Container) (string, error) {
	if host == "" {
		host = c.sb.podIP()
	}
	p, err := resolvePort(port, spec)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

func resolvePort(port intstr.IntOrString, spec *corev1.Container) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, cp := range spec.Ports {
		if cp.Name == port.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("container %s has no port named %q", spec.Name, port.StrVal)
}

func (c *container) httpGet(ctx context.Context, g *corev1.HTTPGetAction, spec *corev1.Container) (bool, string) {
	addr, err := c.address(g.Host, g.Port, spec)
	if err != nil {
		return false, err.Error()
	}
	scheme := "http"
	if g.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+path, nil)
	if err != nil {
		return false, err.Error()
	}
	req.Header.Set("User-Agent", "kube-probe/1.37")
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // the kubelet does not verify probe certificates either
		DisableKeepAlives: true,
	}}
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 10*1024))
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return true, ""
	}
	return false, fmt.Sprintf("HTTP probe failed with statuscode: %d %s", resp.StatusCode, bytes.TrimSpace(body))
}

// runHandler runs a lifecycle hook (exec, httpGet or sleep).
func (c *container) runHandler(ctx context.Context, h *corev1.LifecycleHandler, spec *corev1.Container) (string, error) {
	switch {
	case h.Exec != nil:
		return c.execCapture(ctx, h.Exec.Command)
	case h.HTTPGet != nil:
		ok, out := c.httpGet(ctx, h.HTTPGet, spec)
		if !ok {
			return out, errors.New("http hook failed")
		}
		return out, nil
	case h.Sleep != nil:
		sleepCtx(ctx, time.Duration(h.Sleep.Seconds)*time.Second)
		return "", nil
	case h.TCPSocket != nil:
		return "", errors.New("tcpSocket lifecycle hooks are deprecated and not supported")
	}
	return "", errors.New("hook has no handler")
}
