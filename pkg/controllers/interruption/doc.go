// Package interruption reads the interruption queue (INTERRUPTION_QUEUE) and acts on the NodeClaims the messages
// concern, under each NodePool's policy (pkg/interruption decides; this package gathers state and applies it).
// Messages about instances this cluster does not own are left in the queue for the cluster sharing it.
package interruption
