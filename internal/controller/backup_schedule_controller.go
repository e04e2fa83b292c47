package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/backup/schedule"
	"github.com/rediskube/redis-operator/internal/reconcile"
)

// Events and condition reasons of a RedisBackupSchedule.
const (
	ReasonBackupScheduled = "BackupScheduled"
	ReasonBackupPruned    = "BackupPruned"
	// ReasonInvalidSchedule: the cron expression, the time zone or the retention cannot be
	// read; nothing is done until the spec changes.
	ReasonInvalidSchedule = "InvalidSchedule"
	ReasonScheduled       = "Scheduled"
	ReasonSuspended       = "Suspended"
	// Progressing reasons: a backup of the schedule is under way, or none is.
	ReasonBackupInProgress = "BackupInProgress"
	ReasonIdle             = "Idle"
)

// RedisBackupScheduleReconciler makes a RedisBackup of each schedule's template when a run
// is due, one at a time, and deletes those its retention no longer keeps.
type RedisBackupScheduleReconciler struct {
	Client   client.Client
	Scheme   *runtime.Scheme
	Recorder recorder.EventRecorder
	// Clock says what time it is: main gives the real one, tests a fake they move.
	Clock clock.PassiveClock

	// seriesTarget is the target ("kind/name") each schedule's series were last set with, by
	// namespace/name: a schedule whose target changes drops the series of the old one.
	seriesTarget sync.Map
}

// scheduleScope is one reconcile of a RedisBackupSchedule.
type scheduleScope struct {
	schedule *v1alpha1.RedisBackupSchedule
	// before is the schedule as its status was last written.
	before *v1alpha1.RedisBackupSchedule
	now    time.Time
	result ctrl.Result

	parsed schedule.Schedule
	keep   schedule.Keep
	// The backups the schedule owns, and the one not finished yet if any.
	backups []v1alpha1.RedisBackup
	active  *v1alpha1.RedisBackup
}

func (r *RedisBackupScheduleReconciler) phases() []reconcile.Phase[*scheduleScope] {
	return []reconcile.Phase[*scheduleScope]{
		{Name: "validate", Run: r.validate},
		{Name: "backups", Run: r.readBackups},
		{Name: "prune", Run: r.prune},
		{Name: "run", Run: r.runDue},
	}
}

// Reconcile runs the phases in order, then writes the status once.
func (r *RedisBackupScheduleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rbs v1alpha1.RedisBackupSchedule
	if err := r.Client.Get(ctx, req.NamespacedName, &rbs); err != nil {
		if apierrors.IsNotFound(err) {
			r.forgetSeries(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if rbs.DeletionTimestamp != nil {
		r.forgetSeries(rbs.Namespace, rbs.Name)
		return ctrl.Result{}, nil // its backups go with it, through their owner reference
	}
	s := &scheduleScope{schedule: &rbs, before: rbs.DeepCopy(), now: r.Clock.Now().UTC()}
	// What the phases before a failure found (a backup made, another pruned) is written too.
	err := reconcile.Run(ctx, "RedisBackupSchedule", r.phases(), s, reconcileErrors)
	if werr := r.writeStatus(ctx, s); werr != nil || err != nil {
		return ctrl.Result{}, errors.Join(err, werr)
	}
	return s.result, nil
}

// validate reads the cron expression, the time zone and the retention. One that cannot be
// read stops the schedule with InvalidSchedule until the spec changes (a new generation
// brings the schedule back): retrying would fail the same way.
func (r *RedisBackupScheduleReconciler) validate(ctx context.Context, s *scheduleScope) (bool, error) {
	spec := s.schedule.Spec
	parsed, err := schedule.Parse(spec.Schedule, spec.TimeZone)
	if err == nil {
		var keep schedule.Keep
		if spec.Keep != nil {
			keep, err = schedule.ParseKeep(spec.Keep.Last, spec.Keep.Within)
		}
		s.keep = keep
	}
	if err == nil && parsed.Next(s.now).IsZero() {
		err = fmt.Errorf("schedule %q has no time in the next five years", spec.Schedule)
	}
	if err == nil {
		s.parsed = parsed
		return false, nil
	}
	st := &s.schedule.Status
	if old := meta.FindStatusCondition(st.Conditions, v1beta2.ConditionReady); old == nil || old.Reason != ReasonInvalidSchedule ||
		old.Message != err.Error() {
		r.Recorder.Eventf(s.schedule, nil, corev1.EventTypeWarning, ReasonInvalidSchedule, "Schedule", "%s", err.Error())
	}
	st.NextScheduleTime = nil
	r.forgetSeries(s.schedule.Namespace, s.schedule.Name)
	r.condition(s.schedule, v1beta2.ConditionReady, metav1.ConditionFalse, ReasonInvalidSchedule, err.Error())
	r.condition(s.schedule, v1beta2.ConditionProgressing, metav1.ConditionFalse, ReasonInvalidSchedule, "no backup is scheduled")
	log.FromContext(ctx).Info("invalid schedule", "cause", err.Error())
	return true, nil
}

// readBackups lists the backups the schedule controls, finds the one under way and the newest
// Completed one, and the newest scheduled time any of them carries.
func (r *RedisBackupScheduleReconciler) readBackups(ctx context.Context, s *scheduleScope) (bool, error) {
	var list v1alpha1.RedisBackupList
	if err := r.Client.List(ctx, &list, client.InNamespace(s.schedule.Namespace),
		client.MatchingLabels{v1alpha1.LabelBackupSchedule: s.schedule.Name}); err != nil {
		return false, fmt.Errorf("list the RedisBackups of the schedule: %w", err)
	}
	var newestCompleted *v1alpha1.RedisBackup
	for i := range list.Items {
		b := &list.Items[i]
		// The label alone could be anyone's: only what the schedule made is its to delete.
		if !metav1.IsControlledBy(b, s.schedule) {
			continue
		}
		s.backups = append(s.backups, *b)
		if b.DeletionTimestamp == nil && !b.Finished() {
			s.active = b
		}
		if b.Status.Phase == v1alpha1.BackupCompleted && (newestCompleted == nil || s.runTime(b).After(s.runTime(newestCompleted))) {
			newestCompleted = b
		}
		// The status may have been lost (a restore of the API objects): the backups' names
		// still say which runs were made.
		if at, ok := scheduledTime(s.schedule.Name, b.Name); ok {
			if last := s.schedule.Status.LastScheduleTime; last == nil || at.After(last.Time) {
				s.schedule.Status.LastScheduleTime = &metav1.Time{Time: at}
			}
		}
	}
	if newestCompleted != nil {
		s.schedule.Status.LastSuccessfulBackup = newestCompleted.Name
	}
	return false, nil
}

// runTime is the time of the run a backup of the schedule was made for (its name says it), or
// when it was made. Not when it completed: completion times have whole seconds, and backups of
// two runs that complete within one second would tie, the older then taken as the newest.
func (s *scheduleScope) runTime(b *v1alpha1.RedisBackup) time.Time {
	if at, ok := scheduledTime(s.schedule.Name, b.Name); ok {
		return at
	}
	return b.CreationTimestamp.Time
}

// backupName is the name of the run of a schedule at a time: <schedule>-<unix seconds>, so
// that a run made twice (a stale cache) meets AlreadyExists rather than making two backups.
func backupName(scheduleName string, at time.Time) string {
	return scheduleName + "-" + strconv.FormatInt(at.Unix(), 10)
}

// scheduledTime reads the time of a run back from its backup's name.
func scheduledTime(scheduleName, backup string) (time.Time, bool) {
	digits, ok := strings.CutPrefix(backup, scheduleName+"-")
	if !ok {
		return time.Time{}, false
	}
	unix, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || unix <= 0 {
		return time.Time{}, false
	}
	return time.Unix(unix, 0).UTC(), true
}

// prune deletes the backups the retention lets go; their own finalizer deletes their objects.
func (r *RedisBackupScheduleReconciler) prune(ctx context.Context, s *scheduleScope) (bool, error) {
	seen := make([]schedule.Backup, 0, len(s.backups))
	for i := range s.backups {
		b := &s.backups[i]
		if b.DeletionTimestamp != nil {
			continue
		}
		sb := schedule.Backup{Name: b.Name, Created: b.CreationTimestamp.Time}
		switch b.Status.Phase {
		case v1alpha1.BackupCompleted:
			sb.State = schedule.Completed
		case v1alpha1.BackupFailed:
			sb.State = schedule.Failed
		default:
			sb.State = schedule.Active
		}
		if b.Status.CompletedAt != nil {
			sb.Finished = b.Status.CompletedAt.Time
		}
		seen = append(seen, sb)
	}
	doomed := schedule.Prune(seen, s.keep, s.now)
	var failures []error
	for _, name := range doomed {
		i := slices.IndexFunc(s.backups, func(b v1alpha1.RedisBackup) bool { return b.Name == name })
		b := &s.backups[i]
		uid := b.UID
		err := r.Client.Delete(ctx, b, client.Preconditions{UID: &uid})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			failures = append(failures, fmt.Errorf("delete RedisBackup %s: %w", name, err))
			continue
		}
		r.Recorder.Eventf(s.schedule, b, corev1.EventTypeNormal, ReasonBackupPruned, "Prune",
			"deleted RedisBackup %s (%s), which the retention no longer keeps", name, b.Status.Phase)
		log.FromContext(ctx).Info("backup pruned", "backup", name, "phase", b.Status.Phase)
	}
	if s.schedule.Status.LastSuccessfulBackup != "" && slices.Contains(doomed, s.schedule.Status.LastSuccessfulBackup) {
		// keep.within alone let the newest success go: the field must not name a deleted backup.
		s.schedule.Status.LastSuccessfulBackup = ""
	}
	return false, errors.Join(failures...)
}

// runDue makes the backup of the newest run due, unless the schedule is suspended or a
// backup of it is still under way (it is made once that one ends: its end brings the
// schedule back), and comes back at the next run.
func (r *RedisBackupScheduleReconciler) runDue(ctx context.Context, s *scheduleScope) (bool, error) {
	rbs := s.schedule
	st := &rbs.Status
	if rbs.Spec.Suspend {
		st.NextScheduleTime = nil
		r.forgetSeries(rbs.Namespace, rbs.Name)
		r.condition(rbs, v1beta2.ConditionReady, metav1.ConditionTrue, ReasonSuspended, "suspended: no new backup is made")
		r.progressing(s)
		return true, nil
	}
	last := rbs.CreationTimestamp.Time
	if st.LastScheduleTime != nil && st.LastScheduleTime.After(last) {
		last = st.LastScheduleTime.Time
	}
	if due, ok := s.parsed.Due(last, s.now); ok {
		if s.active != nil {
			log.FromContext(ctx).V(1).Info("run due waits", "run", due, "for", s.active.Name)
		} else if err := r.create(ctx, s, due); err != nil {
			return false, err
		}
	}
	next := s.parsed.Next(s.now)
	st.NextScheduleTime = &metav1.Time{Time: next}
	r.observeSeries(rbs, s.parsed.Interval(s.now))
	r.condition(rbs, v1beta2.ConditionReady, metav1.ConditionTrue, ReasonScheduled,
		fmt.Sprintf("next backup at %s", next.Format(time.RFC3339)))
	r.progressing(s)
	after := next.Sub(s.now)
	s.result.RequeueAfter = after
	log.FromContext(ctx).V(1).Info("requeue", "after", after, "reason", "the next run of the schedule")
	return false, nil
}

// create makes the backup of the run at due, owned by the schedule.
func (r *RedisBackupScheduleReconciler) create(ctx context.Context, s *scheduleScope, due time.Time) error {
	rbs := s.schedule
	b := &v1alpha1.RedisBackup{
		ObjectMeta: metav1.ObjectMeta{
			Name: backupName(rbs.Name, due), Namespace: rbs.Namespace,
			Labels: map[string]string{v1alpha1.LabelBackupSchedule: rbs.Name},
		},
		Spec: *rbs.Spec.BackupTemplate.DeepCopy(),
	}
	if err := controllerutil.SetControllerReference(rbs, b, r.Scheme); err != nil {
		return err
	}
	err := r.Client.Create(ctx, b)
	if apierrors.IsAlreadyExists(err) {
		// Made by an earlier reconcile whose status write was lost: the run is made.
		rbs.Status.LastScheduleTime = &metav1.Time{Time: due}
		return nil
	}
	if err != nil {
		return fmt.Errorf("create RedisBackup %s: %w", b.Name, err)
	}
	rbs.Status.LastScheduleTime = &metav1.Time{Time: due}
	s.active = b
	r.Recorder.Eventf(rbs, b, corev1.EventTypeNormal, ReasonBackupScheduled, "Schedule",
		"created RedisBackup %s for the run of %s", b.Name, due.Format(time.RFC3339))
	log.FromContext(ctx).Info("backup scheduled", "backup", b.Name, "run", due)
	return nil
}

// observeSeries sets the schedule's interval and creation time, for the alert on targets whose
// newest backup is older than two intervals; a schedule with no second run has no interval.
func (r *RedisBackupScheduleReconciler) observeSeries(rbs *v1alpha1.RedisBackupSchedule, interval time.Duration) {
	key := rbs.Namespace + "/" + rbs.Name
	target := rbs.Spec.BackupTemplate.Target.Kind + "/" + rbs.Spec.BackupTemplate.Target.Name
	if old, ok := r.seriesTarget.Load(key); ok && old.(string) != target {
		forgetSchedule(rbs.Namespace, rbs.Name)
	}
	if interval <= 0 {
		r.forgetSeries(rbs.Namespace, rbs.Name)
		return
	}
	r.seriesTarget.Store(key, target)
	l := scheduleSeriesLabels(rbs)
	scheduleInterval.With(l).Set(interval.Seconds())
	scheduleCreated.With(l).Set(float64(rbs.CreationTimestamp.Unix()))
}

// forgetSeries drops the series of a schedule that is gone, suspended or invalid.
func (r *RedisBackupScheduleReconciler) forgetSeries(namespace, name string) {
	r.seriesTarget.Delete(namespace + "/" + name)
	forgetSchedule(namespace, name)
}

// progressing says whether a backup of the schedule is under way.
func (r *RedisBackupScheduleReconciler) progressing(s *scheduleScope) {
	if s.active != nil {
		r.condition(s.schedule, v1beta2.ConditionProgressing, metav1.ConditionTrue, ReasonBackupInProgress,
			"RedisBackup "+s.active.Name+" is under way")
		return
	}
	r.condition(s.schedule, v1beta2.ConditionProgressing, metav1.ConditionFalse, ReasonIdle, "no backup is under way")
}

func (r *RedisBackupScheduleReconciler) condition(rbs *v1alpha1.RedisBackupSchedule, kind string, st metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&rbs.Status.Conditions, metav1.Condition{
		Type: kind, Status: st, Reason: reason, Message: message, ObservedGeneration: rbs.Generation,
	})
	rbs.Status.ObservedGeneration = rbs.Generation
}

// writeStatus patches the status from what was read, when it changed.
func (r *RedisBackupScheduleReconciler) writeStatus(ctx context.Context, s *scheduleScope) error {
	if equality.Semantic.DeepEqual(s.before.Status, s.schedule.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, s.schedule, client.MergeFrom(s.before)); err != nil {
		return fmt.Errorf("write the status of RedisBackupSchedule %s: %w", s.schedule.Name, err)
	}
	return nil
}

// SetupWithManager registers the RedisBackupSchedule controller; the end of a backup it owns
// (or its deletion) brings the schedule back.
func (r *RedisBackupScheduleReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		return errors.New("RedisBackupScheduleReconciler has no Clock: give it clock.RealClock{}")
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.RedisBackupSchedule{}).
		Owns(&v1alpha1.RedisBackup{}).
		Named("redisbackupschedule").
		Complete(r)
}
