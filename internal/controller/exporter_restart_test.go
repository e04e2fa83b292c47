package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rediskube/redis-operator/internal/builder"
)

const exporterDigest = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func exporterPod(imageID string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "r-0", Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "r", Image: "redis:7"},
			{Name: builder.ExporterContainerName, Image: "quay.io/opstree/redis-exporter:v1.44.0"},
		}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "r", ImageID: "docker.io/library/redis@" + exporterDigest},
			{Name: builder.ExporterContainerName, ImageID: imageID},
		}},
	}
}

// A restart changes the exporter's image alone, to the same image pinned to the digest it
// runs, and the next one puts the template's reference back; the Redis container and the
// pod's labels are untouched.
func TestExporterRestartAlternatesPinnedAndTemplateImage(t *testing.T) {
	ctx := context.Background()
	pod := exporterPod("docker-pullable://quay.io/opstree/redis-exporter@" + exporterDigest)
	c := fake.NewClientBuilder().WithObjects(pod).Build()
	rec := events.NewFakeRecorder(10)
	e := exporterRestart{client: c, recorder: rec}

	for round, want := range []string{"quay.io/opstree/redis-exporter@" + exporterDigest, "quay.io/opstree/redis-exporter:v1.44.0"} {
		var live corev1.Pod
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &live); err != nil {
			t.Fatal(err)
		}
		live.Status = pod.Status // the fake keeps no status apart
		ok, err := e.restart(ctx, pod, &live)
		if err != nil || !ok {
			t.Fatalf("round %d: restarted %v, %v", round, ok, err)
		}
		var got corev1.Pod
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &got); err != nil {
			t.Fatal(err)
		}
		if img := got.Spec.Containers[1].Image; img != want {
			t.Errorf("round %d: exporter image %s, want %s", round, img, want)
		}
		if got.Spec.Containers[0].Image != "redis:7" {
			t.Errorf("round %d: the Redis container changed to %s", round, got.Spec.Containers[0].Image)
		}
		_, pinned := got.Annotations[AnnotationExporterImage]
		if pinned != (round == 0) {
			t.Errorf("round %d: annotations %v", round, got.Annotations)
		}
		if e := <-rec.Events; !strings.Contains(e, "ExporterRestarted") {
			t.Errorf("round %d: event %q", round, e)
		}
	}
}

// Without a digest to pin to, nothing is changed and a Warning tells the user what to do.
func TestExporterRestartWithoutDigestWarns(t *testing.T) {
	pod := exporterPod("sha256:abc")
	c := fake.NewClientBuilder().WithObjects(pod).Build()
	rec := events.NewFakeRecorder(10)
	ok, err := exporterRestart{client: c, recorder: rec}.restart(context.Background(), pod, pod.DeepCopy())
	if err != nil || ok {
		t.Fatalf("restarted %v, %v", ok, err)
	}
	if e := <-rec.Events; !strings.HasPrefix(e, "Warning ExporterNotRestarted") {
		t.Errorf("event %q", e)
	}
}

// A pod without an exporter is left alone.
func TestExporterRestartWithoutExporter(t *testing.T) {
	pod := exporterPod("")
	pod.Spec.Containers = pod.Spec.Containers[:1]
	ok, err := exporterRestart{client: fake.NewClientBuilder().Build(), recorder: events.NewFakeRecorder(1)}.restart(context.Background(), pod, pod)
	if err != nil || ok {
		t.Fatalf("restarted %v, %v", ok, err)
	}
}

// A rotation marks the exporter rather than restarting it (the auth Secret it reads still holds
// the old password then); restartStale, after the objects phase, restarts marked exporters
// alone and takes the mark off, also when it cannot restart one, so that it warns once.
func TestExporterStaleMarkThenRestart(t *testing.T) {
	ctx := context.Background()
	pinned := exporterPod("docker-pullable://quay.io/opstree/redis-exporter@" + exporterDigest)
	noDigest := exporterPod("sha256:abc")
	noDigest.Name = "r-1"
	unmarked := exporterPod("docker-pullable://quay.io/opstree/redis-exporter@" + exporterDigest)
	unmarked.Name = "r-2"
	c := fake.NewClientBuilder().WithObjects(pinned, noDigest, unmarked).Build()
	rec := events.NewFakeRecorder(10)
	e := exporterRestart{client: c, recorder: rec}

	live := func(p *corev1.Pod) corev1.Pod {
		var got corev1.Pod
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), &got); err != nil {
			t.Fatal(err)
		}
		got.Status = p.Status // the fake keeps no status apart
		return got
	}
	for _, p := range []*corev1.Pod{pinned, noDigest} {
		l := live(p)
		if err := e.markStale(ctx, &l); err != nil {
			t.Fatal(err)
		}
		if got := live(p); got.Spec.Containers[1].Image != p.Spec.Containers[1].Image || got.Annotations[AnnotationExporterStale] == "" {
			t.Fatalf("%s after the mark: image %s, annotations %v", p.Name, got.Spec.Containers[1].Image, got.Annotations)
		}
	}
	pods := []corev1.Pod{live(pinned), live(noDigest), live(unmarked)}
	if err := e.restartStale(ctx, pinned, pods); err != nil {
		t.Fatal(err)
	}
	wantImages := map[*corev1.Pod]string{
		pinned:   "quay.io/opstree/redis-exporter@" + exporterDigest,
		noDigest: noDigest.Spec.Containers[1].Image,
		unmarked: unmarked.Spec.Containers[1].Image,
	}
	for p, want := range wantImages {
		got := live(p)
		if got.Spec.Containers[1].Image != want {
			t.Errorf("%s: exporter image %s, want %s", p.Name, got.Spec.Containers[1].Image, want)
		}
		if _, marked := got.Annotations[AnnotationExporterStale]; marked {
			t.Errorf("%s: still marked: %v", p.Name, got.Annotations)
		}
	}
	var got []string
	for len(rec.Events) > 0 {
		got = append(got, strings.Fields(<-rec.Events)[1])
	}
	if strings.Join(got, " ") != "ExporterRestarted ExporterNotRestarted" {
		t.Errorf("events %v", got)
	}
	// Unmarked now, a second pass does nothing.
	if err := e.restartStale(ctx, pinned, []corev1.Pod{live(pinned), live(noDigest)}); err != nil || len(rec.Events) > 0 {
		t.Errorf("second pass: %v, %d events", err, len(rec.Events))
	}
}
