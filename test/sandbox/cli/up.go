package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/rediskube/redis-operator/test/sandbox/cleanup"
	"github.com/rediskube/redis-operator/test/sandbox/controlplane"
	"github.com/rediskube/redis-operator/test/sandbox/fault"
	"github.com/rediskube/redis-operator/test/sandbox/images"
	"github.com/rediskube/redis-operator/test/sandbox/instance"
	"github.com/rediskube/redis-operator/test/sandbox/kubelet"
	"github.com/rediskube/redis-operator/test/sandbox/manifests"
)

type upOptions struct {
	dir, slot, bin, repo string
	nodes                int
	operatorImage        string
	samples              multiFlag
	operatorSamples      multiFlag
	noApply              bool
	requireOperator      bool
	exitWithPid          int
	volumeRefresh        time.Duration
	timeout              time.Duration
	// registry runs the sandbox's OCI registry; push is an image layout to push to it
	// before applying; operatorFromRegistry is the operator's repository:tag there.
	registry             bool
	push                 string
	operatorFromRegistry string
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func up(args []string) error {
	var c common
	var o upOptions
	fs := newFlags("up", &c)
	fs.StringVar(&o.slot, "slot", "0", "slot (selects bridge, IP ranges and ports), or auto for the first free slot from 1")
	fs.IntVar(&o.nodes, "nodes", 3, "number of virtual nodes (zones a, b, c, ...)")
	fs.StringVar(&o.bin, "bin", binDir(), "directory with the control-plane binaries, kubectl and redis-operator")
	fs.StringVar(&o.repo, "repo", repoDir(), "repository with config/crd/bases, config/rbac and config/default")
	fs.StringVar(&o.operatorImage, "operator-image", "redis-operator:dev", "image name of the operator in the sandbox")
	fs.Var(&o.samples, "sample", "manifest to apply when the operator is not deployed (repeatable)")
	fs.Var(&o.operatorSamples, "operator-sample", "manifest to apply instead of the --sample ones when the operator is deployed (repeatable)")
	fs.BoolVar(&o.noApply, "no-apply", false, "only start the sandbox: no CRDs, RBAC, operator or sample")
	fs.BoolVar(&o.requireOperator, "require-operator", false, "fail unless the operator is deployed and ready")
	fs.IntVar(&o.exitWithPid, "exit-with-pid", 0, "stop the sandbox when this process is gone")
	fs.DurationVar(&o.volumeRefresh, "volume-refresh", kubelet.DefaultVolumeRefresh, "how often pods' Secret and ConfigMap volumes are re-rendered (a kubelet's sync period: a minute)")
	fs.DurationVar(&o.timeout, "timeout", 3*time.Minute, "how long to wait for the sandbox and the sample")
	fs.BoolVar(&o.registry, "registry", false, "run an OCI registry on loopback (address in instance.json and `sandbox status`); the nodes pull its images and run their layers")
	fs.StringVar(&o.push, "push", "", "OCI image layout (make release's dist/image) to push to the registry before applying; implies --registry")
	fs.StringVar(&o.operatorFromRegistry, "operator-from-registry", "", "run the operator from this repository:tag on the sandbox's registry (redis-operator:0.2.0) instead of --operator-image; implies --registry")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.registry = o.registry || o.push != "" || o.operatorFromRegistry != ""
	var err error
	if o.dir, err = filepath.Abs(c.dir); err != nil {
		return err
	}
	if o.bin, err = filepath.Abs(o.bin); err != nil {
		return err
	}
	if _, err := parseSlot(o.slot); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("the sandbox needs root: it creates network and mount namespaces, a bridge and routes")
	}
	if err := controlplane.CheckBinaries(o.bin); err != nil {
		return err
	}
	start := time.Now()
	cl := fault.New(filepath.Join(o.dir, "control.sock"))
	st, err := cl.Status(context.Background())
	already := err == nil && st.Ready
	if !already {
		startCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err = startDaemon(startCtx, cl, o)
		cancel()
		if err != nil {
			return err
		}
	}
	readyAt := time.Since(start)
	inst, err := instance.Load(o.dir)
	if err != nil {
		return err
	}
	var notes []string
	if o.registry && inst.Registry == "" {
		return fmt.Errorf("the sandbox in %s runs without a registry: `sandbox down` it first", o.dir)
	}
	if o.push != "" {
		refs, err := pushLayout(inst, o.push, "redis-operator")
		if err != nil {
			return err
		}
		notes = append(notes, "Pushed "+strings.Join(refs, ", "))
	}
	if o.operatorFromRegistry != "" {
		o.operatorImage = inst.Registry + "/" + o.operatorFromRegistry
	}
	if !o.noApply {
		applyCtx, cancel := context.WithTimeout(context.Background(), o.timeout)
		var applied []string
		applied, err = applyAll(applyCtx, inst, o)
		notes = append(notes, applied...)
		cancel()
		if err != nil {
			return err
		}
	}
	total := time.Since(start)
	cx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if st, err = cl.Status(cx); err != nil {
		return err
	}
	if already {
		fmt.Printf("The sandbox in %s was already running (slot %d).\n", o.dir, st.Slot)
	} else {
		fmt.Printf("Sandbox up in %.1f s (control plane and %d nodes ready after %.1f s), slot %d, state in %s.\n",
			total.Seconds(), len(st.Nodes), readyAt.Seconds(), st.Slot, o.dir)
	}
	return summary(cx, os.Stdout, inst, st, o, notes)
}

// startDaemon cleans up whatever an earlier sandbox in the directory left, starts the
// daemon in its own session (it outlives this command) and waits until it is ready.
func startDaemon(ctx context.Context, cl *fault.Client, o upOptions) error {
	if inst, err := instance.Load(o.dir); err == nil {
		if err := cleanup.Down(inst, cleanup.Options{}); err != nil {
			return fmt.Errorf("clean up the earlier sandbox in %s: %w", o.dir, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(o.dir, "logs"), 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(o.dir, "logs", "sandbox.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"run", "--dir", o.dir, "--slot", o.slot, "--nodes", strconv.Itoa(o.nodes), "--bin", o.bin,
		"--volume-refresh", o.volumeRefresh.String()}
	if o.exitWithPid > 0 {
		args = append(args, "--exit-with-pid", strconv.Itoa(o.exitWithPid))
	}
	if o.registry {
		args = append(args, "--registry")
	}
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for {
		st, err := cl.Status(ctx)
		if err == nil && st.Ready {
			return nil
		}
		if err == nil && st.Error != "" {
			return fmt.Errorf("sandbox failed to start: %s\n%s", st.Error, tail(logPath, 30))
		}
		select {
		case err := <-exited:
			return fmt.Errorf("sandbox daemon exited (%w)\n%s", err, tail(logPath, 30))
		case <-ctx.Done():
			return fmt.Errorf("sandbox not ready: %w\n%s", ctx.Err(), tail(logPath, 30))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "--- " + path + " ---\n" + strings.Join(lines, "\n")
}

// applyAll installs the CRDs, the RBAC and (when built) the operator, then the samples, and
// waits for their workloads. It returns notes for the user.
func applyAll(ctx context.Context, inst instance.Instance, o upOptions) ([]string, error) {
	cfg, err := controlplane.RESTConfig(inst)
	if err != nil {
		return nil, err
	}
	ap, err := manifests.NewApplier(cfg)
	if err != nil {
		return nil, err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kubectl := filepath.Join(o.bin, "kubectl")
	var notes []string
	crds := filepath.Join(o.repo, "config", "crd", "bases")
	if _, err := os.Stat(crds); err == nil {
		objs, err := manifests.Load(crds)
		if err != nil {
			return nil, err
		}
		if err := ap.Apply(ctx, objs, "default"); err != nil {
			return nil, fmt.Errorf("CRDs: %w", err)
		}
	}
	var workloads []*unstructured.Unstructured
	opBin := images.Table{BinDir: o.bin}.OperatorBinary()
	opConfig := filepath.Join(o.repo, "config", "default")
	_, binErr := os.Stat(opBin)
	// An image of the sandbox's registry runs its own binary, not bin/redis-operator.
	pulled := images.Table{Registry: inst.Registry}.Pulls(o.operatorImage)
	deployOperator := (binErr == nil || pulled) && manifests.HasKustomization(opConfig)
	if deployOperator {
		objs, err := manifests.Kustomize(kubectl, opConfig)
		if err != nil {
			return nil, err
		}
		stamp := binaryStamp(opBin)
		if pulled {
			stamp = ""
		}
		setOperatorImage(objs, o.operatorImage, stamp)
		if err := applyEach(ctx, ap, objs); err != nil {
			notes = append(notes, "WARNING: some operator objects were not applied: "+err.Error())
		}
		workloads = append(workloads, workloadsOf(objs)...)
	} else {
		why := "bin/redis-operator is not built (run `make build`)"
		if binErr == nil {
			why = "config/default has no kustomization"
		}
		if o.requireOperator {
			return nil, errors.New("operator not deployed: " + why)
		}
		notes = append(notes, "Operator not deployed: "+why+"; run `make sandbox` again afterwards.")
		rbac := filepath.Join(o.repo, "config", "rbac")
		if _, err := os.Stat(rbac); err == nil {
			var objs []*unstructured.Unstructured
			if manifests.HasKustomization(rbac) {
				objs, err = manifests.Kustomize(kubectl, rbac)
			} else {
				objs, err = manifests.Load(rbac)
			}
			if err == nil {
				err = applyEach(ctx, ap, objs)
			}
			if err != nil {
				notes = append(notes, "WARNING: RBAC not fully applied: "+err.Error())
			}
		}
	}
	samples := o.samples
	if deployOperator && len(o.operatorSamples) > 0 {
		samples = o.operatorSamples
	}
	for _, s := range samples {
		objs, err := manifests.Load(s)
		if err != nil {
			return nil, fmt.Errorf("sample %s: %w", s, err)
		}
		if err := ap.Apply(ctx, objs, "default"); err != nil {
			return nil, fmt.Errorf("sample %s: %w", s, err)
		}
		workloads = append(workloads, workloadsOf(objs)...)
		var names []string
		for _, obj := range objs {
			names = append(names, strings.ToLower(obj.GetKind())+"/"+obj.GetName())
		}
		notes = append([]string{fmt.Sprintf("Sample %s: %s", relative(s), strings.Join(names, ", "))}, notes...)
	}
	errs := make(chan error, len(workloads))
	for _, w := range workloads {
		go func() {
			if isBuiltinWorkload(w) {
				errs <- waitWorkload(ctx, kc, w)
			} else {
				errs <- waitCustomResource(ctx, ap, w)
			}
		}()
	}
	var failed []error
	for range workloads {
		if err := <-errs; err != nil {
			notes = append(notes, "WARNING: "+err.Error())
			failed = append(failed, err)
		}
	}
	if o.requireOperator && len(failed) > 0 {
		return notes, errors.Join(failed...)
	}
	return notes, nil
}

func applyEach(ctx context.Context, ap *manifests.Applier, objs []*unstructured.Unstructured) error {
	var errs []error
	if err := ap.EnsureNamespaces(ctx, objs); err != nil {
		errs = append(errs, err)
	}
	if err := ap.Apply(ctx, filter(objs, true), "default"); err != nil {
		errs = append(errs, err)
	}
	for _, obj := range filter(objs, false) {
		if err := ap.Apply(ctx, []*unstructured.Unstructured{obj}, "default"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func filter(objs []*unstructured.Unstructured, first bool) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		isFirst := o.GetKind() == "Namespace" || o.GetKind() == "CustomResourceDefinition"
		if isFirst == first {
			out = append(out, o)
		}
	}
	return out
}

// binaryStamp identifies a build of the operator binary.
func binaryStamp(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d-%d", fi.Size(), fi.ModTime().UnixNano())
}

// setOperatorImage points the operator's Deployment at the sandbox's operator image, which
// the image table maps to bin/redis-operator, and stamps the pod template with the binary's
// build so that `make sandbox` after `make build` rolls the operator out again.
func setOperatorImage(objs []*unstructured.Unstructured, image, stamp string) {
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		if stamp != "" {
			ann, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "annotations")
			if ann == nil {
				ann = map[string]string{}
			}
			ann["sandbox.rediskube.io/binary"] = stamp
			_ = unstructured.SetNestedStringMap(o.Object, ann, "spec", "template", "metadata", "annotations")
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for i, c := range containers {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			img, _ := m["image"].(string)
			repo := images.Repository(img)
			if repo == "controller" || repo == "manager" || strings.Contains(repo, "redis-operator") {
				m["image"] = image
				m["imagePullPolicy"] = "IfNotPresent"
				containers[i] = m
			}
		}
		_ = unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers")
	}
}

// workloadsOf picks what to wait for: Deployments, StatefulSets and the operator's
// resources (the redis.redis.opstreelabs.in kinds).
func workloadsOf(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if isBuiltinWorkload(o) || o.GroupVersionKind().Group == operatorGroup {
			out = append(out, o)
		}
	}
	return out
}

const operatorGroup = "redis.redis.opstreelabs.in"

func isBuiltinWorkload(o *unstructured.Unstructured) bool {
	return o.GetKind() == "Deployment" || o.GetKind() == "StatefulSet"
}

// waitCustomResource waits for a Ready condition, or the compatible status.state "Ready".
func waitCustomResource(ctx context.Context, ap *manifests.Applier, obj *unstructured.Unstructured) error {
	res, err := ap.Resource(obj, "default")
	if err != nil {
		return err
	}
	last := "no status yet"
	for {
		got, err := res.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err == nil {
			state, _, _ := unstructured.NestedString(got.Object, "status", "state")
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
					if m["status"] == "True" {
						return nil
					}
					last = fmt.Sprintf("Ready=%v %v: %v", m["status"], m["reason"], m["message"])
				}
			}
			if state == "Ready" {
				return nil
			}
			if state != "" {
				last += ", state " + state
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s/%s not ready (%s)", obj.GetKind(), obj.GetNamespace(), obj.GetName(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func waitWorkload(ctx context.Context, kc kubernetes.Interface, w *unstructured.Unstructured) error {
	ns, name, kind := w.GetNamespace(), w.GetName(), w.GetKind()
	if ns == "" {
		ns = "default"
	}
	var last string
	for {
		var ready, want int32
		var err error
		switch kind {
		case "Deployment":
			var d *appsv1.Deployment
			if d, err = kc.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
				// Rolled out: the controller saw the latest spec, and only updated, available
				// replicas are left.
				want, ready = ptrOr(d.Spec.Replicas, 1), min(d.Status.AvailableReplicas, d.Status.UpdatedReplicas)
				if d.Status.ObservedGeneration < d.Generation || d.Status.Replicas > want {
					ready = 0
				}
			}
		case "StatefulSet":
			var s *appsv1.StatefulSet
			if s, err = kc.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
				want, ready = ptrOr(s.Spec.Replicas, 1), s.Status.ReadyReplicas
				if s.Status.ObservedGeneration < s.Generation {
					ready = 0
				}
			}
		}
		if err == nil && ready >= want {
			return nil
		}
		last = fmt.Sprintf("%d/%d ready", ready, want)
		if err != nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s/%s not ready (%s): see bin/kubectl -n %s describe pods", kind, ns, name, last, ns)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func ptrOr(p *int32, d int32) int32 {
	if p == nil {
		return d
	}
	return *p
}

func summary(ctx context.Context, w io.Writer, inst instance.Instance, st *fault.Status, o upOptions, notes []string) error {
	cfg, err := controlplane.RESTConfig(inst)
	if err != nil {
		return err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	kubectl := relative(filepath.Join(o.bin, "kubectl"))
	kubeconfig := relative(inst.Kubeconfig())
	var b bytes.Buffer
	fmt.Fprintf(&b, "\nKubeconfig: %s\nkubectl:    %s --kubeconfig %s get nodes,pods -A\n", kubeconfig, kubectl, kubeconfig)
	fmt.Fprintf(&b, "API server: %s (pods reach it at %s)\nPod IPs:    %s on bridge %s; ClusterIPs %s and NodePorts on the node addresses (kube-proxy), all reachable from this machine\n\n",
		st.APIServer, st.Gateway, st.PodCIDR, st.Bridge, st.ServiceCIDR)
	if st.Registry != "" {
		fmt.Fprintf(&b, "Registry:   %s (sandbox push dist/image; the nodes pull %s/redis-operator:VERSION from it)\n\n", st.Registry, st.Registry)
	}
	nodes, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "NODE\tZONE\tADDRESS\tREADY")
	for _, n := range nodes.Items {
		ready := "False"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = string(c.Status)
			}
		}
		addr := ""
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				addr = a.Address
			}
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n.Name, n.Labels["topology.kubernetes.io/zone"], addr, ready)
	}
	_ = tw.Flush()
	pods, err := kc.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var redis []corev1.Pod
	if len(pods.Items) > 0 {
		b.WriteString("\n")
		tw = tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(tw, "NAMESPACE\tPOD\tNODE\tIP\tPHASE\tREADY")
		for _, p := range pods.Items {
			ready := "false"
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready = "true"
				}
			}
			_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Namespace, p.Name, p.Spec.NodeName, p.Status.PodIP, p.Status.Phase, ready)
			for _, c := range p.Spec.Containers {
				if images.Repository(c.Image) == "redis" && p.Status.PodIP != "" {
					redis = append(redis, p)
					break
				}
			}
		}
		_ = tw.Flush()
	}
	if len(redis) > 0 {
		p := redis[0]
		fmt.Fprintf(&b, "\nReach Redis:\n  redis-cli -h %s -p 6379 ping\n  %s --kubeconfig %s -n %s exec -it %s -- redis-cli\n",
			p.Status.PodIP, kubectl, kubeconfig, p.Namespace, p.Name)
	}
	fmt.Fprintf(&b, "\nFaults: bin/sandbox crash-container|stop-node|start-node|cut|heal|restart-workload (bin/sandbox help)\n")
	fmt.Fprintf(&b, "Logs:   %s\nStop:   make sandbox-down\n", relative(inst.LogDir()))
	for _, n := range notes {
		fmt.Fprintf(&b, "\n%s\n", n)
	}
	_, err = w.Write(b.Bytes())
	return err
}

func relative(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}
