// Package redis is the operator's typed view of Redis: a parsed topology model of
// CLUSTER NODES, CLUSTER SHARDS and CLUSTER INFO, and a pooled network client whose
// methods are the commands a controller needs. Replies are parsed once here so that
// controllers work with Go values instead of text.
//
// The client deliberately offers no way to wipe a node or its data: an operator that
// can erase a cluster's configuration or keys will eventually do so by mistake.
package redis
