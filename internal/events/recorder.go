// Package events is how the operator tells what it does and refuses: a recorder that writes
// events.k8s.io Events as a timeline, and the memories that keep a lasting trouble to one
// Warning and a repeated action to one event.
package events

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	eventsclient "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/reference"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// The operator's events are a timeline read with `kubectl describe`: each distinct note is an
// event of its own, and only an exact repeat within eventRepeatWindow is counted on the event it
// repeats (its series). client-go's events.k8s.io recorder instead folds every event of one
// reason about one object within six minutes into the first one's series, keeping the first
// note: a second failover would read as the first, a renewal's later pods would go unnamed.
const (
	eventRepeatWindow = 10 * time.Minute
	// A scale of a large cluster reports a few dozen steps at once; a resource in trouble still
	// gets an event every ten seconds.
	eventBurstPerResource = 100
	eventsPerSecond       = 0.1
	eventQueueLength      = 1024
)

// timelineRecorder writes events.k8s.io/v1 Events in the background, so that a reconcile never
// waits on one.
type timelineRecorder struct {
	events     eventsclient.EventsGetter
	scheme     *runtime.Scheme
	controller string
	instance   string
	queue      chan *eventsv1.Event
	done       chan struct{}

	mu       sync.Mutex
	written  map[string]*eventsv1.Event // exact-repeat key -> the event written for it
	budgets  map[types.UID]*rate.Limiter
	stopOnce sync.Once
}

var _ recorder.EventRecorder = (*timelineRecorder)(nil)

// NewRecorder returns the recorder the reconcilers report with, and the function that stops
// it once what it was given is written.
func NewRecorder(events eventsclient.EventsGetter, scheme *runtime.Scheme, controller string) (recorder.EventRecorder, func()) {
	host, _ := os.Hostname()
	r := &timelineRecorder{
		events: events, scheme: scheme, controller: controller, instance: controller + "-" + host,
		queue: make(chan *eventsv1.Event, eventQueueLength), done: make(chan struct{}),
		written: map[string]*eventsv1.Event{}, budgets: map[types.UID]*rate.Limiter{},
	}
	go r.run()
	return r, r.stop
}

func (r *timelineRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.AnnotatedEventf(regarding, related, nil, eventtype, reason, action, note, args...)
}

func (r *timelineRecorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string,
	eventtype, reason, action, note string, args ...any) {
	ref, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		log.Log.Error(err, "cannot report an event", "reason", reason)
		return
	}
	now := time.Now()
	event := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:        ref.Name + "." + strconv.FormatInt(now.UnixNano(), 16),
			Namespace:   ref.Namespace,
			Annotations: annotations,
		},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *ref,
		Note:                truncateNote(fmt.Sprintf(note, args...)),
		Type:                eventtype,
	}
	if event.Namespace == "" {
		event.Namespace = metav1.NamespaceDefault
	}
	if related != nil {
		if rel, err := reference.GetReference(r.scheme, related); err == nil {
			event.Related = rel
		}
	}
	select {
	case r.queue <- event:
	default:
		log.Log.Info("event dropped: too many waiting to be written", "reason", reason, "regarding", ref.Name)
	}
}

// truncateNote keeps a note within the API's 1 kB limit.
func truncateNote(note string) string {
	const limit = 1024
	if len(note) <= limit {
		return note
	}
	return note[:limit-3] + "..."
}

func (r *timelineRecorder) stop() {
	r.stopOnce.Do(func() { close(r.queue) })
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
	}
}

func (r *timelineRecorder) run() {
	defer close(r.done)
	for event := range r.queue {
		r.write(event)
	}
}

// write creates the event, or counts it on the event it exactly repeats.
func (r *timelineRecorder) write(event *eventsv1.Event) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	logger := log.Log.WithValues("reason", event.Reason, "regarding", event.Regarding.Name, "namespace", event.Namespace)
	key := repeatKey(event)
	r.mu.Lock()
	previous := r.written[key]
	if previous != nil && event.EventTime.Sub(lastSeen(previous)) < eventRepeatWindow {
		series := &eventsv1.EventSeries{Count: 2, LastObservedTime: event.EventTime}
		if previous.Series != nil {
			series.Count = previous.Series.Count + 1
		}
		previous.Series = series
		r.mu.Unlock()
		patch := fmt.Sprintf(`{"series":{"count":%d,"lastObservedTime":%q}}`, series.Count, series.LastObservedTime.Format(metav1.RFC3339Micro))
		if _, err := r.events.Events(previous.Namespace).Patch(ctx, previous.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			logger.V(1).Info("cannot count a repeated event", "error", err.Error())
		}
		return
	}
	if !r.budget(event.Regarding.UID).Allow() {
		r.mu.Unlock()
		logger.Info("event dropped: the resource used its event budget")
		return
	}
	r.forgetOld(event.EventTime.Time)
	r.written[key] = event
	r.mu.Unlock()
	if _, err := r.events.Events(event.Namespace).Create(ctx, event, metav1.CreateOptions{}); err != nil {
		// A terminating namespace refuses new events; nothing to do about it.
		logger.V(1).Info("cannot write an event", "error", err.Error())
	}
}

func (r *timelineRecorder) budget(uid types.UID) *rate.Limiter {
	l := r.budgets[uid]
	if l == nil {
		l = rate.NewLimiter(rate.Limit(eventsPerSecond), eventBurstPerResource)
		r.budgets[uid] = l
	}
	return l
}

// forgetOld drops what can no longer be repeated, so that memory follows the recent events.
func (r *timelineRecorder) forgetOld(now time.Time) {
	if len(r.written) < eventQueueLength {
		return
	}
	for k, e := range r.written {
		if now.Sub(lastSeen(e)) >= eventRepeatWindow {
			delete(r.written, k)
		}
	}
	for uid, l := range r.budgets {
		if l.TokensAt(now) >= eventBurstPerResource {
			delete(r.budgets, uid)
		}
	}
}

func lastSeen(e *eventsv1.Event) time.Time {
	if e.Series != nil {
		return e.Series.LastObservedTime.Time
	}
	return e.EventTime.Time
}

func repeatKey(e *eventsv1.Event) string {
	related := ""
	if e.Related != nil {
		related = string(e.Related.UID) + "/" + e.Related.Name
	}
	return fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s\x00%s", e.Regarding.UID, e.Regarding.Name, related, e.Type, e.Reason, e.Note)
}
