package apply

import "fmt"

// NotOwnedError is returned when an object with a name we need exists but is not controlled
// by the custom resource: we never adopt what someone else made.
type NotOwnedError struct {
	Kind, Name string
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("%s %s exists and is not owned by this resource; rename or delete it", e.Kind, e.Name)
}

// ImmutableError is returned when the API server refuses a change (a StatefulSet's selector,
// service name or pod management policy): the object has to be recreated, which the operator
// does only when the resource carries the recreate-statefulset annotation.
type ImmutableError struct {
	Kind, Name string
	Err        error
}

func (e *ImmutableError) Error() string {
	return fmt.Sprintf("%s %s cannot be changed in place (%v); set the annotation %s: \"true\" to let the operator recreate it, keeping pods and volumes",
		e.Kind, e.Name, e.Err, RecreateStatefulSetAnnotation)
}

func (e *ImmutableError) Unwrap() error { return e.Err }

// RecreateStatefulSetAnnotation lets the operator delete a StatefulSet, leaving its pods and
// PVCs, and create it anew when a field Kubernetes won't update in place changed. It lives
// here because ImmutableError names it to the user; the controllers act on it.
const RecreateStatefulSetAnnotation = "redis.opstreelabs.in/recreate-statefulset"
