//go:build integration

package controller

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
	"github.com/rediskube/redis-operator/internal/restore"
)

// fakeKubelet stands in for the StatefulSet controller and the kubelet of a real cluster: for
// each StatefulSet it creates the pods, runs each pod as a real redis-server bound to the pod's
// own loopback address (127.<process>.<net>.<n>, a new one at every start, as a recreated pod gets a new
// IP) and reports the pod Running and Ready. The sandbox's end-to-end tests run real pods; these
// tests run the controller's logic against real Redis in seconds.
type fakeKubelet struct {
	t    *testing.T
	c    client.Client
	port int
	// standalone runs plain redis-server instead of cluster nodes; password sets requirepass.
	standalone bool
	password   string
	// confFor, when set, writes each pod's config instead of config (sentinel pods), and args
	// follow the config file on the command line (--sentinel).
	confFor func(p *fakePod) string
	args    []string
	// aclSecret, when set, is the operator's ACL Secret: pods read their aclfile from it, as
	// its volume, written at start and again only by refreshSecretVolumes (kubelet's delay).
	aclSecret string
	// masterUser, when set, is the user replicas log in to their master as (masteruser), as
	// the auth Secret says when the ACL file turns the default user off.
	masterUser string
	// authSecret, when set, is the operator's auth Secret: pods include its requirepass and
	// masterauth file, as rendered (password is then unused), written at start.
	authSecret string
	// asBuilt gives the pods the persistence the builders render for a cluster with storage
	// (appendonly yes, Redis's own appendfsync everysec and save points) instead of the
	// tests' fsync of every write.
	asBuilt bool
	net     int32
	base    string // the pods' volumes
	mu      sync.Mutex
	nextIP  int
	pods    map[string]*fakePod

	// s3Endpoints are the URLs that answer for endpoints the restore init containers name and
	// that resolve nowhere here (a claim store's Service: there is no cluster DNS).
	s3Endpoints map[string]string
}

type fakePod struct {
	args    []string
	name    string
	ip      string
	dataDir string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// Each fake kubelet has a /24 of loopback addresses of its own, so tests running in parallel
// never share an address: the second octet tells this test process from others running the
// same tests on the machine, the third the kubelet.
var (
	processNet  = 1 + os.Getpid()%250
	kubeletNets atomic.Int32
)

func newFakeKubelet(t *testing.T, c client.Client, port int) *fakeKubelet {
	t.Helper()
	// The pods' volumes live under a folder of the kubelet's own, removed only after every
	// process is stopped: a t.TempDir would be removed first (cleanups run last-in first-out)
	// while Redis still writes into it.
	base, err := os.MkdirTemp("", "fakekubelet-")
	if err != nil {
		t.Fatal(err)
	}
	k := &fakeKubelet{t: t, c: c, port: port, net: kubeletNets.Add(1)%254 + 1, nextIP: 10, pods: map[string]*fakePod{}, base: base}
	t.Cleanup(func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		for _, p := range k.pods {
			p.stop(syscall.SIGKILL)
		}
		if err := os.RemoveAll(base); err != nil {
			t.Errorf("remove the pods' volumes: %v", err)
		}
	})
	return k
}

// runStatefulSet creates and starts the pods of a StatefulSet once it exists.
func (k *fakeKubelet) runStatefulSet(ctx context.Context, namespace, name string) {
	k.t.Helper()
	var sts appsv1.StatefulSet
	waitUntil(k.t, 30*time.Second, "StatefulSet "+name+" exists", func() error {
		return k.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &sts)
	})
	for i := 0; i < int(*sts.Spec.Replicas); i++ {
		k.startPod(ctx, &sts, i, "")
	}
}

// startPod creates pod <sts>-<ordinal> and runs it; dataDir "" gives it a new empty volume.
func (k *fakeKubelet) startPod(ctx context.Context, sts *appsv1.StatefulSet, ordinal int, dataDir string) {
	k.t.Helper()
	k.mu.Lock()
	ip := fmt.Sprintf("127.%d.%d.%d", processNet, k.net, k.nextIP)
	k.nextIP++
	k.mu.Unlock()
	if dataDir == "" {
		var err error
		if dataDir, err = os.MkdirTemp(k.base, "pod-"); err != nil {
			k.t.Fatal(err)
		}
	}
	name := fmt.Sprintf("%s-%d", sts.Name, ordinal)
	k.runRestoreInit(ctx, sts, name, dataDir)
	p := &fakePod{name: name, ip: ip, dataDir: dataDir, args: append(slices.Clone(k.args), replicaOfArgs(sts)...)}
	k.run(ctx, sts.Namespace, p)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: sts.Namespace, Labels: sts.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))},
		},
		Spec: *sts.Spec.Template.Spec.DeepCopy(),
	}
	// Spread as a scheduler would: followers one node over from the leader of the same ordinal.
	node := ordinal % 3
	if strings.HasSuffix(sts.Name, "-follower") {
		node = (ordinal + 1) % 3
	}
	pod.Spec.NodeName = fmt.Sprintf("node-%d", node)
	if err := k.c.Create(ctx, pod); err != nil {
		k.t.Fatalf("create pod %s: %v", name, err)
	}
	started := metav1.Now()
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &started,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}},
	}
	if err := k.c.Status().Update(ctx, pod); err != nil {
		k.t.Fatalf("report pod %s ready: %v", name, err)
	}
	k.mu.Lock()
	k.pods[name] = p
	k.mu.Unlock()
}

// replicaOfArgs is the --replicaof of the pod template's command, which the builders give pods
// that must start as replicas waiting for their master: the fake pods start so too.
func replicaOfArgs(sts *appsv1.StatefulSet) []string {
	for _, c := range sts.Spec.Template.Spec.Containers {
		if i := slices.Index(c.Command, "--replicaof"); i >= 0 && i+2 < len(c.Command) {
			return slices.Clone(c.Command[i : i+3])
		}
	}
	return nil
}

// deletePod stops the pod's process and deletes the pod, as a node losing it would.
func (k *fakeKubelet) deletePod(ctx context.Context, namespace, name string, signal syscall.Signal) *fakePod {
	k.t.Helper()
	k.mu.Lock()
	p := k.pods[name]
	delete(k.pods, name)
	k.mu.Unlock()
	if p == nil {
		k.t.Fatalf("no pod %s", name)
	}
	p.stop(signal)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := k.c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
		k.t.Fatalf("delete pod %s: %v", name, err)
	}
	waitUntil(k.t, 30*time.Second, "pod "+name+" is gone", func() error {
		err := k.c.Get(ctx, client.ObjectKeyFromObject(pod), pod)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %w", err)
	})
	return p
}

// restartInPlace crashes the pod's process and starts it again at the same address with the
// pod object untouched, as the kubelet restarts a container that died; with emptyVolume it
// starts from an empty data directory, as a Redis that keeps nothing on disk does.
func (k *fakeKubelet) restartInPlace(ctx context.Context, namespace, name string, emptyVolume bool) {
	k.t.Helper()
	p := k.pod(name)
	p.stop(syscall.SIGKILL)
	if emptyVolume {
		dir, err := os.MkdirTemp(k.base, "pod-")
		if err != nil {
			k.t.Fatal(err)
		}
		p.dataDir = dir
	}
	k.run(ctx, namespace, p)
}

// startAtNewIP starts the process of a pod whose process was stopped, the pod object kept, at
// a new address, and reports it there: a node's pods after the node stopped and came back.
func (k *fakeKubelet) startAtNewIP(ctx context.Context, namespace, name string) {
	k.t.Helper()
	p := k.pod(name)
	k.mu.Lock()
	p.ip = fmt.Sprintf("127.%d.%d.%d", processNet, k.net, k.nextIP)
	k.nextIP++
	k.mu.Unlock()
	k.run(ctx, namespace, p)
	var pod corev1.Pod
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &pod); err != nil {
		k.t.Fatal(err)
	}
	started := metav1.Now()
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: p.ip, PodIPs: []corev1.PodIP{{IP: p.ip}}, StartTime: &started,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}},
	}
	if err := k.c.Status().Update(ctx, &pod); err != nil {
		k.t.Fatalf("report pod %s at %s: %v", name, p.ip, err)
	}
}

// run writes the pod's projected files and starts its redis-server.
func (k *fakeKubelet) run(ctx context.Context, namespace string, p *fakePod) {
	k.t.Helper()
	conf := k.config
	if k.confFor != nil {
		conf = k.confFor
	}
	if k.aclSecret != "" {
		k.writeACLFile(ctx, namespace, p)
	}
	if k.authSecret != "" {
		k.writeAuthFile(ctx, namespace, p)
	}
	p.start(k.t, k.port, conf(p))
}

// podNames lists the pods the kubelet runs, sorted.
func (k *fakeKubelet) podNames() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	names := make([]string, 0, len(k.pods))
	for name := range k.pods {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func (k *fakeKubelet) pod(name string) *fakePod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.pods[name]
}

func (p *fakePod) addr(port int) string { return net.JoinHostPort(p.ip, strconv.Itoa(port)) }

func (p *fakePod) endpoint(port int, auth redis.Auth) redis.Endpoint {
	return redis.NewEndpoint(p.ip, port, auth)
}

// config is the redis.conf of a pod: what the builders render, reduced to what a test needs.
func (k *fakeKubelet) config(p *fakePod) string {
	persistence := "appendonly yes\nappendfsync always\nsave \"\"\n"
	if k.asBuilt {
		persistence = "appendonly yes\n"
	}
	conf := fmt.Sprintf("bind %s\nport %d\ndir %s\ndaemonize no\n%srepl-diskless-sync-delay 0\n",
		p.ip, k.port, p.dataDir, persistence)
	if k.standalone {
		// Replicas connect from their own address, so that masters list (and sentinels find)
		// them where they are, as pods with their own IPs.
		conf += fmt.Sprintf("bind-source-addr %s\nreplica-announce-ip %s\n", p.ip, p.ip)
	} else {
		// Nodes sharing the loopback interface must announce their own address. A shard
		// without a master stops only its own slots, as the builders configure it.
		conf += fmt.Sprintf("cluster-enabled yes\ncluster-config-file %s\ncluster-port %d\ncluster-announce-ip %s\ncluster-node-timeout 2000\n"+
			"cluster-require-full-coverage no\ncluster-migration-barrier 1\n",
			filepath.Join(p.dataDir, "nodes.conf"), k.port+10000, p.ip)
	}
	if k.password != "" {
		conf += fmt.Sprintf("requirepass %q\nmasterauth %q\n", k.password, k.password)
	}
	if k.aclSecret != "" {
		conf += fmt.Sprintf("aclfile %s\n", filepath.Join(p.dataDir, "user.acl"))
	}
	if k.authSecret != "" {
		conf += fmt.Sprintf("include %s\n", filepath.Join(p.dataDir, builder.RedisAuthKey))
	}
	if k.masterUser != "" {
		conf += "masteruser " + k.masterUser + "\n"
	}
	return conf
}

// writeACLFile writes the pod's aclfile from the operator's ACL Secret, as kubelet projects it.
func (k *fakeKubelet) writeACLFile(ctx context.Context, namespace string, p *fakePod) {
	k.t.Helper()
	var secret corev1.Secret
	waitUntil(k.t, 30*time.Second, "ACL Secret "+k.aclSecret+" exists", func() error {
		return k.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: k.aclSecret}, &secret)
	})
	if err := os.WriteFile(filepath.Join(p.dataDir, "user.acl"), secret.Data["user.acl"], 0o600); err != nil {
		k.t.Fatal(err)
	}
}

// writeAuthFile writes the pod's auth file from the operator's auth Secret, as kubelet projects it.
func (k *fakeKubelet) writeAuthFile(ctx context.Context, namespace string, p *fakePod) {
	k.t.Helper()
	var secret corev1.Secret
	waitUntil(k.t, 30*time.Second, "auth Secret "+k.authSecret+" exists", func() error {
		return k.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: k.authSecret}, &secret)
	})
	if err := os.WriteFile(filepath.Join(p.dataDir, builder.RedisAuthKey), secret.Data[builder.RedisAuthKey], 0o600); err != nil {
		k.t.Fatal(err)
	}
}

// refreshSecretVolumes brings the ACL Secret's content into every running pod's file, as
// kubelet does a while after the Secret changed.
func (k *fakeKubelet) refreshSecretVolumes(ctx context.Context, namespace string) {
	k.t.Helper()
	for _, name := range k.podNames() {
		k.writeACLFile(ctx, namespace, k.pod(name))
	}
}

func (p *fakePod) start(t *testing.T, port int, conf string) {
	t.Helper()
	confPath := filepath.Join(p.dataDir, "redis.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.OpenFile(filepath.Join(p.dataDir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }()
	p.cmd = exec.Command(redistest.Binary(t), append([]string{confPath}, p.args...)...) //nolint:noctx // it lives until stop or kill end it, as a container does
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start redis-server for %s: %v", p.name, err)
	}
	p.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { _ = cmd.Wait(); close(exited) }(p.cmd, p.exited)
	waitUntil(t, 15*time.Second, "redis-server of "+p.name+" answers", func() error {
		select {
		case <-p.exited:
			log, _ := os.ReadFile(filepath.Join(p.dataDir, "redis.log"))
			t.Fatalf("redis-server of %s exited:\n%s", p.name, log)
		default:
		}
		return dialable(t.Context(), p.addr(port))
	})
}

// stop ends the process: SIGTERM lets Redis write its AOF and nodes.conf, SIGKILL is a crash.
// freeze stops the pod's redis-server (SIGSTOP: a hung process, a partition) while its pod
// stays Running; the returned thaw resumes it, and runs at the test's end if not called.
func (p *fakePod) freeze(t *testing.T) (thaw func()) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw = func() {
		if !thawed {
			thawed = true
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	t.Cleanup(thaw)
	return thaw
}

func (p *fakePod) stop(signal syscall.Signal) {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(signal)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// runRestoreInit runs the pod template's restore init container, if it has one, as the
// kubelet would before Redis: the operator binary's restore subcommand (here in process) on
// the pod's volume, with the credentials of the Secret its environment names, the pod's name
// where the downward API gives it, and its ConfigMap volumes as they are now.
func (k *fakeKubelet) runRestoreInit(ctx context.Context, sts *appsv1.StatefulSet, pod, dataDir string) {
	k.t.Helper()
	args, env, ok := k.restoreInit(ctx, sts, pod, dataDir)
	if !ok {
		return
	}
	if err := restore.RunCommand(ctx, args, func(name string) string { return env[name] }, io.Discard); err != nil {
		k.t.Fatalf("restore init container of %s: %v", pod, err)
	}
}

// restoreInit is what the restore init container of the pod template runs, as the kubelet
// would give it to the pod: the subcommand's arguments, the data directory and ConfigMap
// paths replaced by this pod's, and its environment resolved (the Secret's keys, the pod's
// name). ok is false when the template has no restore init container.
func (k *fakeKubelet) restoreInit(ctx context.Context, sts *appsv1.StatefulSet, pod, dataDir string) (args []string, env map[string]string, ok bool) {
	k.t.Helper()
	for _, c := range sts.Spec.Template.Spec.InitContainers {
		if c.Name != "restore" {
			continue
		}
		env = map[string]string{}
		for _, e := range c.Env {
			if e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
				env[e.Name] = pod
				continue
			}
			ref := e.ValueFrom.SecretKeyRef
			var secret corev1.Secret
			if err := k.c.Get(ctx, client.ObjectKey{Namespace: sts.Namespace, Name: ref.Name}, &secret); err != nil {
				k.t.Fatalf("restore init container: %v", err)
			}
			env[e.Name] = string(secret.Data[ref.Key])
		}
		args = slices.Clone(c.Command[2:]) // after /redis-operator restore
		if i := slices.Index(args, "--data-dir"); i >= 0 {
			args[i+1] = dataDir
		}
		if i := slices.Index(args, "--endpoint"); i >= 0 && k.s3Endpoints[args[i+1]] != "" {
			args[i+1] = k.s3Endpoints[args[i+1]]
		}
		for _, m := range c.VolumeMounts {
			dir := k.configMapVolume(ctx, sts, m.Name)
			if dir == "" {
				continue
			}
			for i, arg := range args {
				if rest, ok := strings.CutPrefix(arg, m.MountPath+"/"); ok {
					args[i] = filepath.Join(dir, rest)
				}
			}
		}
		return args, env, true
	}
	return nil, nil, false
}

// configMapVolume writes the keys of the template's ConfigMap volume of that name into a new
// directory, as the kubelet mounts them when a pod starts; "" when the volume is no ConfigMap.
// An optional ConfigMap that does not exist gives an empty directory.
func (k *fakeKubelet) configMapVolume(ctx context.Context, sts *appsv1.StatefulSet, volume string) string {
	k.t.Helper()
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name != volume || v.ConfigMap == nil {
			continue
		}
		dir, err := os.MkdirTemp(k.base, "configmap-")
		if err != nil {
			k.t.Fatal(err)
		}
		var cm corev1.ConfigMap
		err = k.c.Get(ctx, client.ObjectKey{Namespace: sts.Namespace, Name: v.ConfigMap.Name}, &cm)
		if apierrors.IsNotFound(err) && v.ConfigMap.Optional != nil && *v.ConfigMap.Optional {
			return dir
		}
		if err != nil {
			k.t.Fatalf("ConfigMap volume %s: %v", volume, err)
		}
		for key, value := range cm.Data {
			if err := os.WriteFile(filepath.Join(dir, key), []byte(value), 0o600); err != nil {
				k.t.Fatal(err)
			}
		}
		return dir
	}
	return ""
}
