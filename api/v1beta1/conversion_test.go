package v1beta1

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/randfill"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// fuzzRounds per kind and direction: enough to set every optional field many times over.
const fuzzRounds = 300

func newFiller(t *testing.T, seed int64) *randfill.Filler {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1beta2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	funcs := fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, func(serializer.CodecFactory) []any {
		return []any{
			// Valid values only: both have unexported state or a type tag that JSON needs.
			func(q *resource.Quantity, c randfill.Continue) {
				*q = *resource.NewQuantity(c.Int63n(1<<40), resource.DecimalSI)
			},
			func(v *intstr.IntOrString, c randfill.Continue) {
				if c.Bool() {
					*v = intstr.FromInt32(c.Int31())
				} else {
					*v = intstr.FromString(c.String(0))
				}
			},
		}
	})
	return fuzzer.FuzzerFor(funcs, rand.NewSource(seed), serializer.NewCodecFactory(scheme)).NilChance(0.3)
}

// roundTrip checks hub → spoke → hub and spoke → hub → spoke for one kind.
func roundTrip[H interface {
	conversion.Hub
	metav1.Object
}, S interface {
	conversion.Convertible
	metav1.Object
}](t *testing.T, newHub func() H, newSpoke func() S) {
	t.Helper()
	f := newFiller(t, 1)
	for i := range fuzzRounds {
		hub := newHub()
		f.Fill(hub)
		normalize(t, hub)
		want := hub.DeepCopyObject()
		spoke := newSpoke()
		if err := spoke.ConvertFrom(hub); err != nil {
			t.Fatalf("round %d: hub to spoke: %v", i, err)
		}
		if !equality.Semantic.DeepEqual(want, hub) {
			t.Fatalf("round %d: converting changed its hub input:\n%s", i, diff.Diff(want, hub))
		}
		back := newHub()
		if err := spoke.ConvertTo(back); err != nil {
			t.Fatalf("round %d: spoke to hub: %v", i, err)
		}
		if !equality.Semantic.DeepEqual(want, back) {
			t.Fatalf("round %d: hub → v1beta1 → hub lost something:\n%s", i, diff.Diff(want, back))
		}
	}
	for i := range fuzzRounds {
		spoke := newSpoke()
		f.Fill(spoke)
		normalize(t, spoke)
		want := spoke.DeepCopyObject()
		hub := newHub()
		if err := spoke.ConvertTo(hub); err != nil {
			t.Fatalf("round %d: spoke to hub: %v", i, err)
		}
		if !equality.Semantic.DeepEqual(want, spoke) {
			t.Fatalf("round %d: converting changed its spoke input:\n%s", i, diff.Diff(want, spoke))
		}
		back := newSpoke()
		if err := back.ConvertFrom(hub); err != nil {
			t.Fatalf("round %d: hub to spoke: %v", i, err)
		}
		if !equality.Semantic.DeepEqual(want, back) {
			t.Fatalf("round %d: v1beta1 → hub → v1beta1 lost something:\n%s", i, diff.Diff(want, back))
		}
	}
}

// normalize gives a filled object the form it has after the API server decoded it: JSON
// cannot tell a pointer to a nil slice from a nil pointer, nor can any client.
func normalize(t *testing.T, obj runtime.Object) {
	t.Helper()
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(obj).Elem()
	v.Set(reflect.Zero(v.Type()))
	if err := json.Unmarshal(raw, obj); err != nil {
		t.Fatal(err)
	}
}

func TestRoundTripRedis(t *testing.T) {
	roundTrip(t, func() *v1beta2.Redis { return &v1beta2.Redis{} }, func() *Redis { return &Redis{} })
}

func TestRoundTripRedisCluster(t *testing.T) {
	roundTrip(t, func() *v1beta2.RedisCluster { return &v1beta2.RedisCluster{} }, func() *RedisCluster { return &RedisCluster{} })
}

func TestRoundTripRedisReplication(t *testing.T) {
	roundTrip(t, func() *v1beta2.RedisReplication { return &v1beta2.RedisReplication{} }, func() *RedisReplication { return &RedisReplication{} })
}

func TestRoundTripRedisSentinel(t *testing.T) {
	roundTrip(t, func() *v1beta2.RedisSentinel { return &v1beta2.RedisSentinel{} }, func() *RedisSentinel { return &RedisSentinel{} })
}
