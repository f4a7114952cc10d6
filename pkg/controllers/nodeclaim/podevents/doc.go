// Package podevents records on each NodeClaim when a pod was last bound to, or removed from, its node
// (status.lastPodEventTime). The disruption conditions controller measures consolidateAfter from that time.
// Writes closer together than a few seconds are skipped, so busy nodes do not flood the API server.
package podevents
