package framework

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/rediskube/redis-operator/test/sandbox/manifests"
)

// Namespace creates a namespace for the test; when the test fails its events, pod
// statuses and logs are written to the test log, and the namespace is deleted at the end.
func (s *Sandbox) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	name := prefix + "-" + rand.String(5)
	ctx := context.Background()
	_, err := s.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(s.Dump(name))
		}
		_ = s.Kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	// The service account admission plugin rejects pods until "default" exists.
	s.WaitFor(t, name, "service account default/"+name, 30*time.Second, func(ctx context.Context) (bool, string, error) {
		_, err := s.Kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "not created yet", nil
		}
		return err == nil, "", err
	})
	return name
}

// Apply applies YAML (several documents allowed) in namespace ns with server-side apply.
func (s *Sandbox) Apply(t testing.TB, ns, yaml string) {
	t.Helper()
	objs, err := manifests.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("parse manifest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Applier.Apply(ctx, objs, ns); err != nil {
		t.Fatalf("apply: %v", err)
	}
}

// Condition reports whether what a test waits for holds, and if not, what it sees instead.
type Condition func(ctx context.Context) (done bool, seen string, err error)

// WaitFor polls cond until it holds; on timeout it fails the test with what it last saw and
// the namespace's events, pod statuses and logs (ns may be empty).
func (s *Sandbox) WaitFor(t testing.TB, ns, what string, timeout time.Duration, cond Condition) {
	t.Helper()
	if err := s.Poll(what, timeout, cond); err != nil {
		if ns != "" {
			t.Log(s.Dump(ns))
		}
		t.Fatal(err)
	}
}

// Poll is WaitFor without a test: it returns an error naming what and the last state seen.
func (s *Sandbox) Poll(what string, timeout time.Duration, cond Condition) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var seen string
	var lastErr error
	for {
		done, st, err := cond(ctx)
		if err == nil && done {
			return nil
		}
		seen, lastErr = st, err
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("timed out after %s waiting for %s", timeout, what)
			if seen != "" {
				msg += "; last seen: " + seen
			}
			if lastErr != nil {
				msg += "; last error: " + lastErr.Error()
			}
			return fmt.Errorf("%s", msg)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// PodReady reports whether the pod's Ready condition is true.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// DescribePod summarises a pod's phase, readiness and container states in one line.
func DescribePod(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s phase=%s ready=%t ip=%s node=%s", p.Name, p.Status.Phase, PodReady(p), p.Status.PodIP, p.Spec.NodeName)
	for _, c := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		fmt.Fprintf(&b, " [%s restarts=%d ready=%t %s]", c.Name, c.RestartCount, c.Ready, describeState(c.State))
	}
	if p.DeletionTimestamp != nil {
		b.WriteString(" (terminating)")
	}
	return b.String()
}

func describeState(st corev1.ContainerState) string {
	switch {
	case st.Running != nil:
		return "running"
	case st.Waiting != nil:
		return "waiting:" + st.Waiting.Reason + " " + st.Waiting.Message
	case st.Terminated != nil:
		return fmt.Sprintf("terminated:%s exit=%d %s", st.Terminated.Reason, st.Terminated.ExitCode, st.Terminated.Message)
	}
	return "unknown"
}

// WaitPodReady waits for pod ns/name to be Ready and returns it.
func (s *Sandbox) WaitPodReady(t testing.TB, ns, name string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	s.WaitFor(t, ns, "pod "+ns+"/"+name+" to be Ready", timeout, func(ctx context.Context) (bool, string, error) {
		p, err := s.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "not found", nil
		}
		if err != nil {
			return false, "", err
		}
		pod = p
		return PodReady(p) && p.DeletionTimestamp == nil, DescribePod(p), nil
	})
	return pod
}

// WaitPodsReady waits until count pods match selector in ns and all are Ready; it returns
// them sorted by name.
func (s *Sandbox) WaitPodsReady(t testing.TB, ns, selector string, count int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	s.WaitFor(t, ns, fmt.Sprintf("%d ready pods %q in %s", count, selector, ns), timeout, func(ctx context.Context) (bool, string, error) {
		list, err := s.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, "", err
		}
		pods = list.Items
		sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
		var seen []string
		ready := 0
		for i := range pods {
			seen = append(seen, DescribePod(&pods[i]))
			if PodReady(&pods[i]) && pods[i].DeletionTimestamp == nil {
				ready++
			}
		}
		return ready == count && len(pods) == count, strings.Join(seen, "; "), nil
	})
	return pods
}

// Redis opens a client to port 6379 of the pod's IP (reached through the sandbox bridge).
func (s *Sandbox) Redis(t testing.TB, pod *corev1.Pod) *redis.Client {
	t.Helper()
	return s.RedisAt(t, pod.Status.PodIP, 6379)
}

// RedisAt opens a client to ip:port; the client is closed when the test ends.
func (s *Sandbox) RedisAt(t testing.TB, ip string, port int) *redis.Client {
	t.Helper()
	return s.RedisWithPassword(t, ip, port, "")
}

// RedisWithPassword opens a client to ip:port that authenticates with password ("" for none).
func (s *Sandbox) RedisWithPassword(t testing.TB, ip string, port int, password string) *redis.Client {
	t.Helper()
	if ip == "" {
		t.Fatal("pod has no IP")
	}
	c := redis.NewClient(&redis.Options{
		Addr:         net.JoinHostPort(ip, strconv.Itoa(port)),
		Password:     password,
		DialTimeout:  2 * time.Second,
		ReadTimeout:  2 * time.Second,
		WriteTimeout: 2 * time.Second,
		MaxRetries:   -1,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Exec runs cmd in a container through the API server (as `kubectl exec` does) and returns
// its stdout, stderr and error; a non-zero exit status is an error whose ExitStatus() says it.
func (s *Sandbox) Exec(ctx context.Context, ns, pod, container string, cmd ...string) (string, string, error) {
	req := s.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	spdy, err := remotecommand.NewSPDYExecutor(s.Config, "POST", req.URL())
	if err != nil {
		return "", "", err
	}
	ws, err := remotecommand.NewWebSocketExecutor(s.Config, "GET", req.URL().String())
	if err != nil {
		return "", "", err
	}
	// Fall back to SPDY only when the WebSocket upgrade itself fails, as kubectl does: any other
	// error (a non-zero exit included) comes from a command that already ran, which must not
	// run a second time.
	exe, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return "", "", err
	}
	var stdout, stderr bytes.Buffer
	err = exe.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return stdout.String(), stderr.String(), err
}

// Logs returns a container's log through the API server (as `kubectl logs` does).
func (s *Sandbox) Logs(ctx context.Context, ns, pod, container string, previous bool) (string, error) {
	req := s.Kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: previous})
	rc, err := req.Stream(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(rc)
	return string(b), err
}

// Dump describes what happened in namespace ns: events, pod statuses, the last lines of
// every container's log, and the sandbox's view of its pods.
func (s *Sandbox) Dump(ns string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "==== namespace %s ====\n", ns)
	if evs, err := s.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		sort.Slice(evs.Items, func(i, j int) bool { return eventTime(&evs.Items[i]).Before(eventTime(&evs.Items[j])) })
		b.WriteString("-- events --\n")
		for _, e := range evs.Items {
			fmt.Fprintf(&b, "%s %s %s/%s %s: %s (x%d)\n", eventTime(&e).Format("15:04:05.000"), e.Type,
				strings.ToLower(e.InvolvedObject.Kind), e.InvolvedObject.Name, e.Reason, e.Message, max(e.Count, 1))
		}
	}
	pods, err := s.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		b.WriteString("-- pods --\n")
		for i := range pods.Items {
			b.WriteString(DescribePod(&pods.Items[i]) + "\n")
		}
		for _, p := range pods.Items {
			for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
				for _, prev := range []bool{true, false} {
					logs, err := s.Logs(ctx, ns, p.Name, c.Name, prev)
					if err != nil || logs == "" {
						continue
					}
					lines := strings.Split(strings.TrimRight(logs, "\n"), "\n")
					if len(lines) > 80 {
						lines = lines[len(lines)-80:]
					}
					which := "current"
					if prev {
						which = "previous"
					}
					fmt.Fprintf(&b, "-- logs %s/%s (%s) --\n%s\n", p.Name, c.Name, which, strings.Join(lines, "\n"))
				}
			}
		}
	}
	if st, err := s.Fault.Status(ctx); err == nil {
		b.WriteString("-- sandbox --\n")
		for _, n := range st.Nodes {
			fmt.Fprintf(&b, "node %s running=%t\n", n.Name, n.Running)
		}
		for _, p := range st.Pods {
			if p.Namespace == ns {
				fmt.Fprintf(&b, "pod %s on %s ip=%s netns=%s cut=%t\n", p.Name, p.Node, p.IP, p.NetNS, p.Cut)
			}
		}
	}
	return b.String()
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// helmTimeout bounds one helm command (an install that waits included).
const helmTimeout = 5 * time.Minute

// Helm runs the repository's bin/helm against the sandbox, its cache, configuration and data
// kept in the sandbox's directory, and returns what it printed.
func (s *Sandbox) Helm(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), helmTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.Repo(), "bin", "helm"), append(args, "--kubeconfig", s.Inst.Kubeconfig())...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(s.Dir, "helm-cache"),
		"HELM_CONFIG_HOME="+filepath.Join(s.Dir, "helm-config"), "HELM_DATA_HOME="+filepath.Join(s.Dir, "helm-data"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// MustHelm runs Helm and fails the test when it fails.
func (s *Sandbox) MustHelm(t testing.TB, args ...string) string {
	t.Helper()
	out, err := s.Helm(args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}
