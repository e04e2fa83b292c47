// Package reconcile is the Reconcile of every kind the operator runs, in the manner of Cluster
// API's thin Reconcile: it knows no kind and no Redis, only the flow.
//
// A reconcile loads the resource (a resource that is gone is forgotten, with no error), makes a
// Scope for it, and runs the kind's phases over that scope in order; each may stop the
// reconcile early, with a reason it has written into the conditions, or fail it. Whichever
// way the phases end, the status is then written once: its observedGeneration claims the
// generation only when every phase ran without error, and it is sent as a patch of the status
// alone, only when it differs from what the API server was last given.
//
// The kinds supply what is theirs through the hooks of Shell: the scope they work on, the
// phases, what is forgotten when a resource goes, the derived fields of the status, what
// follows a write. The phases reach what every kind shares through Scope: the conditions being
// written, the result, and a way to show the status before a long step.
package reconcile
