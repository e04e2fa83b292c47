package kubectlredis

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
)

// defaultOperatorNamespace is where config/default installs the operator.
const defaultOperatorNamespace = "redis-operator-system"

// defaultLogTail is how many of the operator's last log lines report searches.
const defaultLogTail = 10000

// redacted stands for every password in a report.
const redacted = "[REDACTED]"

// ReportOptions is where report writes, and where it finds the operator's log.
type ReportOptions struct {
	// Dir is the bundle's directory; "" is ./redis-report-NAME-TIME.
	Dir string
	// OperatorNamespace is where the operator's pods run; "" is defaultOperatorNamespace.
	OperatorNamespace string
	// Tail is how many of each operator pod's last log lines are searched; 0 is defaultLogTail.
	Tail int64
}

func checkReport(inv invocation) error {
	if !inv.set("tail") {
		return nil
	}
	if n, err := strconv.ParseInt(inv.value("tail"), 10, 64); err != nil || n < 1 {
		return fmt.Errorf("--tail %q: want a number of lines, at least 1", inv.value("tail"))
	}
	return nil
}

func reportOptions(inv invocation) ReportOptions {
	tail, _ := strconv.ParseInt(inv.value("tail"), 10, 64) // checked by checkReport
	return ReportOptions{Dir: inv.value("output"), OperatorNamespace: inv.value("operator-namespace"), Tail: tail}
}

// bundle is a report being written: each file goes through the redaction, and a part that
// fails is noted in errors.txt rather than ending the report.
type bundle struct {
	dir       string
	passwords []string
	errs      []string
}

func (b *bundle) fail(part string, err error) {
	b.errs = append(b.errs, part+": "+err.Error())
}

// write writes the file name (a path under the bundle), redacted.
func (b *bundle) write(name string, data []byte) {
	path := filepath.Join(b.dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		b.fail(name, err)
		return
	}
	if err := os.WriteFile(path, []byte(redact(string(data), b.passwords)), 0o600); err != nil {
		b.fail(name, err)
	}
}

func (b *bundle) writeYAML(name string, v any) {
	data, err := yaml.Marshal(v)
	if err != nil {
		b.fail(name, err)
		return
	}
	b.write(name, data)
}

// passwordLine finds the value of the redis.conf and sentinel.conf directives that hold a
// password, whatever else a file says.
var passwordLine = regexp.MustCompile(`(?i)\b(requirepass|masterauth|sentinel\s+auth-pass\s+\S+|auth-pass)([ \t]+)("[^"\n]*"|[^\s"]+)`)

// redact replaces each of the passwords, and the value of each password directive, by
// redacted.
func redact(text string, passwords []string) string {
	sorted := slices.Clone(passwords)
	slices.SortFunc(sorted, func(a, b string) int { return cmp.Compare(len(b), len(a)) }) // a longer one may hold a shorter
	for _, pw := range sorted {
		if pw != "" {
			text = strings.ReplaceAll(text, pw, redacted)
		}
	}
	return passwordLine.ReplaceAllString(text, "${1}${2}"+redacted)
}

// Report writes the support bundle of a resource and prints its directory.
func (p Plugin) Report(ctx context.Context, name, kind string, o ReportOptions) error {
	res, err := findResource(ctx, p.Client, p.Namespace, name, kind)
	if err != nil {
		return err
	}
	dir := o.Dir
	if dir == "" {
		dir = "redis-report-" + name + "-" + p.now().UTC().Format("20060102T150405Z")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("report directory: %w", err)
	}
	b := &bundle{dir: dir}
	b.passwords = p.knownPasswords(ctx, res, b)

	obj := res.obj.DeepCopyObject().(client.Object)
	obj.SetManagedFields(nil)
	b.writeYAML("resource.yaml", withType(obj, v1beta2.GroupVersion.String(), res.kind))

	owned := p.reportObjects(ctx, res, b)
	p.reportSecrets(ctx, res, b)
	p.reportEvents(ctx, owned, b)
	for i := range owned.pods {
		p.reportPod(ctx, res, &owned.pods[i], b)
	}
	p.reportOperatorLog(ctx, res, o, b)

	if len(b.errs) > 0 {
		b.write("errors.txt", []byte(strings.Join(b.errs, "\n")+"\n"))
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	summary := fmt.Sprintf("%s %s: report written to %s\n", res.kind, name, abs)
	if len(b.errs) > 0 {
		summary += fmt.Sprintf("%d part(s) failed: see errors.txt\n", len(b.errs))
	}
	_, err = fmt.Fprint(p.Out, summary)
	return err
}

// knownPasswords reads the passwords of the resource, to redact them: Redis's, its
// sentinels', and the monitored master's of a RedisSentinel.
func (p Plugin) knownPasswords(ctx context.Context, res *resource, b *bundle) []string {
	refs := []*v1beta2.ExistingPasswordSecret{res.secret, res.sentinelSecret}
	if s, ok := res.obj.(*v1beta2.RedisSentinel); ok && s.Spec.RedisSentinelConfig != nil {
		if src := s.Spec.RedisSentinelConfig.RedisReplicationPassword; src != nil && src.SecretKeyRef != nil {
			refs = append(refs, &v1beta2.ExistingPasswordSecret{Name: &src.SecretKeyRef.Name, Key: &src.SecretKeyRef.Key})
		}
	}
	var out []string
	for _, ref := range refs {
		pw, err := p.password(ctx, ref)
		if err != nil {
			b.fail("passwords (to redact them)", err)
			continue
		}
		if pw != "" {
			out = append(out, pw)
		}
	}
	return out
}

// ownedObjects are the objects of the resource the report lists.
type ownedObjects struct {
	pods []corev1.Pod
	// refs are "Kind/name" of every object listed, for the events.
	refs map[string]bool
}

// belongs reports whether an object is the resource's: the resource owns it, or it carries
// the resource's instance label (and no setup type of another kind).
func belongs(res *resource, obj client.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == res.obj.GetUID() && res.obj.GetUID() != "" {
			return true
		}
	}
	l := obj.GetLabels()
	setup, hasSetup := l[builder.LabelSetupType]
	return l[builder.LabelInstance] == res.obj.GetName() && (!hasSetup || slices.Contains(res.setupTypes, setup))
}

// reportObjects writes the resource's StatefulSets, Services, pods, claims, ConfigMaps and
// budgets, one file of each kind.
func (p Plugin) reportObjects(ctx context.Context, res *resource, b *bundle) ownedObjects {
	owned := ownedObjects{refs: map[string]bool{res.kind + "/" + res.obj.GetName(): true}}
	for _, k := range []struct {
		file, kind, apiVersion string
		list                   client.ObjectList
	}{
		{"statefulsets.yaml", "StatefulSet", "apps/v1", &appsv1.StatefulSetList{}},
		{"services.yaml", "Service", "v1", &corev1.ServiceList{}},
		{"pods.yaml", "Pod", "v1", &corev1.PodList{}},
		{"persistentvolumeclaims.yaml", "PersistentVolumeClaim", "v1", &corev1.PersistentVolumeClaimList{}},
		{"configmaps.yaml", "ConfigMap", "v1", &corev1.ConfigMapList{}},
		{"poddisruptionbudgets.yaml", "PodDisruptionBudget", "policy/v1", &policyv1.PodDisruptionBudgetList{}},
	} {
		if err := p.Client.List(ctx, k.list, client.InNamespace(p.Namespace)); err != nil {
			b.fail(k.file, err)
			continue
		}
		items := []any{}
		err := forEachItem(k.list, func(obj client.Object) {
			if !belongs(res, obj) {
				return
			}
			owned.refs[k.kind+"/"+obj.GetName()] = true
			if pod, ok := obj.(*corev1.Pod); ok {
				owned.pods = append(owned.pods, *pod.DeepCopy())
			}
			obj.SetManagedFields(nil)
			items = append(items, withType(obj, k.apiVersion, k.kind))
		})
		if err != nil {
			b.fail(k.file, err)
			continue
		}
		b.writeYAML(k.file, map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	}
	sort.Slice(owned.pods, func(i, j int) bool { return owned.pods[i].Name < owned.pods[j].Name })
	return owned
}

// forEachItem calls f with each object of the list.
func forEachItem(list client.ObjectList, f func(client.Object)) error {
	return meta.EachListItem(list, func(item runtime.Object) error {
		obj, ok := item.(client.Object)
		if !ok {
			return fmt.Errorf("cannot list %T", item)
		}
		f(obj)
		return nil
	})
}

// withType is the object as a map with its apiVersion and kind, which typed objects read from
// the API server lack.
func withType(obj client.Object, apiVersion, kind string) map[string]any {
	data, err := yaml.Marshal(obj)
	m := map[string]any{}
	if err == nil {
		err = yaml.Unmarshal(data, &m)
	}
	if err != nil {
		return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": obj.GetName()},
			"error": err.Error()}
	}
	m["apiVersion"], m["kind"] = apiVersion, kind
	return m
}

// reportSecrets lists the names and types of the resource's Secrets and of the Secrets its
// spec names, read as metadata only: no Secret's data is fetched for the list, nor written.
func (p Plugin) reportSecrets(ctx context.Context, res *resource, b *bundle) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := p.Client.List(ctx, list, client.InNamespace(p.Namespace)); err != nil {
		b.fail("secrets.txt", err)
		return
	}
	named := map[string]string{}
	for _, ref := range []*v1beta2.ExistingPasswordSecret{res.secret, res.sentinelSecret} {
		if ref != nil && ref.Name != nil {
			named[*ref.Name] = "password Secret of the spec"
		}
	}
	if res.tls != nil && res.tls.Secret.SecretName != "" {
		named[res.tls.Secret.SecretName] = "TLS Secret of the spec"
	}
	var lines []string
	for i := range list.Items {
		s := &list.Items[i]
		why, ok := named[s.Name]
		switch {
		case belongs(res, s):
			why = "the resource's"
		case !ok:
			continue
		}
		lines = append(lines, s.Name+"\t"+why)
	}
	sort.Strings(lines)
	var out strings.Builder
	out.WriteString("# Secret names only: their data is never read for this list, nor written.\n")
	tw := tabwriter.NewWriter(&out, 2, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "NAME\tWHY")
	for _, l := range lines {
		_, _ = fmt.Fprintln(tw, l)
	}
	_ = tw.Flush()
	b.write("secrets.txt", []byte(out.String()))
}

// reportEvents writes the events of the resource and of the objects listed, oldest first.
func (p Plugin) reportEvents(ctx context.Context, owned ownedObjects, b *bundle) {
	events, err := p.Kube.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.fail("events.txt", err)
		return
	}
	var mine []corev1.Event
	for _, e := range events.Items {
		if owned.refs[e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name] {
			mine = append(mine, e)
		}
	}
	sort.SliceStable(mine, func(i, j int) bool { return eventTime(mine[i]).Before(eventTime(mine[j])) })
	var out strings.Builder
	tw := tabwriter.NewWriter(&out, 2, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "TIME\tTYPE\tREASON\tOBJECT\tCOUNT\tMESSAGE")
	for _, e := range mine {
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s/%s\t%d\t%s\n", eventTime(e).UTC().Format(time.RFC3339), e.Type, e.Reason,
			e.InvolvedObject.Kind, e.InvolvedObject.Name, max(e.Count, 1), strings.ReplaceAll(e.Message, "\n", " "))
	}
	_ = tw.Flush()
	b.write("events.txt", []byte(out.String()))
}

// reportPod writes what the pod's Redis (or sentinel) says of itself: INFO, ROLE and, in a
// cluster, CLUSTER NODES.
func (p Plugin) reportPod(ctx context.Context, res *resource, pod *corev1.Pod, b *bundle) {
	dir := "pods/" + pod.Name + "/"
	conn, err := p.connectPod(ctx, res, pod)
	if err != nil {
		b.fail(dir, err)
		return
	}
	defer func() { _ = conn.Close() }()
	commands := []struct {
		file string
		args []string
	}{{"info.txt", []string{"info"}}, {"role.txt", []string{"role"}}}
	if res.kind == "RedisCluster" {
		commands = append(commands, struct {
			file string
			args []string
		}{"cluster-nodes.txt", []string{"cluster", "nodes"}})
	}
	for _, c := range commands {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		reply, err := send(cctx, conn, c.args)
		cancel()
		if err != nil {
			b.fail(dir+c.file, fmt.Errorf("%s: %w", strings.ToUpper(strings.Join(c.args, " ")), err))
			continue
		}
		b.write(dir+c.file, []byte(formatReply(reply, nil, printsAsText(c.args))+"\n"))
	}
}

// reportOperatorLog writes, per operator pod, the lines of its last Tail log lines that name
// the resource.
func (p Plugin) reportOperatorLog(ctx context.Context, res *resource, o ReportOptions, b *bundle) {
	ns := cmp.Or(o.OperatorNamespace, defaultOperatorNamespace)
	tail := cmp.Or(o.Tail, defaultLogTail)
	pods, err := p.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: operatorSelector})
	if err != nil {
		b.fail("operator-log", fmt.Errorf("list the operator's pods in %s: %w", ns, err))
		return
	}
	if len(pods.Items) == 0 {
		b.fail("operator-log", fmt.Errorf("no pod labelled %s in namespace %s (--operator-namespace)", operatorSelector, ns))
		return
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		file := "operator-log/" + pod.Name + ".log"
		lines, err := p.operatorLines(ctx, pod, tail, res.obj.GetName())
		if err != nil {
			b.fail(file, err)
			continue
		}
		b.write(file, []byte(strings.Join(lines, "")))
	}
}

// operatorLines reads the pod's last tail log lines (of its manager container) and keeps those
// that name the resource.
func (p Plugin) operatorLines(ctx context.Context, pod *corev1.Pod, tail int64, name string) ([]string, error) {
	opts := &corev1.PodLogOptions{TailLines: &tail}
	for _, c := range pod.Spec.Containers {
		if c.Name == "manager" {
			opts.Container = c.Name
		}
	}
	stream, err := p.Kube.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, opts).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("log of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	defer func() { _ = stream.Close() }()
	var lines []string
	r := bufio.NewReader(stream)
	for {
		line, err := r.ReadString('\n')
		if strings.Contains(line, name) {
			if !strings.HasSuffix(line, "\n") {
				line += "\n"
			}
			lines = append(lines, line)
		}
		if errors.Is(err, io.EOF) {
			return lines, nil
		}
		if err != nil {
			return lines, fmt.Errorf("log of %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
}
