package kubectlredis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
)

const (
	defaultBackupTimeout = 30 * time.Minute
	// defaultPollInterval is how often the wait for a backup reads it.
	defaultPollInterval = 2 * time.Second
	// maxBackupName keeps a manual backup's name a valid label value, as a schedule's is.
	maxBackupName = 63
)

// backupKinds are the kinds a RedisBackup can target, in the order a bare name is looked up.
func backupKinds() []string {
	return []string{v1alpha1.TargetRedisCluster, v1alpha1.TargetRedisReplication, v1alpha1.TargetRedis}
}

// sentinelError says why a RedisSentinel is not backed up, and what to back up instead.
func sentinelError(name string, s *v1beta2.RedisSentinel) error {
	msg := "a RedisSentinel holds no data and cannot be backed up: back up the RedisReplication its sentinels watch"
	if name != "" {
		msg = "RedisSentinel " + name + " holds no data and cannot be backed up: back up the RedisReplication its sentinels watch"
	}
	if s != nil && s.Spec.RedisSentinelConfig != nil && s.Spec.RedisSentinelConfig.RedisReplicationName != "" {
		msg += " (kubectl redis backup " + s.Spec.RedisSentinelConfig.RedisReplicationName + ")"
	}
	return errors.New(msg)
}

// findBackupTarget gets the resource a backup of name would target: of kind, or of the only
// backup-able kind with that name. A bare name that is only a RedisSentinel's is refused as
// such rather than as not found.
func findBackupTarget(ctx context.Context, c client.Reader, namespace, name, kind string) (*resource, error) {
	candidates := backupKinds()
	if kind != "" {
		k, err := normalizeKind(kind)
		if err != nil {
			return nil, err
		}
		if k == "RedisSentinel" {
			return nil, sentinelError(name, nil)
		}
		candidates = []string{k}
	}
	res, err := findAmong(ctx, c, namespace, name, candidates)
	var nf *notFoundError
	if kind == "" && errors.As(err, &nf) {
		s := &v1beta2.RedisSentinel{}
		if getErr := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); getErr == nil {
			return nil, sentinelError(name, s)
		}
	}
	return res, err
}

// backupAPIError names the missing CRDs when the cluster does not serve the v1alpha1 kinds:
// the RESTMapper finds no such kind, or (a list) the server has no such resource.
func backupAPIError(err error, action string, list bool) error {
	if meta.IsNoMatchError(err) || (list && apierrors.IsNotFound(err)) {
		return fmt.Errorf("%s: the cluster does not serve %s: the operator's v1alpha1 CRDs (redisbackups, redisbackupschedules) are missing; "+
			"install the CRDs of an operator release that has backups: %w", action, v1alpha1.GroupVersion, err)
	}
	return fmt.Errorf("%s: %w", action, err)
}

// BackupItem is one RedisBackup as `kubectl redis backups` shows it.
type BackupItem struct {
	Namespace   string     `json:"namespace"`
	Name        string     `json:"name"`
	TargetKind  string     `json:"targetKind"`
	Target      string     `json:"target"`
	Phase       string     `json:"phase"`
	Bytes       int64      `json:"bytes,omitempty"`
	Size        string     `json:"size,omitempty"`
	Created     time.Time  `json:"created"`
	StartedAt   *time.Time `json:"startedAt,omitempty"`
	CompletedAt *time.Time `json:"completedAt,omitempty"`
	// Duration is from start to end, or to now while Running.
	Duration string `json:"duration,omitempty"`
	// Schedule is the RedisBackupSchedule that owns the backup, empty for one made by hand.
	Schedule string `json:"schedule,omitempty"`
	Location string `json:"location,omitempty"`
	Shards   int    `json:"shards,omitempty"`
	// Reason and Message are the Ready condition's.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Backups prints the RedisBackups that target the resource name (every one of the namespace,
// or of every namespace, without name), newest first. The backups of a resource that is gone
// are still listed: they are what it would be restored from.
func (p Plugin) Backups(ctx context.Context, name, kind string, allNamespaces bool, output string) error {
	var targetKind string
	var gone error
	if kind != "" {
		k, err := normalizeKind(kind)
		if err != nil {
			return err
		}
		targetKind = k
	}
	if name != "" {
		res, err := findBackupTarget(ctx, p.Client, p.Namespace, name, kind)
		var nf *notFoundError
		switch {
		case errors.As(err, &nf):
			gone = err
		case err != nil:
			return err
		default:
			targetKind = res.kind
		}
	}
	var opts []client.ListOption
	if !allNamespaces {
		opts = append(opts, client.InNamespace(p.Namespace))
	}
	var list v1alpha1.RedisBackupList
	if err := p.Client.List(ctx, &list, opts...); err != nil {
		return backupAPIError(err, "list RedisBackups", true)
	}
	items := []BackupItem{}
	for i := range list.Items {
		b := &list.Items[i]
		if (name != "" && b.Spec.Target.Name != name) || (targetKind != "" && b.Spec.Target.Kind != targetKind) {
			continue
		}
		items = append(items, p.backupItem(b))
	}
	if gone != nil && len(items) == 0 {
		return fmt.Errorf("%w, and no RedisBackup targets it", gone)
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if !a.Created.Equal(b.Created) {
			return a.Created.After(b.Created)
		}
		return a.Name > b.Name
	})
	switch output {
	case "json", "yaml":
		return writeDocument(p.Out, map[string]any{"items": items}, output)
	}
	if gone != nil {
		if _, err := fmt.Fprintf(p.Out, "%s (deleted?); its backups:\n", gone); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	return renderBackups(p.Out, items, allNamespaces, name == "")
}

func (p Plugin) backupItem(b *v1alpha1.RedisBackup) BackupItem {
	st := b.Status
	item := BackupItem{Namespace: b.Namespace, Name: b.Name, TargetKind: b.Spec.Target.Kind, Target: b.Spec.Target.Name,
		Phase: string(st.Phase), Bytes: st.TotalBytes, Size: st.Size, Created: b.CreationTimestamp.Time,
		Location: st.Location, Shards: len(st.Shards), Schedule: scheduleOf(b)}
	if st.TotalBytes > 0 {
		item.Size = formatBytes(st.TotalBytes)
	}
	if st.StartedAt != nil {
		t := st.StartedAt.UTC()
		item.StartedAt = &t
	}
	if st.CompletedAt != nil {
		t := st.CompletedAt.UTC()
		item.CompletedAt = &t
	}
	if d, ok := p.backupDuration(b); ok {
		item.Duration = d.String()
	}
	if c := meta.FindStatusCondition(st.Conditions, v1beta2.ConditionReady); c != nil {
		item.Reason, item.Message = c.Reason, c.Message
	}
	return item
}

// backupDuration is from the start to the end, or to now while the backup runs.
func (p Plugin) backupDuration(b *v1alpha1.RedisBackup) (time.Duration, bool) {
	st := b.Status
	switch {
	case st.StartedAt == nil:
		return 0, false
	case st.CompletedAt != nil:
		return st.CompletedAt.Sub(st.StartedAt.Time).Round(time.Second), true
	case !b.Finished():
		return p.now().Sub(st.StartedAt.Time).Round(time.Second), true
	}
	return 0, false
}

// scheduleOf is the RedisBackupSchedule among the backup's owners, "" when none.
func scheduleOf(b *v1alpha1.RedisBackup) string {
	for _, ref := range b.OwnerReferences {
		if ref.Kind == "RedisBackupSchedule" && strings.HasPrefix(ref.APIVersion, v1alpha1.GroupVersion.Group+"/") {
			return ref.Name
		}
	}
	return ""
}

// renderBackups prints the backups as a table; withTarget adds the target's column.
func renderBackups(out io.Writer, items []BackupItem, allNamespaces, withTarget bool) error {
	if len(items) == 0 {
		_, err := fmt.Fprintln(out, "No RedisBackups found.")
		return err
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	var header []string
	if allNamespaces {
		header = append(header, "NAMESPACE")
	}
	header = append(header, "NAME")
	if withTarget {
		header = append(header, "TARGET")
	}
	header = append(header, "PHASE", "SIZE", "STARTED", "DURATION", "SCHEDULE")
	_, _ = fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, it := range items {
		var row []string
		if allNamespaces {
			row = append(row, it.Namespace)
		}
		row = append(row, it.Name)
		if withTarget {
			row = append(row, it.TargetKind+"/"+it.Target)
		}
		started := ""
		if it.StartedAt != nil {
			started = it.StartedAt.Format(time.RFC3339)
		}
		row = append(row, dash(it.Phase), dash(it.Size), dash(started), dash(it.Duration), it.Schedule)
		_, _ = fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// shortDuration is d without its zero trailing units: "30m", not "30m0s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// formatBytes is n in binary units: "512 B", "1.5 MiB".
func formatBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n) / 1024
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, units[i])
}

// BackupOptions are backup's flags.
type BackupOptions struct {
	// FromSchedule and Like name where the storage settings come from; with neither, from
	// the only schedule or the earlier backups of the resource.
	FromSchedule, Like string
	Wait               bool
	Timeout            time.Duration
}

func backupOptions(inv invocation) BackupOptions {
	o := BackupOptions{FromSchedule: inv.value("from-schedule"), Like: inv.value("like"), Wait: inv.enabled("wait"),
		Timeout: defaultBackupTimeout}
	if d, err := time.ParseDuration(inv.value("timeout")); err == nil {
		o.Timeout = d
	}
	return o
}

func checkBackup(inv invocation) error {
	if err := checkBackupKind(inv); err != nil {
		return err
	}
	if inv.set("from-schedule") && inv.set("like") {
		return errors.New("backup takes --from-schedule or --like, not both")
	}
	if !inv.set("timeout") {
		return nil
	}
	if !inv.enabled("wait") {
		return errors.New("--timeout is how long --wait waits: it goes without --wait=false")
	}
	if d, err := time.ParseDuration(inv.value("timeout")); err != nil || d <= 0 {
		return fmt.Errorf("--timeout %q: want a positive duration, \"30m\", \"1h30m\"", inv.value("timeout"))
	}
	return nil
}

func checkBackups(inv invocation) error {
	if err := checkBackupKind(inv); err != nil {
		return err
	}
	if inv.set("all-namespaces") && len(inv.args) > 0 {
		return errors.New("backups NAME looks in one namespace: -A goes without NAME")
	}
	return checkOutput(inv)
}

// checkBackupKind refuses --kind RedisSentinel before any API call.
func checkBackupKind(inv invocation) error {
	if k, err := normalizeKind(inv.value("kind")); err == nil && k == "RedisSentinel" {
		return sentinelError(inv.arg(0), nil)
	}
	return nil
}

// manualBackupName is NAME-manual-<UTC yyyymmddhhmmss>, NAME shortened to keep 63 characters.
func manualBackupName(name string, now time.Time) string {
	suffix := "-manual-" + now.UTC().Format("20060102150405")
	if keep := maxBackupName - len(suffix); len(name) > keep {
		name = strings.TrimRight(name[:keep], "-.")
	}
	return name + suffix
}

// storageSource is the spec a new backup copies its storage and source from, and what it is.
type storageSource struct {
	spec   v1alpha1.RedisBackupSpec
	origin string
}

// Backup creates a RedisBackup of the resource name with the storage of a schedule or of an
// earlier backup, and (opts.Wait) waits for it to end.
func (p Plugin) Backup(ctx context.Context, name, kind string, opts BackupOptions) error {
	res, err := findBackupTarget(ctx, p.Client, p.Namespace, name, kind)
	if err != nil {
		return err
	}
	src, err := p.storageFor(ctx, res, opts)
	if err != nil {
		return err
	}
	b := &v1alpha1.RedisBackup{
		ObjectMeta: metav1.ObjectMeta{Name: manualBackupName(name, p.now()), Namespace: p.Namespace},
		Spec: v1alpha1.RedisBackupSpec{
			Target:  v1alpha1.BackupTarget{Kind: res.kind, Name: name},
			Storage: *src.spec.Storage.DeepCopy(),
			Source:  src.spec.Source,
		},
	}
	if err := p.Client.Create(ctx, b); err != nil {
		return backupAPIError(err, "create RedisBackup "+b.Name, false)
	}
	if _, err := fmt.Fprintf(p.Out, "RedisBackup %s created: %s %s to %s, with the storage of %s.\n",
		b.Name, res.kind, name, storageString(b.Spec.Storage), src.origin); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if !opts.Wait {
		_, err := fmt.Fprintf(p.Out, "It runs in the cluster: kubectl redis backups %s -n %s follows it.\n", name, p.Namespace)
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return nil
	}
	return p.waitForBackup(ctx, b, opts.Timeout)
}

// storageString says where a storage puts the backups.
func storageString(s v1alpha1.BackupStorage) string {
	switch {
	case s.S3 != nil:
		where := "s3://" + s.S3.Bucket
		if p := strings.Trim(s.S3.Prefix, "/"); p != "" {
			where += "/" + p
		}
		return where + " (" + s.S3.Endpoint + ")"
	case s.PersistentVolumeClaim != nil:
		where := "PersistentVolumeClaim " + s.PersistentVolumeClaim.ClaimName
		if s.PersistentVolumeClaim.SubPath != "" {
			where += ", folder " + s.PersistentVolumeClaim.SubPath
		}
		return where
	}
	return "no storage"
}

// storageFor finds the spec whose storage the new backup takes: the schedule or backup the
// options name, else the only schedule targeting the resource, else its earlier backups when
// they agree on one storage.
func (p Plugin) storageFor(ctx context.Context, res *resource, opts BackupOptions) (storageSource, error) {
	ns := p.Namespace
	switch {
	case opts.FromSchedule != "":
		var s v1alpha1.RedisBackupSchedule
		if err := p.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: opts.FromSchedule}, &s); err != nil {
			if apierrors.IsNotFound(err) {
				return storageSource{}, fmt.Errorf("no RedisBackupSchedule %q in namespace %q", opts.FromSchedule, ns)
			}
			return storageSource{}, backupAPIError(err, "get RedisBackupSchedule "+opts.FromSchedule, false)
		}
		return storageSource{spec: s.Spec.BackupTemplate, origin: "RedisBackupSchedule " + s.Name}, nil
	case opts.Like != "":
		var b v1alpha1.RedisBackup
		if err := p.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: opts.Like}, &b); err != nil {
			if apierrors.IsNotFound(err) {
				return storageSource{}, fmt.Errorf("no RedisBackup %q in namespace %q", opts.Like, ns)
			}
			return storageSource{}, backupAPIError(err, "get RedisBackup "+opts.Like, false)
		}
		return storageSource{spec: b.Spec, origin: "RedisBackup " + b.Name}, nil
	}
	var schedules v1alpha1.RedisBackupScheduleList
	if err := p.Client.List(ctx, &schedules, client.InNamespace(ns)); err != nil {
		return storageSource{}, backupAPIError(err, "list RedisBackupSchedules", true)
	}
	var backups v1alpha1.RedisBackupList
	if err := p.Client.List(ctx, &backups, client.InNamespace(ns)); err != nil {
		return storageSource{}, backupAPIError(err, "list RedisBackups", true)
	}
	return inferStorage(v1alpha1.BackupTarget{Kind: res.kind, Name: res.obj.GetName()}, ns, schedules.Items, backups.Items)
}

// inferStorage picks, among the namespace's schedules and backups, the storage of the only
// schedule of target, else that of its earlier backups when they all have the same.
func inferStorage(target v1alpha1.BackupTarget, ns string, schedules []v1alpha1.RedisBackupSchedule, backups []v1alpha1.RedisBackup) (storageSource, error) {
	what := target.Kind + " " + target.Name
	var mine []v1alpha1.RedisBackupSchedule
	for _, s := range schedules {
		if s.Spec.BackupTemplate.Target == target {
			mine = append(mine, s)
		}
	}
	switch {
	case len(mine) == 1:
		return storageSource{spec: mine[0].Spec.BackupTemplate,
			origin: "RedisBackupSchedule " + mine[0].Name + ", the only schedule of " + target.Name}, nil
	case len(mine) > 1:
		return storageSource{}, fmt.Errorf("%d RedisBackupSchedules back up %s (%s): say whose storage to use with --from-schedule SCHEDULE, or --like BACKUP",
			len(mine), what, strings.Join(scheduleNames(mine), ", "))
	}

	var earlier []v1alpha1.RedisBackup
	for _, b := range backups {
		if b.Spec.Target == target {
			earlier = append(earlier, b)
		}
	}
	if len(earlier) == 0 {
		return storageSource{}, noStorageError(what, ns, schedules, backups)
	}
	sort.SliceStable(earlier, func(i, j int) bool {
		return earlier[i].CreationTimestamp.After(earlier[j].CreationTimestamp.Time)
	})
	newest := earlier[0]
	if slices.ContainsFunc(earlier, func(b v1alpha1.RedisBackup) bool {
		return !apiequality.Semantic.DeepEqual(b.Spec.Storage, newest.Spec.Storage)
	}) {
		var where []string
		for _, b := range earlier {
			where = append(where, b.Name+" ("+storageString(b.Spec.Storage)+")")
		}
		return storageSource{}, fmt.Errorf("the earlier backups of %s use different storage: say which to copy with --like BACKUP (%s), or --from-schedule SCHEDULE",
			what, strings.Join(where, ", "))
	}
	origin := "RedisBackup " + newest.Name + ", the only earlier backup of " + target.Name
	if len(earlier) > 1 {
		origin = fmt.Sprintf("RedisBackup %s, the newest of the %d earlier backups of %s (all with that storage)",
			newest.Name, len(earlier), target.Name)
	}
	return storageSource{spec: newest.Spec, origin: origin}, nil
}

// noStorageError says that nothing targets what, and lists the schedules and backups of the
// namespace that --from-schedule or --like could name.
func noStorageError(what, ns string, schedules []v1alpha1.RedisBackupSchedule, backups []v1alpha1.RedisBackup) error {
	msg := fmt.Sprintf("no RedisBackupSchedule or RedisBackup targets %s, so there is no storage to copy: give --from-schedule SCHEDULE or --like BACKUP", what)
	var options []string
	if names := scheduleNames(schedules); len(names) > 0 {
		options = append(options, "schedules: "+strings.Join(names, ", "))
	}
	if len(backups) > 0 {
		var names []string
		for _, b := range backups {
			names = append(names, b.Name)
		}
		options = append(options, "backups: "+strings.Join(names, ", "))
	}
	if len(options) == 0 {
		return errors.New(msg + " (namespace " + ns + " has no RedisBackupSchedule nor RedisBackup)")
	}
	return errors.New(msg + " (in namespace " + ns + ", " + strings.Join(options, "; ") + ")")
}

func scheduleNames(schedules []v1alpha1.RedisBackupSchedule) []string {
	var names []string
	for _, s := range schedules {
		names = append(names, s.Name)
	}
	return names
}

func (p Plugin) pollInterval() time.Duration {
	if p.PollInterval > 0 {
		return p.PollInterval
	}
	return defaultPollInterval
}

// waitForBackup reads the backup every poll interval until it is Completed or Failed,
// printing a line each time its progress changes. Failed and a timeout are errors; the backup
// itself goes on in the cluster whatever the plugin does.
func (p Plugin) waitForBackup(ctx context.Context, b *v1alpha1.RedisBackup, timeout time.Duration) error {
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(p.pollInterval())
	defer ticker.Stop()
	key := client.ObjectKeyFromObject(b)
	start := p.now()
	var last string
	phase := b.Status.Phase
	for {
		cur := &v1alpha1.RedisBackup{}
		err := p.Client.Get(waitCtx, key, cur)
		switch {
		case err != nil && waitCtx.Err() == nil && apierrors.IsNotFound(err):
			return fmt.Errorf("RedisBackup %s was deleted before it ended: %w", b.Name, err)
		case err != nil && waitCtx.Err() == nil:
			return fmt.Errorf("read RedisBackup %s: %w", b.Name, err)
		case err == nil:
			phase = cur.Status.Phase
			if line := progressLine(cur); line != last {
				last = line
				elapsed := p.now().Sub(start).Round(time.Second)
				if _, err := fmt.Fprintf(p.Out, "%8s  %s\n", elapsed, line); err != nil {
					return fmt.Errorf("write: %w", err)
				}
			}
			if cur.Finished() {
				return p.backupResult(cur)
			}
		}
		select {
		case <-waitCtx.Done():
			return p.stoppedWaiting(ctx, b, phase, timeout, waitCtx.Err())
		case <-ticker.C:
		}
	}
}

// stoppedWaiting is the error of a wait cut short: by its timeout, or by the caller.
func (p Plugin) stoppedWaiting(ctx context.Context, b *v1alpha1.RedisBackup, phase v1alpha1.BackupPhase, timeout time.Duration, err error) error {
	follow := fmt.Sprintf("it goes on in the cluster (kubectl redis backups %s -n %s follows it)", b.Spec.Target.Name, b.Namespace)
	if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("RedisBackup %s is still %s after %s: %s: %w", b.Name, phaseName(phase), timeout, follow, err)
	}
	return fmt.Errorf("stopped waiting for RedisBackup %s (%s): %s: %w", b.Name, phaseName(phase), follow, err)
}

func phaseName(phase v1alpha1.BackupPhase) string {
	if phase == "" {
		return "not picked up by the operator"
	}
	return string(phase)
}

// progressLine is what the wait prints of the backup: its phase, its Ready condition's
// message, the bytes stored so far and the shards done.
func progressLine(b *v1alpha1.RedisBackup) string {
	st := b.Status
	if st.Phase == "" {
		return "waiting for the operator to pick the backup up"
	}
	line := string(st.Phase)
	if c := meta.FindStatusCondition(st.Conditions, v1beta2.ConditionReady); c != nil && c.Message != "" && !b.Finished() {
		line += ": " + c.Message
	}
	var progress []string
	if st.TotalBytes > 0 && !b.Finished() {
		progress = append(progress, formatBytes(st.TotalBytes)+" so far")
	}
	if n := len(st.Shards); n > 0 {
		progress = append(progress, plural(n, "shard")+" done")
	}
	if len(progress) > 0 {
		line += " (" + strings.Join(progress, ", ") + ")"
	}
	return line
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// backupResult prints a Completed backup's size, duration and location; a Failed one is an
// error with its condition's message.
func (p Plugin) backupResult(b *v1alpha1.RedisBackup) error {
	if b.Status.Phase == v1alpha1.BackupFailed {
		why := "no reason given"
		if c := meta.FindStatusCondition(b.Status.Conditions, v1beta2.ConditionReady); c != nil && c.Message != "" {
			why = c.Message
		}
		return fmt.Errorf("RedisBackup %s Failed: %s", b.Name, why)
	}
	size := b.Status.Size
	if b.Status.TotalBytes > 0 {
		size = formatBytes(b.Status.TotalBytes)
	}
	msg := fmt.Sprintf("RedisBackup %s Completed: %s", b.Name, dash(size))
	if n := len(b.Status.Shards); n > 1 {
		msg += " in " + plural(n, "shard")
	}
	if d, ok := p.backupDuration(b); ok {
		msg += ", took " + d.String()
	}
	if b.Status.Location != "" {
		msg += ", at " + b.Status.Location
	}
	if _, err := fmt.Fprintln(p.Out, msg+"."); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}
