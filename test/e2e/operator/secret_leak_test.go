package operator

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
	"github.com/rediskube/redis-operator/test/sandbox/proc"
)

// secretCanaries are the secret values of the leak test, each with a name for the report.
type secretCanaries map[string]string

// in returns the names of the canaries found in s.
func (c secretCanaries) in(s []byte) []string {
	var found []string
	for name, v := range c {
		if bytes.Contains(s, []byte(v)) {
			found = append(found, name)
		}
	}
	return found
}

// A password-protected RedisReplication with TLS, ACL users and embedded sentinels runs to
// Ready; then its password, the private key's PEM body and the ACL users' passwords and hashes
// must be in no process command line of the sandbox (containers, control plane, operator), no
// pod's command, args or env value, no ConfigMap, no Event, no resource status and no line of
// the operator's log. Each search first finds a value where it legitimately is, so that a
// search that sees nothing cannot pass.
func TestNoSecretValueLeaks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "leak")
	nonce := make([]byte, 8)
	if _, err := rand.Read(nonce); err != nil {
		t.Fatal(err)
	}
	suffix := hex.EncodeToString(nonce)
	password := "pw-" + suffix
	readerPass := "reader-" + suffix
	writerHash := sha256.Sum256([]byte("writer-" + suffix))
	passwordHash := sha256.Sum256([]byte(password))
	ca := redistest.NewCA(t, "leak-ca")
	issued := ca.Issue(t, "leaky")
	keyBody := pemBody(t, issued.KeyPEM)
	canaries := secretCanaries{
		"password":                password,
		"SHA-256 of the password": hex.EncodeToString(passwordHash[:]),
		"ACL clear-text password": readerPass,
		"ACL password hash":       hex.EncodeToString(writerHash[:]),
		"TLS private key":         keyBody,
	}

	for name, data := range map[string]map[string][]byte{
		"redis-auth": {"password": []byte(password)},
		"users": {"user.acl": []byte("user reader on >" + readerPass + " ~app:* +get\n" +
			"user writer on #" + hex.EncodeToString(writerHash[:]) + " ~app:* +get +set\n")},
	} {
		if err := sb.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	tlsSecret(t, ns, ca.CertPEM, issued)
	sb.Apply(t, ns, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: leaky
spec:
  clusterSize: 2
  kubernetesConfig:
    image: redis:7.0.15
    redisSecret: {name: redis-auth, key: password}
  acl:
    secret: {secretName: users}
  TLS:
    secret:
      secretName: redis-tls
  sentinel:
    size: 3
    image: redis:7.0.15
`)
	sb.WaitFor(t, ns, "RedisReplication Ready with its sentinels", 4*time.Minute, func(ctx context.Context) (bool, string, error) {
		cr := &v1beta2.RedisReplication{}
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "leaky"}, cr); err != nil {
			return false, "", err
		}
		ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
		return ready != nil && ready.Status == metav1.ConditionTrue && cr.Status.MasterNode != "",
			fmt.Sprintf("%s: %v", cr.Status.State, ready), nil
	})

	// Where the values legitimately are: the user's Secrets and the operator's rendered ones.
	var secrets corev1.SecretList
	if err := sb.Client.List(ctx, &secrets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range secrets.Items {
		for _, v := range s.Data {
			for _, name := range canaries.in(v) {
				seen[name] = true
			}
		}
	}
	for name := range canaries {
		if !seen[name] {
			t.Fatalf("no Secret holds the %s: the search would find nothing anywhere", name)
		}
	}

	leak := func(where string, content []byte) {
		t.Helper()
		if found := canaries.in(content); len(found) > 0 {
			t.Errorf("%s holds the %s", where, strings.Join(found, ", "))
		}
	}

	// Process command lines: every process of the sandbox (its cgroup): control plane,
	// kubelets, the operator, the Redis and sentinel containers.
	pids := proc.Find(sb.Inst.CgroupName()).Pids()
	redisServers := 0
	for _, pid := range pids {
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil {
			continue // exited meanwhile
		}
		if bytes.Contains(cmdline, []byte("redis-server")) {
			redisServers++
		}
		leak(fmt.Sprintf("process %d command line %q", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})), cmdline)
	}
	if redisServers < 5 {
		t.Fatalf("%d redis-server processes among the sandbox's %d: the command line search does not see the pods", redisServers, len(pids))
	}

	// Pods: command, args and literal env values (a secretKeyRef is no value).
	var pods corev1.PodList
	if err := sb.Client.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			where := p.Namespace + "/" + p.Name + " container " + c.Name
			leak(where+" command and args", []byte(strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")))
			for _, e := range c.Env {
				leak(where+" env "+e.Name, []byte(e.Value))
			}
		}
	}

	// Every ConfigMap, Event and resource status of the sandbox, in every namespace.
	var configMaps corev1.ConfigMapList
	if err := sb.Client.List(ctx, &configMaps); err != nil {
		t.Fatal(err)
	}
	for _, cm := range configMaps.Items {
		leak("ConfigMap "+cm.Namespace+"/"+cm.Name, mustJSON(t, cm))
	}
	var events corev1.EventList
	if err := sb.Client.List(ctx, &events); err != nil {
		t.Fatal(err)
	}
	if len(events.Items) == 0 {
		t.Fatal("no events at all: the event search would find nothing")
	}
	for _, e := range events.Items {
		leak("Event "+e.Namespace+"/"+e.Name+" ("+e.Reason+")", mustJSON(t, e))
	}
	for _, list := range []client.ObjectList{&v1beta2.RedisList{}, &v1beta2.RedisClusterList{}, &v1beta2.RedisReplicationList{}, &v1beta2.RedisSentinelList{}} {
		if err := sb.Client.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range items {
			obj := item.(client.Object)
			raw := mustJSON(t, obj)
			var withStatus struct {
				Status json.RawMessage `json:"status"`
			}
			if err := json.Unmarshal(raw, &withStatus); err != nil {
				t.Fatal(err)
			}
			leak(fmt.Sprintf("%T %s/%s status", obj, obj.GetNamespace(), obj.GetName()), withStatus.Status)
		}
	}

	// The operator's log, every container of every operator pod.
	var operators corev1.PodList
	if err := sb.Client.List(ctx, &operators, client.InNamespace("redis-operator-system")); err != nil || len(operators.Items) == 0 {
		t.Fatalf("operator pods: %d, %v", len(operators.Items), err)
	}
	for _, p := range operators.Items {
		for _, c := range p.Spec.Containers {
			logs, err := sb.Logs(ctx, p.Namespace, p.Name, c.Name, false)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(logs, "starting manager") {
				t.Fatalf("the log of %s/%s lacks its start: the log search would find nothing", p.Name, c.Name)
			}
			leak("the operator log ("+p.Name+"/"+c.Name+")", []byte(logs))
		}
	}
}

// pemBody is the second line of a PEM block's base64 body: one whole line (found as such in
// any copy of the file) of the private key itself, past the ASN.1 header every key shares.
func pemBody(t *testing.T, pemBytes []byte) string {
	t.Helper()
	var body []string
	for _, line := range strings.Split(string(pemBytes), "\n") {
		if line != "" && !strings.HasPrefix(line, "-----") {
			body = append(body, line)
		}
	}
	if len(body) < 2 || len(body[1]) < 40 {
		t.Fatal("unexpected PEM shape of the private key")
	}
	return body[1]
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
