// Package apply writes the objects a custom resource owns (StatefulSets, Services,
// ConfigMaps, Secrets, PodDisruptionBudgets) with server-side apply, and deletes those the
// spec no longer asks for.
//
// Its API is narrow: an Applier, built once by the program and given to the reconcilers,
// writes one object (Applier.Owned); Prune deletes the owned objects left out of a build.
// Every write is made under FieldManager, never adopts an object the owner does not control
// (NotOwnedError), and is skipped when the live object already carries the digest of what
// is wanted (AppliedHashAnnotation). The package knows nothing of the controllers: they
// import it, never the other way round.
package apply
