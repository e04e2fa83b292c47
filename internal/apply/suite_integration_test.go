//go:build integration

package apply

import (
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/testenv"
)

// The package's integration tests run against a kube-apiserver and etcd of their own (envtest),
// with the core kinds only: the owners here are ConfigMaps, not the operator's resources.
var (
	restConfig *rest.Config
	testScheme = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	if err := clientgoscheme.AddToScheme(testScheme); err != nil {
		panic(err)
	}
	os.Exit(testenv.Run(m, testenv.New(), &restConfig))
}

// newClient is a client of the test's API server under the field manager name given, "" for
// the one the API server takes from the program's name.
func newClient(t *testing.T, manager string) client.Client {
	t.Helper()
	c, err := client.New(restConfig, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	if manager != "" {
		c = client.WithFieldOwner(c, manager)
	}
	return c
}

// ownerInNamespace makes a namespace of the test's own and a ConfigMap in it to own objects.
func ownerInNamespace(t *testing.T, c client.Client) *corev1.ConfigMap {
	t.Helper()
	ctx := context.Background()
	ns := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
	if err := c.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	return owner
}
