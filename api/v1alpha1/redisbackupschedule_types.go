package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LabelBackupSchedule names, on a RedisBackup a schedule made, the schedule that made it.
const LabelBackupSchedule = "redis.opstreelabs.in/backup-schedule"

// BackupRetention says which of a schedule's Completed backups are kept; a backup either rule
// keeps stays. With neither set, every backup is kept.
type BackupRetention struct {
	// last keeps the newest Last Completed backups.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Last *int32 `json:"last,omitempty"`
	// within keeps the Completed backups younger than this duration, "168h".
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +optional
	Within string `json:"within,omitempty"`
}

// RedisBackupScheduleSpec takes a RedisBackup of backupTemplate at each time of schedule.
type RedisBackupScheduleSpec struct {
	// schedule is a standard cron expression of five fields (minute hour day-of-month month
	// day-of-week), or a descriptor such as "@daily".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.startsWith('@') || self.trim().split(' ').filter(f, f != '').size() == 5",message="schedule takes five fields: minute hour day-of-month month day-of-week"
	// +required
	Schedule string `json:"schedule"`
	// timeZone is the IANA name of the zone schedule is read in, "Europe/Paris"; UTC when unset.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
	// suspend stops new backups; those taken stay, and retention still applies.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// keep says which Completed backups of the schedule are kept; the others are deleted, with
	// their objects.
	// +optional
	Keep *BackupRetention `json:"keep,omitempty"`
	// backupTemplate is the spec of each RedisBackup the schedule makes.
	// +required
	BackupTemplate RedisBackupSpec `json:"backupTemplate"`
}

// RedisBackupScheduleStatus is what the schedule did last and will do next.
type RedisBackupScheduleStatus struct {
	// lastScheduleTime is the scheduled time of the newest backup made.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// lastSuccessfulBackup is the name of the newest Completed backup of the schedule.
	// +optional
	LastSuccessfulBackup string `json:"lastSuccessfulBackup,omitempty"`
	// nextScheduleTime is when the next backup is due; unset while suspended or invalid.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
	// observedGeneration is the metadata.generation that the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions are Ready (the schedule is valid and runs) and Progressing (a backup of it
	// is under way).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RedisBackupSchedule makes a RedisBackup of its template at each time of a cron schedule, and
// deletes the backups its retention no longer keeps.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=rbs
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="a RedisBackupSchedule's name has 63 characters at most: it labels its backups"
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last Schedule",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="Last Success",type=string,JSONPath=`.status.lastSuccessfulBackup`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RedisBackupSchedule struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec takes a RedisBackup of backupTemplate at each time of schedule.
	// +required
	Spec RedisBackupScheduleSpec `json:"spec"`
	// status is what the schedule did last and will do next.
	// +optional
	Status RedisBackupScheduleStatus `json:"status,omitempty"`
}

// RedisBackupScheduleList is a list of RedisBackupSchedule.
//
// +kubebuilder:object:root=true
type RedisBackupScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RedisBackupSchedule `json:"items"`
}
