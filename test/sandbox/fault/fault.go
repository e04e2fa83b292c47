// Package fault talks to a running sandbox daemon over its control socket: it reads the
// sandbox's status and injects faults (crash a container, stop and start a virtual node,
// cut a pod off the network and heal it, restart every pod of a workload at once). The
// `sandbox` CLI and the e2e tests both use it.
package fault

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Client is a client of one sandbox daemon.
type Client struct {
	Socket string
	http   *http.Client
}

// New returns a client for the daemon listening on socket.
func New(socket string) *Client {
	return &Client{Socket: socket, http: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}}
}

// Node is the state of one virtual node.
type Node struct {
	Name    string `json:"name"`
	Zone    string `json:"zone"`
	Running bool   `json:"running"`
}

// Pod is a pod sandbox on a running node.
type Pod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node"`
	IP        string `json:"ip"`
	NetNS     string `json:"netns"`
	Cut       bool   `json:"cut"`
}

// Status describes a sandbox.
type Status struct {
	Ready        bool           `json:"ready"`
	Error        string         `json:"error,omitempty"`
	Slot         int            `json:"slot"`
	Dir          string         `json:"dir"`
	Kubeconfig   string         `json:"kubeconfig"`
	APIServer    string         `json:"apiServer"`
	PodCIDR      string         `json:"podCIDR"`
	ServiceCIDR  string         `json:"serviceCIDR"`
	Gateway      string         `json:"gateway"`
	Bridge       string         `json:"bridge"`
	Pid          int            `json:"pid"`
	Processes    map[string]int `json:"processes,omitempty"`
	StartSeconds float64        `json:"startSeconds"`
	// Registry is the host:port of the sandbox's OCI registry; empty when it runs none.
	Registry string `json:"registry,omitempty"`
	// VolumeRefreshSeconds is how often pods' Secret and ConfigMap volumes are re-rendered.
	VolumeRefreshSeconds float64 `json:"volumeRefreshSeconds"`
	Nodes                []Node  `json:"nodes"`
	Pods                 []Pod   `json:"pods"`
}

// PodRef names a pod (and optionally one of its containers).
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Container string `json:"container,omitempty"`
}

// WorkloadRef names a workload: kind is statefulset, deployment, replicaset or daemonset.
type WorkloadRef struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
}

// Status returns the sandbox's status.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var s Status
	if err := c.call(ctx, http.MethodGet, "/status", nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// CrashContainer kills the container with SIGKILL; its restart policy then acts. An empty
// container means the pod's first container.
func (c *Client) CrashContainer(ctx context.Context, namespace, pod, container string) error {
	return c.call(ctx, http.MethodPost, "/crash-container", PodRef{Namespace: namespace, Name: pod, Container: container}, nil)
}

// StopNode kills every process of the node's pods and stops its heartbeats; the node goes
// NotReady after the node-monitor grace period.
func (c *Client) StopNode(ctx context.Context, node string) error {
	return c.call(ctx, http.MethodPost, "/stop-node", Node{Name: node}, nil)
}

// StartNode starts a stopped node again; its pods restart with new IPs.
func (c *Client) StartNode(ctx context.Context, node string) error {
	return c.call(ctx, http.MethodPost, "/start-node", Node{Name: node}, nil)
}

// Cut takes the pod off the network: nothing reaches it and it reaches nothing.
func (c *Client) Cut(ctx context.Context, namespace, pod string) error {
	return c.call(ctx, http.MethodPost, "/cut", PodRef{Namespace: namespace, Name: pod}, nil)
}

// Heal puts a cut pod back on the network.
func (c *Client) Heal(ctx context.Context, namespace, pod string) error {
	return c.call(ctx, http.MethodPost, "/heal", PodRef{Namespace: namespace, Name: pod}, nil)
}

// RestartWorkload deletes every pod of the workload at once (with their grace periods); the
// workload's controller recreates them, with new IPs.
func (c *Client) RestartWorkload(ctx context.Context, namespace, kind, name string) ([]string, error) {
	var pods []string
	err := c.call(ctx, http.MethodPost, "/restart-workload", WorkloadRef{Namespace: namespace, Kind: kind, Name: name}, &pods)
	return pods, err
}

// Shutdown asks the daemon to stop the sandbox.
func (c *Client) Shutdown(ctx context.Context) error {
	return c.call(ctx, http.MethodPost, "/shutdown", nil, nil)
}

func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://sandbox"+path, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("sandbox daemon at %s: %w", c.Socket, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s", method, path, strings.TrimSpace(string(b)))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
