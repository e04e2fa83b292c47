// Package status is what the reconcilers write into a resource's status, as pure values: the
// standard conditions (Ready, Progressing, Degraded) and their reasons, the compatible
// status.state and status.reason derived from them, observedGeneration, and the clocks of
// the waits no Kubernetes event ends. It reads and writes nothing but the values it is given,
// so that its rules are tested without a control plane.
package status
