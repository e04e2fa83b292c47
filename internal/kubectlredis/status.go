package kubectlredis

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
)

// Plugin holds the clients of one kubectl-redis invocation.
type Plugin struct {
	Config    *rest.Config
	Kube      kubernetes.Interface
	Client    client.Client
	Namespace string
	Out       io.Writer
	// Now is the clock, time.Now when nil.
	Now func() time.Time
	// PollInterval is how often backup --wait reads the backup; 2s when zero.
	PollInterval time.Duration
	// dial reaches Redis on a pod; nil is through a port-forward (dialPod). Tests give
	// another.
	dial func(ctx context.Context, res *resource, pod *corev1.Pod) (redisConn, error)
}

// PodStatus is what one pod says of itself.
type PodStatus struct {
	Pod, Node, IP string
	Ready         bool
	Role          string // master, slave, sentinel; "?" when Redis did not answer
	Master        string // the pod (or address) a replica follows
	Slots         []redis.SlotRange
	Keys          int64
	Memory        string
	Offset        int64
	Lag           int64 // bytes behind the master; -1 when unknown
	Link          string
	Error         string
	masterIP      string
	masterPort    int
}

// Status prints, per pod, its role, the master it follows, its slots, keys, memory,
// replication offset and lag, link state and node; then the resource's conditions and its
// last events; output json or yaml prints them as one document instead.
func (p Plugin) Status(ctx context.Context, name, kind, output string) error {
	res, err := findResource(ctx, p.Client, p.Namespace, name, kind)
	if err != nil {
		return err
	}
	pods, err := p.podsOf(ctx, res)
	if err != nil {
		return err
	}
	statuses := make([]PodStatus, 0, len(pods))
	for i := range pods {
		statuses = append(statuses, p.podStatus(ctx, res, &pods[i]))
	}
	resolveMasters(statuses)
	events, err := p.Kube.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.name": name, "involvedObject.kind": res.kind,
	}.String()})
	if err != nil {
		return fmt.Errorf("list events: %w", err)
	}
	if output == "json" || output == "yaml" {
		return writeDocument(p.Out, statusDocument(res, statuses, events.Items), output)
	}
	return Render(p.Out, res.kind, name, res.state, res.reason, statuses, res.conditions, events.Items)
}

// StatusDocument is what -o json|yaml prints: the table's content with stable field names.
type StatusDocument struct {
	Kind       string             `json:"kind"`
	Namespace  string             `json:"namespace"`
	Name       string             `json:"name"`
	State      string             `json:"state,omitempty"`
	Reason     string             `json:"reason,omitempty"`
	Pods       []PodDocument      `json:"pods"`
	Conditions []metav1.Condition `json:"conditions"`
	Events     []EventDocument    `json:"events"`
}

// PodDocument is one pod of a StatusDocument; Lag is absent when unknown.
type PodDocument struct {
	Pod    string   `json:"pod"`
	Ready  bool     `json:"ready"`
	Role   string   `json:"role"`
	Master string   `json:"master,omitempty"`
	Slots  []string `json:"slots,omitempty"`
	Keys   int64    `json:"keys"`
	Memory string   `json:"memory,omitempty"`
	Offset int64    `json:"offset"`
	Lag    *int64   `json:"lag,omitempty"`
	Link   string   `json:"link,omitempty"`
	Node   string   `json:"node,omitempty"`
	IP     string   `json:"ip,omitempty"`
	Error  string   `json:"error,omitempty"`
}

// EventDocument is one event of a StatusDocument.
type EventDocument struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Count   int32     `json:"count,omitempty"`
}

func statusDocument(res *resource, pods []PodStatus, events []corev1.Event) StatusDocument {
	doc := StatusDocument{Kind: res.kind, Namespace: res.obj.GetNamespace(), Name: res.obj.GetName(), State: res.state,
		Reason: res.reason, Pods: []PodDocument{}, Conditions: res.conditions, Events: []EventDocument{}}
	if doc.Conditions == nil {
		doc.Conditions = []metav1.Condition{}
	}
	for _, p := range pods {
		d := PodDocument{Pod: p.Pod, Ready: p.Ready, Role: p.Role, Master: p.Master, Keys: p.Keys, Memory: p.Memory,
			Offset: p.Offset, Link: p.Link, Node: p.Node, IP: p.IP, Error: p.Error}
		if p.Lag >= 0 {
			d.Lag = &p.Lag
		}
		for _, r := range p.Slots {
			d.Slots = append(d.Slots, r.String())
		}
		doc.Pods = append(doc.Pods, d)
	}
	sort.SliceStable(events, func(i, j int) bool { return eventTime(events[i]).Before(eventTime(events[j])) })
	for _, e := range events {
		doc.Events = append(doc.Events, EventDocument{Time: eventTime(e), Type: e.Type, Reason: e.Reason, Message: e.Message, Count: e.Count})
	}
	return doc
}

func (p Plugin) podsOf(ctx context.Context, res *resource) ([]corev1.Pod, error) {
	selector := labels.SelectorFromSet(labels.Set{builder.LabelInstance: res.obj.GetName()}).String()
	list, err := p.Kube.CoreV1().Pods(p.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	var out []corev1.Pod
	for _, pod := range list.Items {
		if slices.Contains(res.setupTypes, pod.Labels[builder.LabelSetupType]) {
			out = append(out, pod)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (p Plugin) password(ctx context.Context, ref *v1beta2.ExistingPasswordSecret) (string, error) {
	if ref == nil || ref.Name == nil || ref.Key == nil {
		return "", nil
	}
	s, err := p.Kube.CoreV1().Secrets(p.Namespace).Get(ctx, *ref.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("password Secret %s: %w", *ref.Name, err)
	}
	return builder.SecretPassword(s.Data[*ref.Key]), nil // as the operator reads it
}

// tlsConfig is how to reach the resource's pods when they serve TLS only: the chain verified
// against the CA bundle of its TLS Secret, as the operator does (nil without TLS).
func (p Plugin) tlsConfig(ctx context.Context, spec *v1beta2.TLSConfig) (*tls.Config, error) {
	if spec == nil {
		return nil, nil
	}
	name := spec.Secret.SecretName
	s, err := p.Kube.CoreV1().Secrets(p.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("TLS Secret %s: %w", name, err)
	}
	ca, cert, key := builder.TLSKeys(spec)
	cfg, err := redis.NewTLSConfig(redis.TLSMaterial{CA: s.Data[ca], Cert: s.Data[cert], Key: s.Data[key]})
	if err != nil {
		return nil, fmt.Errorf("TLS Secret %s: %w", name, err)
	}
	return cfg, nil
}

func (p Plugin) podStatus(ctx context.Context, res *resource, pod *corev1.Pod) PodStatus {
	st := PodStatus{Pod: pod.Name, Node: pod.Spec.NodeName, IP: pod.Status.PodIP, Ready: podReady(pod), Role: "?", Lag: -1}
	if pod.Status.Phase != corev1.PodRunning {
		st.Error = "pod " + string(pod.Status.Phase)
		return st
	}
	sentinel := pod.Labels[builder.LabelSetupType] == builder.SetupSentinel
	port, secret := builder.DefaultRedisPort, res.secret
	if sentinel {
		port = builder.DefaultSentinelPort
		if res.kind == "RedisReplication" {
			secret = res.sentinelSecret
		}
	}
	password, err := p.password(ctx, secret)
	if err != nil {
		st.Error = err.Error()
		return st
	}
	tlsConfig, err := p.tlsConfig(ctx, res.tls)
	if err != nil {
		st.Error = err.Error()
		return st
	}
	local, stop, err := forwarder{config: p.Config, kube: p.Kube}.forward(ctx, pod.Namespace, pod.Name, port)
	if err != nil {
		st.Error = err.Error()
		return st
	}
	defer stop()
	pool := redis.NewPool(redis.Options{})
	defer func() { _ = pool.Close() }()
	auth := redis.Auth{Password: password}
	if password != "" && !sentinel {
		// An ACL file may turn the default user off: the operator's own user then logs in.
		auth.OrUsername = redis.OperatorUser
	}
	c, err := pool.Client(redis.NewEndpoint("127.0.0.1", local, auth).WithTLS(tlsConfig))
	if err != nil {
		st.Error = err.Error()
		return st
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := fillFromRedis(cctx, c, res.kind == "RedisCluster", sentinel, &st); err != nil {
		st.Error = err.Error()
	}
	return st
}

// fillFromRedis asks ROLE, INFO and, in a cluster, CLUSTER NODES.
func fillFromRedis(ctx context.Context, c *redis.Client, cluster, sentinel bool, st *PodStatus) error {
	role, err := c.Role(ctx)
	if err != nil {
		return err
	}
	st.Role = string(role.Kind)
	if sentinel {
		st.Master = strings.Join(role.MasterNames, ",")
		return nil
	}
	st.Offset = role.ReplicationOffset
	switch role.Kind {
	case redis.RoleSlave:
		st.masterIP, st.masterPort, st.Link = role.MasterIP, role.MasterPort, role.ReplicationState
	case redis.RoleMaster:
		st.Lag = 0
		st.Link = fmt.Sprintf("%d replicas", len(role.Replicas))
	}
	info, err := c.Info(ctx, "")
	if err != nil {
		return err
	}
	st.Memory = info["used_memory_human"]
	if off, err := strconv.ParseInt(info["master_repl_offset"], 10, 64); err == nil {
		st.Offset = off
	}
	for k, v := range info {
		if strings.HasPrefix(k, "db") {
			st.Keys += keysOf(v)
		}
	}
	if cluster {
		topo, err := c.ClusterNodes(ctx)
		if err != nil {
			return err
		}
		if me, ok := topo.Myself(); ok {
			st.Slots = me.Slots
		}
	}
	return nil
}

// keysOf reads keys=N from an INFO keyspace value "keys=N,expires=M,avg_ttl=T".
func keysOf(v string) int64 {
	for _, f := range strings.Split(v, ",") {
		if n, ok := strings.CutPrefix(f, "keys="); ok {
			k, _ := strconv.ParseInt(n, 10, 64)
			return k
		}
	}
	return 0
}

// resolveMasters names the pod each replica follows and computes its lag from its master's
// offset.
func resolveMasters(sts []PodStatus) {
	byIP := map[string]*PodStatus{}
	for i := range sts {
		byIP[sts[i].IP] = &sts[i]
	}
	for i := range sts {
		st := &sts[i]
		if st.masterIP == "" {
			continue
		}
		st.Master = net.JoinHostPort(st.masterIP, strconv.Itoa(st.masterPort))
		if m, ok := byIP[st.masterIP]; ok {
			st.Master = m.Pod
			if m.Role == string(redis.RoleMaster) {
				st.Lag = max(0, m.Offset-st.Offset)
			}
		}
	}
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Render prints the status; it is apart from the fetching so that tests can check it.
func Render(out io.Writer, kind, name, state, reason string, pods []PodStatus, conditions []metav1.Condition, events []corev1.Event) error {
	var b bytes.Buffer
	w := &b
	fmt.Fprintf(w, "%s %s", kind, name)
	if state != "" {
		fmt.Fprintf(w, ": %s", state)
		if reason != "" {
			fmt.Fprintf(w, " (%s)", reason)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "POD\tREADY\tROLE\tMASTER\tSLOTS\tKEYS\tMEMORY\tOFFSET\tLAG\tLINK\tNODE")
	for _, p := range pods {
		lag := "-"
		if p.Lag >= 0 {
			lag = strconv.FormatInt(p.Lag, 10)
		}
		slots := "-"
		if len(p.Slots) > 0 {
			parts := make([]string, 0, len(p.Slots))
			for _, r := range p.Slots {
				parts = append(parts, r.String())
			}
			slots = strings.Join(parts, ",")
		}
		_, _ = fmt.Fprintf(tw, "%s\t%t\t%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\n", p.Pod, p.Ready, p.Role, dash(p.Master), slots,
			p.Keys, dash(p.Memory), p.Offset, lag, dash(p.Link), dash(p.Node))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range pods {
		if p.Error != "" {
			fmt.Fprintf(w, "%s: %s\n", p.Pod, p.Error)
		}
	}
	fmt.Fprintln(w, "\nConditions:")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tMESSAGE")
	for _, c := range conditions {
		_, _ = fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nLast events:")
	sort.SliceStable(events, func(i, j int) bool { return eventTime(events[i]).Before(eventTime(events[j])) })
	if len(events) > lastEvents {
		events = events[len(events)-lastEvents:]
	}
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "  AGE\tTYPE\tREASON\tMESSAGE")
	for _, e := range events {
		_, _ = fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", age(eventTime(e)), e.Type, e.Reason, e.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := out.Write(b.Bytes())
	return err
}

const lastEvents = 10

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

func age(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return time.Since(t).Round(time.Second).String()
}
